"""Multi-process (multi-GPU) training under torchrun: DistributedDataParallel for the network,
pytorch-metric-learning's DistributedLossWrapper / DistributedMinerWrapper for the in-batch terms, and the
objective's own parameters (proxies, loss parameters) averaged across ranks by hand.

Every rank draws the same global batch (the samplers use the seeded global NumPy state) and trains on its
contiguous shard. The in-batch pair losses see the whole global batch: PML gathers the other ranks'
embeddings (without gradient) and returns world x the loss, so after DDP's averaging the network's
gradient is that of the global-batch loss. Terms against proxies (CCP eq. 4.11) stay per rank: with the
mean reducer every rank averages the same number of pairs, so the average over ranks is the global mean.
Parameters inside a wrapped loss (Proxy-Anchor's proxies, Margin's beta) see world x the loss on every
rank and are divided by world once more. Every rank runs the same validation, K-center selection and
regulariser on identical weights, so their decisions agree (CCP Alg. 1-2 stay consistent across ranks).
Exact for deterministic miners; random miners draw per rank. PROFS and sample-CCP are refused.
"""

from __future__ import annotations

import logging
import os

import torch
import torch.distributed as dist
from torch.utils.data import Sampler

from pipeline.infra.errors import PipelineError

log = logging.getLogger(__name__)


class DistributedError(PipelineError, RuntimeError):
    """A run that cannot train under DDP (one-line message)."""


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def init_from_env() -> int:
    """Join torchrun's process group (NCCL on CUDA, else gloo); returns this process's rank."""
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        log.info("rank %d of %d (%s)", dist.get_rank(), dist.get_world_size(), backend)
    return dist.get_rank()


class ShardedBatches(Sampler):
    """This rank's contiguous share of every batch of `batches` (a batch sampler drawn identically on all ranks)."""

    def __init__(self, batches, rank_: int, world: int):
        self.batches, self.rank, self.world = batches, rank_, world

    def __iter__(self):
        for batch in self.batches:
            batch = list(batch)
            if len(batch) % self.world:
                raise DistributedError(
                    f"a batch of {len(batch)} cannot be split evenly over {self.world} processes "
                    f"(train.classes_per_batch x train.images_per_class)"
                )
            share = len(batch) // self.world
            yield batch[self.rank * share : (self.rank + 1) * share]

    def __len__(self):
        return len(self.batches)


def average_gradients(params, extra_divisor: set[int] = frozenset()) -> None:
    """Average the gradients of `params` over the ranks; ids in `extra_divisor` are divided by world again."""
    world = world_size()
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)  # every rank must take part in every all_reduce
        dist.all_reduce(p.grad)
        p.grad /= world * (world if id(p) in extra_divisor else 1)
