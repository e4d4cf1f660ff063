"""The pair and proxy losses and the miners a run combines; each schema carries its ``name``, the tag that
selects it. Defaults follow the Revisiting supplement A.1-A.2 unless a docstring says otherwise."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from pipeline.config.base import section


@section
class ContrastiveLossParams:
    """Contrastive (Hadsell et al. 2006; Revisiting eq. 1): d on positives, [gamma - d]_+ on negatives (Euclidean)."""

    name: Literal["contrastive"] = "contrastive"
    pos_margin: float = Field(0.0, ge=0.0)
    neg_margin: float = Field(1.0, gt=0.0)


@section
class CosineContrastiveLossParams:
    """C1 of CCP/XBM: (1 - s) on positives, (s - neg_margin)_+ on negatives, s the cosine similarity."""

    name: Literal["c1"] = "c1"
    neg_margin: float = Field(0.5, ge=-1.0, le=1.0)


@section
class TripletLossParams:
    """Triplet (Revisiting eq. 2): [d(a,p) - d(a,n) + gamma]_+ (Euclidean)."""

    name: Literal["triplet"] = "triplet"
    margin: float = Field(0.2, ge=0.0)


@section
class MarginLossParams:
    """Margin (Wu et al. 2017; Revisiting eq. 10): boundary beta (learnable, one per class in the paper's
    code; here one shared, learned at the run's loss_lr), margin gamma."""

    name: Literal["margin"] = "margin"
    margin: float = Field(0.2, ge=0.0)
    beta: float = Field(1.2, gt=0.0)
    learn_beta: bool = True


@section
class MultiSimilarityLossParams:
    """Multi-similarity loss (Wang et al. 2019; Revisiting eq. 12)."""

    name: Literal["multi_similarity"] = "multi_similarity"
    alpha: float = Field(2.0, gt=0.0)
    beta: float = Field(40.0, gt=0.0)
    base: float = 0.5


@section
class LiftedLossParams:
    """Lifted structured loss as its authors trained it (Song et al. 2016, eq. 4; ANML Table 3's "Lifted"): per
    positive pair (i, j), [log(sum_{k in N_i} e^{a - D_ik} + sum_{l in N_j} e^{a - D_jl}) + D_ij]_+^2 / 2, Euclidean
    distances D on the non-normalised embeddings (the run's embedding_norm: none), margin a = neg_margin; with the
    embedding regulariser nu (Revisiting eq. 3: nu = 0.005 keeps the norms from growing)."""

    name: Literal["lifted"] = "lifted"
    neg_margin: float = Field(1.0, ge=0.0)
    embedding_reg: float = Field(0.005, ge=0.0)


@section
class GeneralizedLiftedLossParams:
    """Generalised lifted structure (Hermans et al. 2017; Revisiting eq. 3) with embedding regulariser nu."""

    name: Literal["generalized_lifted"] = "generalized_lifted"
    neg_margin: float = 1.0
    embedding_reg: float = Field(0.005, ge=0.0)


@section
class NPairLossParams:
    """N-pair (Sohn 2016; Revisiting eq. 4, ANML eq. 30): dot products of the non-normalised embeddings (the run's
    embedding_norm: none; Sohn saw slow convergence when normalised) with the embedding regulariser nu (0.005)."""

    name: Literal["npair"] = "npair"
    embedding_reg: float = Field(0.005, ge=0.0)


@section
class AngularLossParams:
    """Angular loss (Wang et al. 2017; Revisiting eq. 5), alpha in degrees (pi/4 = 45)."""

    name: Literal["angular"] = "angular"
    alpha: float = Field(45.0, gt=0.0, lt=90.0)


@section
class ArcFaceLossParams:
    """ArcFace (Deng et al. 2018; Revisiting eq. 6): additive angular margin in degrees (0.5 rad = 28.6), scale s."""

    name: Literal["arcface"] = "arcface"
    margin: float = Field(28.6, ge=0.0, lt=90.0)
    scale: float = Field(16.0, gt=0.0)


@section
class HistogramLossParams:
    """Histogram loss (Ustinova & Lempitsky 2016; Revisiting eq. 7-9), R bins (65 for CUB/Cars, 11 for SOP)."""

    name: Literal["histogram"] = "histogram"
    num_bins: int = Field(65, ge=2)


@section
class ProxyNCALossParams:
    """ProxyNCA (Revisiting eq. 13) and ProxyNCA++ (Teh et al. 2020: softmax_scale = 1/T, fast proxies)."""

    name: Literal["proxy_nca"] = "proxy_nca"
    softmax_scale: float = Field(1.0, gt=0.0)


@section
class ProxyAnchorLossParams:
    """Proxy-Anchor loss (Kim et al. 2020, eq. 4): one proxy per class."""

    name: Literal["proxy_anchor"] = "proxy_anchor"
    margin: float = Field(0.1, ge=0.0)
    alpha: float = Field(32.0, gt=0.0)


@section
class QuadrupletLossParams:
    """Quadruplet loss (Chen et al. 2017; Revisiting eq. 14), margins gamma1 and gamma2 (Euclidean)."""

    name: Literal["quadruplet"] = "quadruplet"
    margin1: float = Field(1.0, ge=0.0)
    margin2: float = Field(0.5, ge=0.0)


@section
class SNRLossParams:
    """SNR triplet loss (Yuan et al. 2019; Revisiting eq. 15): triplet on the SNR distance + zero-mean regulariser."""

    name: Literal["snr"] = "snr"
    margin: float = Field(0.2, ge=0.0)
    zero_mean_reg: float = Field(0.005, ge=0.0)


@section
class SoftTripleLossParams:
    """SoftTriple (Qian et al. 2019; Revisiting eq. 16-18): centres per class K ("-S": 1, "-L": several)."""

    name: Literal["softtriple"] = "softtriple"
    centers_per_class: int = Field(2, ge=1)
    la: float = Field(8.0, gt=0.0)
    gamma: float = Field(0.1, gt=0.0)
    margin: float = Field(0.01, ge=0.0)
    tau: float = Field(0.2, ge=0.0)


@section
class NormalizedSoftmaxLossParams:
    """Normalised softmax (Zhai & Wu 2018; Revisiting eq. 19), temperature T."""

    name: Literal["normalized_softmax"] = "normalized_softmax"
    temperature: float = Field(0.05, gt=0.0)


@section
class DANMLLossParams:
    """DANML (ANML eq. 22); used with the multi-similarity miner, as the paper trains it.

    Defaults: the middle of the paper's search ranges (gamma1 in {-1,-2,-3}, gamma2 in {25,30,35},
    lambda1 in {0.5,...,0.65}, lambda2 = lambda1 + sigma with sigma in {0.01,0.02,0.03}).
    """

    name: Literal["danml"] = "danml"
    gamma1: float = Field(-2.0, lt=0.0)
    gamma2: float = Field(30.0, gt=0.0)
    lambda1: float = Field(0.55, ge=0.0, le=2.0)
    sigma: float = Field(0.02, ge=0.0)
    outer: Literal["logistic", "linear"] = "logistic"


@section
class ImprovedLiftedLossParams:
    """ANML eq. 25. The paper gives no values for Table 3; these defaults are ours (soft min/max at
    gamma 10, radii lambda1 for positives and lambda2 for negatives on cosine similarity)."""

    name: Literal["anml_lifted"] = "anml_lifted"
    gamma1: float = Field(10.0, gt=0.0)
    gamma2: float = Field(10.0, gt=0.0)
    lambda1: float = Field(0.8, ge=-1.0, le=1.0)
    lambda2: float = Field(0.3, ge=-1.0, le=1.0)
    margin: float = 0.1


@section
class ImprovedNPairLossParams:
    """ANML eq. 31. gamma and lambda are not given for Table 3; these defaults are ours."""

    name: Literal["anml_npair"] = "anml_npair"
    gamma: float = Field(2.0, gt=0.0)
    lambda_: float = Field(0.1, ge=0.0)


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


BaselineLoss = Annotated[
    (
        ContrastiveLossParams
        | CosineContrastiveLossParams
        | TripletLossParams
        | MarginLossParams
        | MultiSimilarityLossParams
        | LiftedLossParams
        | GeneralizedLiftedLossParams
        | NPairLossParams
        | AngularLossParams
        | ArcFaceLossParams
        | HistogramLossParams
        | ProxyNCALossParams
        | ProxyAnchorLossParams
        | QuadrupletLossParams
        | SNRLossParams
        | SoftTripleLossParams
        | NormalizedSoftmaxLossParams
        | DANMLLossParams
        | ImprovedLiftedLossParams
        | ImprovedNPairLossParams
    ),
    Field(discriminator="name"),
]
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
# losses pytorch-metric-learning's CrossBatchMemory can wrap
XBM_LOSSES = ("contrastive", "c1", "triplet", "margin", "multi_similarity", "generalized_lifted", "angular", "snr")
