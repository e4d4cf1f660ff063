"""The interface between a method and the training loop."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import Sampler


class Objective(nn.Module):
    """A loss on one batch of embeddings, possibly with trainable parameters (proxies).

    ``param_groups`` lists the objective's own parameters with their learning
    rates for the optimiser; the embedding model's parameters use ``train.lr``.
    Outer-loop methods (CCP, PROFS) override the hooks the training loop calls:
    ``begin`` before the first step, ``batch_sampler`` for methods that build their
    own batches (PROFS), ``batch_loss`` at every step, ``end_epoch`` after each
    validation (it decides whether training stops there), ``progress`` for the
    columns it adds to the per-epoch log, and ``finish`` at the end.
    ``diagnostics`` collects rows the train stage writes out (one per sub-problem).
    """

    diagnostics: list[dict]
    supports_distributed = True  # pipeline/batching/distributed.py: False where the method cannot run under DDP
    single_forward = True  # batch_loss calls the network once, on the batch (pipeline/training/cuda_graphs.py)

    def __init__(self, loss: nn.Module, miner: nn.Module | None = None, lr: float | None = None):
        super().__init__()
        self.loss = loss
        self.miner = miner
        self.lr = lr
        self.diagnostics = []
        self._global: tuple | None = None  # (loss, miner) over the global batch under DDP (not registered)

    def forward(
        self,
        embeddings: torch.Tensor,
        labels: torch.Tensor,
        ref_emb: torch.Tensor | None = None,
        ref_labels: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The loss (after the miner, if any); with ref_emb, over (embedding, reference) pairs only.
        Under DDP the in-batch loss (no ref_emb) covers the global batch (pipeline/batching/distributed.py)."""
        if ref_emb is None and self._global is not None:
            loss, miner = self._global
            return loss(embeddings, labels, miner(embeddings, labels) if miner is not None else None)
        refs = {} if ref_emb is None else {"ref_emb": ref_emb, "ref_labels": ref_labels}
        tuples = self.miner(embeddings, labels, **refs) if self.miner is not None else None
        return self.loss(embeddings, labels, tuples, **refs)

    def distribute(self) -> None:
        """Gather in-batch terms across ranks with pytorch-metric-learning's wrappers (torchrun / DDP)."""
        from pytorch_metric_learning.utils.distributed import DistributedLossWrapper, DistributedMinerWrapper

        from pipeline.batching.distributed import DistributedError

        if not self.supports_distributed:
            raise DistributedError(f"{type(self).__name__}: this method does not support multi-process training")
        try:
            loss = DistributedLossWrapper(self.loss)
            miner = DistributedMinerWrapper(self.miner) if self.miner is not None else None
        except TypeError as err:
            raise DistributedError(f"{type(self.loss).__name__}: cannot be gathered across processes ({err})") from err
        self._global = (loss, miner)

    def average_gradients(self) -> None:
        """Average this objective's parameter gradients over the ranks (after backward, under DDP);
        parameters inside the wrapped loss saw world x the loss and are divided once more."""
        from pipeline.batching.distributed import average_gradients

        inner = {id(p) for p in self.loss.parameters()} if self._global is not None else set()
        average_gradients([p for p in self.parameters() if p.requires_grad], inner)

    def begin(self, ctx) -> None:
        """Called once before training (ctx: pipeline.training.loop.TrainContext)."""

    def batch_loss(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The loss minimised at one step."""
        return self(model(x), y)

    def batch_sampler(self, labels, cfg, seed: int) -> Sampler | None:
        """The batches of an epoch (cfg: TrainConfig; seed: the run's batch seed, shared by the runs a
        claim compares); None: the loop's class-balanced default."""
        return None

    def end_epoch(self, ctx, epoch: int, val_map_at_r: float, patience_exhausted: bool) -> bool:
        """Called after each epoch's validation; True stops training. `patience_exhausted`: the shared
        budget rule (train.patience epochs without a better validation MAP@R) allows a stop; a method with
        an outer loop defers it to the end of its sub-problem or projection, and may end training itself."""
        return patience_exhausted

    def progress(self) -> dict:
        """Columns this method adds to the per-epoch log (e.g. the current sub-problem)."""
        return {}

    def finish(self, ctx) -> None:
        """Called once after the last epoch."""

    def param_groups(self) -> list[dict]:
        params = [p for p in self.parameters() if p.requires_grad]
        if not params:
            return []
        if self.lr is None:
            raise ValueError(f"{type(self.loss).__name__} has trainable parameters but no learning rate")
        return [{"params": params, "lr": self.lr}]


def trainable(model: nn.Module) -> list[nn.Parameter]:
    """The network weights an optimiser updates (and a projection regulariser covers)."""
    return [p for p in model.parameters() if p.requires_grad]


def projection_penalty(params: list[torch.Tensor], anchors: list[torch.Tensor], lambda_: float) -> torch.Tensor:
    """lambda/2 * ||theta - theta_prev||^2 (CCP eq. 4.10, PROFS eq. 4.7); gradient lambda (theta - theta_prev)."""
    return 0.5 * lambda_ * sum(((p - a) ** 2).sum() for p, a in zip(params, anchors))
