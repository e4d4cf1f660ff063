"""Baselines: one run = a loss, a miner, a batch sampler, optional rho-regularisation and XBM.

Losses and miners come from pytorch-metric-learning where it has them; the
quadruplet loss, the ANML losses and the Revisiting triplet miners (random,
semihard, softhard) and rho-regularisation are ours (pipeline/losses,
pipeline/miners.py). Euclidean losses see the embeddings the model already
normalised, so they do not normalise again.
"""

from __future__ import annotations

import torch
from pytorch_metric_learning import distances, losses, miners, regularizers

from pipeline.config import BaselineConfig, TrainConfig
from pipeline.losses.anml import DANMLLoss, ImprovedLiftedLoss, ImprovedNPairLoss
from pipeline.losses.pair_losses import AllTripletMarginLoss
from pipeline.losses.quadruplet import QuadrupletLoss
from pipeline.methods.objective import Objective
from pipeline.miners import RhoSwitchMiner, TripletPerAnchorMiner
from pipeline.samplers import ClassBatchSampler, RandomClassBatchSampler


def _euclidean():
    return distances.LpDistance(normalize_embeddings=False, p=2, power=1)


def _embedding_reg(weight: float) -> dict:
    """nu * mean squared norm of the embeddings (Revisiting eq. 3-4), left out when nu = 0."""
    return (
        {"embedding_regularizer": regularizers.LpRegularizer(power=2), "embedding_reg_weight": weight} if weight else {}
    )


def build_loss(cfg, num_classes: int, embedding_dim: int) -> torch.nn.Module:
    """The loss a run's `loss:` mapping names, with its hyperparameters."""
    name = cfg.name
    if name == "contrastive":
        return losses.ContrastiveLoss(pos_margin=cfg.pos_margin, neg_margin=cfg.neg_margin, distance=_euclidean())
    if name == "c1":
        return losses.ContrastiveLoss(pos_margin=1.0, neg_margin=cfg.neg_margin, distance=distances.CosineSimilarity())
    if name == "triplet":
        return AllTripletMarginLoss(margin=cfg.margin, distance=_euclidean())
    if name == "margin":
        return losses.MarginLoss(margin=cfg.margin, beta=cfg.beta, learn_beta=cfg.learn_beta, distance=_euclidean())
    if name == "multi_similarity":
        return losses.MultiSimilarityLoss(alpha=cfg.alpha, beta=cfg.beta, base=cfg.base)
    if name == "lifted":  # Song et al. 2016 eq. 4 (Euclidean, margin a), Revisiting eq. 3's regulariser
        return losses.LiftedStructureLoss(
            neg_margin=cfg.neg_margin, pos_margin=0.0, distance=_euclidean(), **_embedding_reg(cfg.embedding_reg)
        )
    if name == "generalized_lifted":  # Revisiting eq. 3
        return losses.GeneralizedLiftedStructureLoss(
            neg_margin=cfg.neg_margin, pos_margin=0.0, distance=_euclidean(), **_embedding_reg(cfg.embedding_reg)
        )
    if name == "npair":
        return losses.NPairsLoss(**_embedding_reg(cfg.embedding_reg))
    if name == "angular":
        return losses.AngularLoss(alpha=cfg.alpha)
    if name == "arcface":
        return losses.ArcFaceLoss(num_classes, embedding_dim, margin=cfg.margin, scale=cfg.scale)
    if name == "histogram":
        return losses.HistogramLoss(n_bins=cfg.num_bins)
    if name == "proxy_nca":
        return losses.ProxyNCALoss(num_classes, embedding_dim, softmax_scale=cfg.softmax_scale)
    if name == "proxy_anchor":
        return losses.ProxyAnchorLoss(num_classes, embedding_dim, margin=cfg.margin, alpha=cfg.alpha)
    if name == "quadruplet":
        return QuadrupletLoss(cfg.margin1, cfg.margin2)
    if name == "snr":  # Revisiting eq. 15: triplet on the SNR distance + zero-mean regulariser
        return losses.TripletMarginLoss(
            margin=cfg.margin,
            distance=distances.SNRDistance(),
            embedding_regularizer=regularizers.ZeroMeanRegularizer(),
            embedding_reg_weight=cfg.zero_mean_reg,
        )
    if name == "softtriple":  # Revisiting eq. 16-18; tau weighs the centre regulariser (eq. 18, K > 1 only)
        sparse = (
            {
                "weight_regularizer": regularizers.SparseCentersRegularizer(num_classes, cfg.centers_per_class),
                "weight_reg_weight": cfg.tau,
            }
            if cfg.centers_per_class > 1 and cfg.tau > 0
            else {}
        )
        return losses.SoftTripleLoss(
            num_classes,
            embedding_dim,
            centers_per_class=cfg.centers_per_class,
            la=cfg.la,
            gamma=cfg.gamma,
            margin=cfg.margin,
            **sparse,
        )
    if name == "normalized_softmax":
        return losses.NormalizedSoftmaxLoss(num_classes, embedding_dim, temperature=cfg.temperature)
    if name == "danml":
        return DANMLLoss(cfg.gamma1, cfg.gamma2, cfg.lambda1, cfg.lambda1 + cfg.sigma, cfg.outer)
    if name == "anml_lifted":
        return ImprovedLiftedLoss(cfg.gamma1, cfg.gamma2, cfg.lambda1, cfg.lambda2, cfg.margin)
    if name == "anml_npair":
        return ImprovedNPairLoss(cfg.gamma, cfg.lambda_)
    raise ValueError(f"unknown loss {name!r}")


def build_miner(cfg):
    """The miner a run's `miner:` mapping names (None for `none`)."""
    if cfg.name == "none":
        return None
    if cfg.name == "multi_similarity":
        return miners.MultiSimilarityMiner(epsilon=cfg.epsilon)
    if cfg.name == "distance_weighted":
        return miners.DistanceWeightedMiner(cutoff=cfg.cutoff, nonzero_loss_cutoff=cfg.nonzero_loss_cutoff)
    if cfg.name in TripletPerAnchorMiner.RULES:
        return TripletPerAnchorMiner(cfg.name, distance=_euclidean())
    raise ValueError(f"unknown miner {cfg.name!r}")


class BaselineObjective(Objective):
    """A baseline's loss and miner, with its own batch sampler when the run asks for one."""

    def __init__(self, cfg: BaselineConfig, num_classes: int, embedding_dim: int, train: TrainConfig):
        loss, miner = build_loss(cfg.loss, num_classes, embedding_dim), build_miner(cfg.miner)
        if cfg.p_switch > 0:
            miner = RhoSwitchMiner(miner, cfg.p_switch)
        if cfg.xbm_batches:  # XBM: the loss also sees the last xbm_batches batches' embeddings
            batch = train.classes_per_batch * train.images_per_class
            loss = losses.CrossBatchMemory(loss, embedding_dim, memory_size=cfg.xbm_batches * batch, miner=miner)
            miner = None
        super().__init__(loss, miner, lr=cfg.loss_lr)
        self.sampler = cfg.sampler

    def batch_sampler(self, labels, cfg: TrainConfig, seed: int):
        """SPC-k with k other than train.images_per_class, or random-class batches; else the default."""
        batch, k = cfg.classes_per_batch * cfg.images_per_class, self.sampler.images_per_class
        if self.sampler.name == "random_class":
            return RandomClassBatchSampler(labels, batch, cfg.steps_per_epoch, seed)
        if k and (batch % k or batch // k < 2):
            raise ValueError(f"sampler.images_per_class={k} must divide the batch of {batch} into >= 2 classes")
        if k and k != cfg.images_per_class:
            return ClassBatchSampler(labels, batch // k, k, cfg.steps_per_epoch, seed)
        return None
