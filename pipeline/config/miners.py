"""The miners a baseline run combines with its loss (the losses: pipeline/losses); each schema carries its
``name``, the tag that selects it. Defaults follow the Revisiting supplement A.1-A.2 unless a docstring says
otherwise."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from pipeline.infra.schema import section


@section
class NoMinerParams:
    """Every pair / triplet of the batch (the loss's own default)."""

    name: Literal["none"] = "none"


@section
class MultiSimilarityMinerParams:
    """Multi-similarity pair mining (Wang et al. 2019, eq. 3-4; Revisiting eq. 11)."""

    name: Literal["multi_similarity"] = "multi_similarity"
    epsilon: float = Field(0.1, ge=0.0)


@section
class DistanceWeightedMinerParams:
    """Distance-weighted sampling (Wu et al. 2017; Revisiting eq. 23-24): distances clipped at `cutoff`,
    none beyond `nonzero_loss_cutoff` (pytorch-metric-learning)."""

    name: Literal["distance_weighted"] = "distance_weighted"
    cutoff: float = Field(0.5, ge=0.0)
    nonzero_loss_cutoff: float = Field(1.4, gt=0.0)


@section
class RandomMinerParams:
    """Random triplets, one per anchor (Revisiting A.2)."""

    name: Literal["random"] = "random"


@section
class SemihardMinerParams:
    """Semihard triplets (Schroff et al. 2015; Revisiting eq. 20), one per anchor."""

    name: Literal["semihard"] = "semihard"


@section
class SofthardMinerParams:
    """Softhard triplets (Roth & Brattoli 2019; Revisiting eq. 21-22), one per anchor."""

    name: Literal["softhard"] = "softhard"


BaselineMiner = Annotated[
    (
        NoMinerParams
        | MultiSimilarityMinerParams
        | DistanceWeightedMinerParams
        | RandomMinerParams
        | SemihardMinerParams
        | SofthardMinerParams
    ),
    Field(discriminator="name"),
]
TRIPLET_MINERS = ("distance_weighted", "random", "semihard", "softhard")
