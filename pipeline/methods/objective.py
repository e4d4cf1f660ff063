"""The interface between a method and the training loop."""

from __future__ import annotations

import torch
from torch import nn


class Objective(nn.Module):
    """A loss on one batch of embeddings, possibly with trainable parameters (proxies).

    ``param_groups`` lists the objective's own parameters with their learning
    rates for the optimiser; the embedding model's parameters use ``train.lr``.
    """

    def __init__(self, loss: nn.Module, miner: nn.Module | None = None, lr: float | None = None):
        super().__init__()
        self.loss = loss
        self.miner = miner
        self.lr = lr

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        tuples = self.miner(embeddings, labels) if self.miner is not None else None
        return self.loss(embeddings, labels, tuples)

    def param_groups(self) -> list[dict]:
        params = [p for p in self.parameters() if p.requires_grad]
        if not params:
            return []
        if self.lr is None:
            raise ValueError(f"{type(self.loss).__name__} has trainable parameters but no learning rate")
        return [{"params": params, "lr": self.lr}]
