"""The Revisiting study's triplet miners (supplement A.2) that pytorch-metric-learning lacks: one triplet per
anchor, drawn at random, semihard or softhard (pipeline/miners/modules/tuple_miners.py), on Euclidean distances."""

from __future__ import annotations

from typing import Literal

from pipeline.infra.schema import section
from pipeline.miners import register_miner


def _per_anchor(rule: str):
    from pipeline.losses.modules.pair_losses import euclidean
    from pipeline.miners.modules.tuple_miners import TripletPerAnchorMiner

    return TripletPerAnchorMiner(rule, distance=euclidean())


@section
class RandomMinerParams:
    """Random triplets, one per anchor (Revisiting A.2)."""

    name: Literal["random"] = "random"


@register_miner(RandomMinerParams, triplets=True)
def random_triplets(cfg):
    return _per_anchor("random")


@section
class SemihardMinerParams:
    """Semihard triplets (Schroff et al. 2015; Revisiting eq. 20), one per anchor."""

    name: Literal["semihard"] = "semihard"


@register_miner(SemihardMinerParams, triplets=True)
def semihard(cfg):
    return _per_anchor("semihard")


@section
class SofthardMinerParams:
    """Softhard triplets (Roth & Brattoli 2019; Revisiting eq. 21-22), one per anchor."""

    name: Literal["softhard"] = "softhard"


@register_miner(SofthardMinerParams, triplets=True)
def softhard(cfg):
    return _per_anchor("softhard")
