"""Baselines built from pytorch-metric-learning's losses and miners."""

from __future__ import annotations

from pytorch_metric_learning import losses, miners

from pipeline.config import MultiSimilarityConfig, ProxyAnchorConfig
from pipeline.methods.objective import Objective


def build_multi_similarity(cfg: MultiSimilarityConfig, num_classes: int, embedding_dim: int) -> Objective:
    """MS loss (Wang et al. 2019, eq. 7) with its pair mining (eq. 3-4)."""
    return Objective(
        losses.MultiSimilarityLoss(alpha=cfg.alpha, beta=cfg.beta, base=cfg.base),
        miners.MultiSimilarityMiner(epsilon=cfg.miner_epsilon),
    )


def build_proxy_anchor(cfg: ProxyAnchorConfig, num_classes: int, embedding_dim: int) -> Objective:
    """Proxy-Anchor loss (Kim et al. 2020, eq. 4): one proxy per class, own learning rate."""
    return Objective(
        losses.ProxyAnchorLoss(num_classes, embedding_dim, margin=cfg.margin, alpha=cfg.alpha),
        lr=cfg.proxy_lr,
    )
