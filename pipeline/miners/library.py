"""The miners pytorch-metric-learning implements, as the Revisiting study ran them (supplement A.1-A.2)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.infra.schema import section
from pipeline.miners import register_miner


@section
class NoMinerParams:
    """Every pair / triplet of the batch (the loss's own default)."""

    name: Literal["none"] = "none"


@register_miner(NoMinerParams)
def no_miner(cfg):
    return None


@section
class MultiSimilarityMinerParams:
    """Multi-similarity pair mining (Wang et al. 2019, eq. 3-4; Revisiting eq. 11)."""

    name: Literal["multi_similarity"] = "multi_similarity"
    epsilon: float = Field(0.1, ge=0.0)


@register_miner(MultiSimilarityMinerParams)
def multi_similarity(cfg):
    from pytorch_metric_learning import miners

    return miners.MultiSimilarityMiner(epsilon=cfg.epsilon)


@section
class DistanceWeightedMinerParams:
    """Distance-weighted sampling (Wu et al. 2017; Revisiting eq. 23-24): distances clipped at `cutoff`,
    none beyond `nonzero_loss_cutoff` (pytorch-metric-learning)."""

    name: Literal["distance_weighted"] = "distance_weighted"
    cutoff: float = Field(0.5, ge=0.0)
    nonzero_loss_cutoff: float = Field(1.4, gt=0.0)


@register_miner(DistanceWeightedMinerParams, triplets=True)
def distance_weighted(cfg):
    from pytorch_metric_learning import miners

    return miners.DistanceWeightedMiner(cutoff=cfg.cutoff, nonzero_loss_cutoff=cfg.nonzero_loss_cutoff)
