"""The losses of the Revisiting study (supplement eq. 1-19), Proxy-Anchor, and Lifted / N-pair as their authors
trained them, as pytorch-metric-learning implements them. Defaults follow the Revisiting supplement A.1-A.2
unless a docstring says otherwise. Losses see the embeddings the model already normalised, so the Euclidean ones
do not normalise again."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.infra.schema import section
from pipeline.losses import register_loss


def _embedding_reg(weight: float) -> dict:
    """nu * mean squared norm of the embeddings (Revisiting eq. 3-4), left out when nu = 0."""
    from pytorch_metric_learning import regularizers

    return (
        {"embedding_regularizer": regularizers.LpRegularizer(power=2), "embedding_reg_weight": weight} if weight else {}
    )


@section
class ContrastiveLossParams:
    """Contrastive (Hadsell et al. 2006; Revisiting eq. 1): d on positives, [gamma - d]_+ on negatives (Euclidean)."""

    name: Literal["contrastive"] = "contrastive"
    # embeddings in the unit ball (the run's embedding_norm l2 or lipschitz) lie at most 2 apart: from a margin of 2
    # no positive pair costs anything, and every negative pair's hinge has the same gradient, so 2 is each margin's
    # own limit there (pipeline/studies/tuning.py key_limits)
    pos_margin: float = Field(0.0, ge=0.0, json_schema_extra={"le_in_unit_ball": 2.0})
    neg_margin: float = Field(1.0, gt=0.0, json_schema_extra={"le_in_unit_ball": 2.0})


@register_loss(ContrastiveLossParams, xbm=True)
def contrastive(cfg, ctx):
    """The library reduces the positive and the negative terms apart (by default each over its non-zero terms)."""
    from pytorch_metric_learning import losses, reducers

    from pipeline.losses.modules.pair_losses import euclidean, reducer_kwargs

    return losses.ContrastiveLoss(
        pos_margin=cfg.pos_margin,
        neg_margin=cfg.neg_margin,
        distance=euclidean(),
        **reducer_kwargs(ctx.reducer, reducers.AvgNonZeroReducer),
    )


@section
class TripletLossParams:
    """Triplet (Revisiting eq. 2): [d(a,p) - d(a,n) + gamma]_+ on Euclidean distances, or on squared ones with
    `squared` (FaceNet; PROFS eq. 3.3), every triplet of the batch unless a miner picks them; CCP's reductions
    (release: mean over the non-zero terms) apply."""

    name: Literal["triplet"] = "triplet"
    margin: float = Field(0.2, ge=0.0)
    squared: bool = False


@register_loss(TripletLossParams, xbm=True)
def triplet(cfg, ctx):
    from pytorch_metric_learning import reducers

    from pipeline.losses.modules.pair_losses import AllTripletMarginLoss, euclidean, reducer_kwargs

    return AllTripletMarginLoss(
        margin=cfg.margin,
        distance=euclidean(power=2 if cfg.squared else 1),
        **reducer_kwargs(ctx.reducer, reducers.AvgNonZeroReducer),
    )


@section
class MarginLossParams:
    """Margin (Wu et al. 2017; Revisiting eq. 10): boundary beta (learnable, one per class in the paper's
    code; here one shared, learned at the run's loss_lr), margin gamma."""

    name: Literal["margin"] = "margin"
    margin: float = Field(0.2, ge=0.0)
    beta: float = Field(1.2, gt=0.0)
    learn_beta: bool = True


@register_loss(MarginLossParams, xbm=True)
def margin(cfg, ctx):
    from pytorch_metric_learning import losses

    from pipeline.losses.modules.pair_losses import euclidean

    return losses.MarginLoss(margin=cfg.margin, beta=cfg.beta, learn_beta=cfg.learn_beta, distance=euclidean())


@section
class MultiSimilarityLossParams:
    """Multi-similarity loss (Wang et al. 2019, eq. 7; Revisiting eq. 12), all pairs unless a miner picks them;
    CCP's similarity and reductions (release: mean over anchors) apply."""

    name: Literal["multi_similarity"] = "multi_similarity"
    alpha: float = Field(2.0, gt=0.0)
    beta: float = Field(40.0, gt=0.0)
    base: float = 0.5


@register_loss(MultiSimilarityLossParams, xbm=True)
def multi_similarity(cfg, ctx):
    from pytorch_metric_learning import losses, reducers

    from pipeline.losses.modules.pair_losses import reducer_kwargs, similarity

    return losses.MultiSimilarityLoss(
        alpha=cfg.alpha,
        beta=cfg.beta,
        base=cfg.base,
        distance=similarity(ctx.similarity),
        **reducer_kwargs(ctx.reducer, reducers.MeanReducer),
    )


@section
class LiftedLossParams:
    """Lifted structured loss as its authors trained it (Song et al. 2016, eq. 4; ANML Table 3's "Lifted"): per
    positive pair (i, j), [log(sum_{k in N_i} e^{a - D_ik} + sum_{l in N_j} e^{a - D_jl}) + D_ij]_+^2 / 2, Euclidean
    distances D on the non-normalised embeddings (the run's embedding_norm: none), margin a = neg_margin; with the
    embedding regulariser nu (Revisiting eq. 3: nu = 0.005 keeps the norms from growing)."""

    name: Literal["lifted"] = "lifted"
    neg_margin: float = Field(1.0, ge=0.0)
    embedding_reg: float = Field(0.005, ge=0.0)


@register_loss(LiftedLossParams)
def lifted(cfg, ctx):
    from pytorch_metric_learning import losses

    from pipeline.losses.modules.pair_losses import euclidean

    return losses.LiftedStructureLoss(
        neg_margin=cfg.neg_margin, pos_margin=0.0, distance=euclidean(), **_embedding_reg(cfg.embedding_reg)
    )


@section
class GeneralizedLiftedLossParams:
    """Generalised lifted structure (Hermans et al. 2017; Revisiting eq. 3) with embedding regulariser nu."""

    name: Literal["generalized_lifted"] = "generalized_lifted"
    neg_margin: float = 1.0
    embedding_reg: float = Field(0.005, ge=0.0)


@register_loss(GeneralizedLiftedLossParams, xbm=True)
def generalized_lifted(cfg, ctx):
    from pytorch_metric_learning import losses

    from pipeline.losses.modules.pair_losses import euclidean

    return losses.GeneralizedLiftedStructureLoss(
        neg_margin=cfg.neg_margin, pos_margin=0.0, distance=euclidean(), **_embedding_reg(cfg.embedding_reg)
    )


@section
class NPairLossParams:
    """N-pair (Sohn 2016; Revisiting eq. 4, ANML eq. 30): dot products of the non-normalised embeddings (the run's
    embedding_norm: none; Sohn saw slow convergence when normalised) with the embedding regulariser nu (0.005)."""

    name: Literal["npair"] = "npair"
    embedding_reg: float = Field(0.005, ge=0.0)


@register_loss(NPairLossParams)
def npair(cfg, ctx):
    from pytorch_metric_learning import losses

    from pipeline.losses.modules.pair_losses import similarity

    # Sohn eq. 3 / Revisiting eq. 4: f_i . f_j+ unnormalised (the library's default distance L2-normalises)
    return losses.NPairsLoss(distance=similarity("dot"), **_embedding_reg(cfg.embedding_reg))


@section
class AngularLossParams:
    """Angular loss (Wang et al. 2017; Revisiting eq. 5), alpha in degrees (pi/4 = 45)."""

    name: Literal["angular"] = "angular"
    alpha: float = Field(45.0, gt=0.0, lt=90.0)


@register_loss(AngularLossParams, xbm=True)
def angular(cfg, ctx):
    from pytorch_metric_learning import losses

    return losses.AngularLoss(alpha=cfg.alpha)


@section
class ArcFaceLossParams:
    """ArcFace (Deng et al. 2018; Revisiting eq. 6): additive angular margin in degrees (0.5 rad = 28.6), scale s."""

    name: Literal["arcface"] = "arcface"
    margin: float = Field(28.6, ge=0.0, lt=90.0)
    scale: float = Field(16.0, gt=0.0)


@register_loss(ArcFaceLossParams)
def arcface(cfg, ctx):
    from pytorch_metric_learning import losses

    return losses.ArcFaceLoss(ctx.num_classes, ctx.embedding_dim, margin=cfg.margin, scale=cfg.scale)


@section
class HistogramLossParams:
    """Histogram loss (Ustinova & Lempitsky 2016; Revisiting eq. 7-9), R bins (65 for CUB/Cars, 11 for SOP)."""

    name: Literal["histogram"] = "histogram"
    num_bins: int = Field(65, ge=2)


@register_loss(HistogramLossParams)
def histogram(cfg, ctx):
    from pytorch_metric_learning import losses

    return losses.HistogramLoss(n_bins=cfg.num_bins)


@section
class ProxyNCALossParams:
    """ProxyNCA (Revisiting eq. 13) and ProxyNCA++ (Teh et al. 2020: softmax_scale = 1/T, fast proxies)."""

    name: Literal["proxy_nca"] = "proxy_nca"
    softmax_scale: float = Field(1.0, gt=0.0)


@register_loss(ProxyNCALossParams)
def proxy_nca(cfg, ctx):
    from pytorch_metric_learning import losses

    return losses.ProxyNCALoss(ctx.num_classes, ctx.embedding_dim, softmax_scale=cfg.softmax_scale)


@section
class ProxyAnchorLossParams:
    """Proxy-Anchor loss (Kim et al. 2020, eq. 4): one proxy per class."""

    name: Literal["proxy_anchor"] = "proxy_anchor"
    margin: float = Field(0.1, ge=0.0)
    alpha: float = Field(32.0, gt=0.0)


@register_loss(ProxyAnchorLossParams)
def proxy_anchor(cfg, ctx):
    from pytorch_metric_learning import losses

    return losses.ProxyAnchorLoss(ctx.num_classes, ctx.embedding_dim, margin=cfg.margin, alpha=cfg.alpha)


@section
class SNRLossParams:
    """SNR triplet loss (Yuan et al. 2019; Revisiting eq. 15): triplet on the SNR distance + zero-mean regulariser."""

    name: Literal["snr"] = "snr"
    margin: float = Field(0.2, ge=0.0)
    zero_mean_reg: float = Field(0.005, ge=0.0)


@register_loss(SNRLossParams, xbm=True)
def snr(cfg, ctx):
    from pytorch_metric_learning import distances, losses, regularizers

    return losses.TripletMarginLoss(
        margin=cfg.margin,
        distance=distances.SNRDistance(),
        embedding_regularizer=regularizers.ZeroMeanRegularizer(),
        embedding_reg_weight=cfg.zero_mean_reg,
    )


@section
class SoftTripleLossParams:
    """SoftTriple (Qian et al. 2019; Revisiting eq. 16-18): centres per class K ("-S": 1, "-L": several)."""

    name: Literal["softtriple"] = "softtriple"
    centers_per_class: int = Field(2, ge=1)
    la: float = Field(8.0, gt=0.0)
    gamma: float = Field(0.1, gt=0.0)
    margin: float = Field(0.01, ge=0.0)
    tau: float = Field(0.2, ge=0.0)


@register_loss(SoftTripleLossParams)
def softtriple(cfg, ctx):
    """tau weighs the centre regulariser (eq. 18, K > 1 only)."""
    from pytorch_metric_learning import losses, regularizers

    sparse = (
        {
            "weight_regularizer": regularizers.SparseCentersRegularizer(ctx.num_classes, cfg.centers_per_class),
            "weight_reg_weight": cfg.tau,
        }
        if cfg.centers_per_class > 1 and cfg.tau > 0
        else {}
    )
    return losses.SoftTripleLoss(
        ctx.num_classes,
        ctx.embedding_dim,
        centers_per_class=cfg.centers_per_class,
        la=cfg.la,
        gamma=cfg.gamma,
        margin=cfg.margin,
        **sparse,
    )


@section
class NormalizedSoftmaxLossParams:
    """Normalised softmax (Zhai & Wu 2018; Revisiting eq. 19), temperature T."""

    name: Literal["normalized_softmax"] = "normalized_softmax"
    temperature: float = Field(0.05, gt=0.0)


@register_loss(NormalizedSoftmaxLossParams)
def normalized_softmax(cfg, ctx):
    from pytorch_metric_learning import losses

    return losses.NormalizedSoftmaxLoss(ctx.num_classes, ctx.embedding_dim, temperature=cfg.temperature)
