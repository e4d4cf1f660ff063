"""The trained model: optional backbone, embedding head, embedding normalisation."""

from __future__ import annotations

import torch
from torch import nn


def normalize_embeddings(x: torch.Tensor, kind: str) -> torch.Tensor:
    """``l2``: x/||x||; ``lipschitz``: x/||x|| only when ||x|| >= 1 (CCP section 4.4); ``none``: identity.

    The Lipschitz transform is the identity inside the unit ball and the L2
    projection outside it, so it is continuous (CCP Lemma 4.4) and idempotent.
    """
    if kind == "lipschitz":
        return x / x.norm(dim=1, keepdim=True).clamp(min=1.0)
    if kind == "l2":
        return nn.functional.normalize(x, dim=1)
    if kind == "none":
        return x
    raise ValueError(f"unknown embedding normalisation {kind!r}")


def build_head(in_dim: int, out_dim: int, hidden: int) -> nn.Module:
    """Linear embedder (MLRC: Linear(1024 -> 128)); with `hidden` > 0 a two-layer MLP."""
    if hidden == 0:
        return nn.Linear(in_dim, out_dim)
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, out_dim))


class Embedder(nn.Module):
    """backbone (None in frozen mode: the inputs are cached features) -> head -> normalisation: `norm` in train
    mode, `eval_norm` ("same": `norm`) in eval mode (validation, test, the methods' own embedding passes).

    With `freeze_bn` the backbone's BatchNorm layers stay in eval mode (running statistics, MLRC and CCP)
    whatever mode the model is put in; their affine parameters are frozen by build_backbone.
    """

    def __init__(
        self, backbone: nn.Module | None, head: nn.Module, norm: str, freeze_bn: bool = False, eval_norm: str = "same"
    ):
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.norm = norm
        self.eval_norm = norm if eval_norm == "same" else eval_norm
        self.freeze_bn = freeze_bn

    def train(self, mode: bool = True):
        super().train(mode)
        if self.freeze_bn and self.backbone is not None:
            for m in self.backbone.modules():
                if isinstance(m, nn.modules.batchnorm._BatchNorm):
                    m.eval()
        return self

    def head_output(self, x: torch.Tensor) -> torch.Tensor:
        """The embedding before normalisation (raw head output; CCP's release runs K-center on it)."""
        if self.backbone is not None:
            x = self.backbone(x)
        return self.head(x.flatten(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return normalize_embeddings(self.head_output(x), self.norm if self.training else self.eval_norm)


def run_embedder(setup, backbone: nn.Module | None, in_dim: int) -> Embedder:
    """The network run `setup` (pipeline/runs.py RunSetup) trains: `backbone` (None: cached features), a
    head from `in_dim` to train.embedding_dim, the run's normalisations (a baseline's eval_norm is its own choice;
    CCP and PROFS evaluate what they train on)."""
    head = build_head(in_dim, setup.train.embedding_dim, setup.train.head_hidden)
    eval_norm = getattr(setup.method, "eval_norm", "same")
    return Embedder(backbone, head, setup.method.embedding_norm, setup.backbone.freeze_bn, eval_norm)
