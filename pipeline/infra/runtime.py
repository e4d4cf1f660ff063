"""Seeding and device choice (torch is imported only where needed, so derive_seed stays cheap)."""

from __future__ import annotations

import logging
import os
import random
import zlib
from typing import TYPE_CHECKING

import numpy as np

from pipeline.infra.errors import PipelineError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)


def derive_seed(seed: int, *names) -> int:
    """A stable 31-bit seed from the global seed and names (e.g. method, fold)."""
    text = ":".join([str(seed), *map(str, names)])
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def seed_everything(seed: int, device: torch.device | None = None) -> None:
    """Seed Python, NumPy's global state (pytorch-metric-learning's samplers use it) and torch.

    On CUDA also ask for deterministic kernels. On the CPU the kernels this project uses are
    deterministic already, and the switch would cost every stage about 2 s (it imports torch._inductor).
    """
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if device is not None and device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)


def launched_by_torchrun() -> bool:
    """True in a process torchrun started with more than one process (pipeline/batching/distributed.py)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


# ``train.workers: auto`` on a GPU: models of a run trained at once on it (benchmarks/bench_finetune.py)
MODELS_PER_GPU = 4


def choose_device(name: str, mode: str) -> torch.device:
    """Where `mode`'s network runs. ``auto``: CUDA for a backbone (``finetune`` training, the embed stage's
    ``backbone`` pass) when a GPU is present, else the CPU; a ``frozen`` head on cached features always on the
    CPU, where it is faster (a 64-D head is launch-bound on a GPU: about 11 ms a step on an H100 against 1 ms on
    one CPU core) and its numbers are the pinned CPU ones on every machine. Under torchrun: the GPU of this
    process (LOCAL_RANK)."""
    import torch

    if name == "cuda" and not torch.cuda.is_available():
        raise PipelineError("train.device: cuda requested but no CUDA device is available (use auto or cpu)")
    if name == "auto":
        name = "cuda" if mode != "frozen" and torch.cuda.is_available() else "cpu"
    device = torch.device(name, int(os.environ.get("LOCAL_RANK", "0"))) if name == "cuda" else torch.device(name)
    log.debug("device: %s (%s)", device, mode)
    return device


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask: a container's or a job's share, not the machine's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def train_workers(cfg) -> int:
    """``train.workers`` (cfg: TrainConfig) as a number of processes; ``auto`` asks where the models train."""
    if cfg.workers != "auto":
        return cfg.workers
    on_gpu = cfg.mode != "frozen" and cfg.device != "cpu" and _cuda_available()
    return worker_count("auto", cfg.threads_per_worker, on_gpu)


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def worker_count(workers: int | str, threads: int = 1, on_gpu: bool = False) -> int:
    """Processes for a stage's independent jobs: an explicit number, or ``auto``: one per `threads` usable cores
    (MODELS_PER_GPU models when they train on a GPU). No number changes a result: every job seeds itself and
    runs on `threads` threads wherever it runs (pipeline/infra/parallel.py)."""
    if workers != "auto":
        return int(workers)
    return MODELS_PER_GPU if on_gpu else max(1, usable_cores() // threads)
