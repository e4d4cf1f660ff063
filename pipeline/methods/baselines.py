"""Baselines built from pytorch-metric-learning's losses and miners."""

from __future__ import annotations

from pytorch_metric_learning import distances, losses, miners, reducers

from pipeline.config import (DANMLConfig, ImprovedLiftedConfig, ImprovedNPairConfig, LiftedConfig,
                             MultiSimilarityConfig, NPairConfig, ProxyAnchorConfig)
from pipeline.losses.anml import DANMLLoss, ImprovedLiftedLoss, ImprovedNPairLoss
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


def build_danml(cfg: DANMLConfig, num_classes: int, embedding_dim: int) -> Objective:
    """DANML (ANML eq. 22) with multi-similarity pair mining, as the paper trains it."""
    return Objective(
        DANMLLoss(cfg.gamma1, cfg.gamma2, cfg.lambda1, cfg.lambda1 + cfg.sigma, cfg.outer),
        miners.MultiSimilarityMiner(epsilon=cfg.miner_epsilon),
    )


def build_lifted(cfg: LiftedConfig, num_classes: int, embedding_dim: int) -> Objective:
    """Lifted structure (ANML eq. 23) = GeneralizedLiftedStructureLoss on cosine similarity."""
    return Objective(losses.GeneralizedLiftedStructureLoss(neg_margin=-cfg.margin, pos_margin=0.0,
                                                           distance=distances.CosineSimilarity(),
                                                           reducer=reducers.MeanReducer()))


def build_anml_lifted(cfg: ImprovedLiftedConfig, num_classes: int, embedding_dim: int) -> Objective:
    return Objective(ImprovedLiftedLoss(cfg.gamma1, cfg.gamma2, cfg.lambda1, cfg.lambda2, cfg.margin))


def build_npair(cfg: NPairConfig, num_classes: int, embedding_dim: int) -> Objective:
    return Objective(losses.NPairsLoss())


def build_anml_npair(cfg: ImprovedNPairConfig, num_classes: int, embedding_dim: int) -> Objective:
    return Objective(ImprovedNPairLoss(cfg.gamma, cfg.lambda_))
