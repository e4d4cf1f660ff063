"""CCP's two contrastive losses (CCP section 5.1 and supplement): C1 on the cosine similarity, as in XBM, and C2,
the chance-constraint surrogate of CCP eq. 4.2. Both take CCP's similarity and reductions
(pipeline/losses/modules/pair_losses.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.infra.schema import section
from pipeline.losses import register_loss


@section
class CosineContrastiveLossParams:
    """C1 of CCP/XBM: (1 - s) on positives, (s - neg_margin)_+ on negatives, s the cosine similarity (release
    reduction: the sum over the anchors' pairs divided by the number of anchors)."""

    name: Literal["c1"] = "c1"
    neg_margin: float = Field(0.5, ge=-1.0, le=1.0)


@register_loss(CosineContrastiveLossParams, xbm=True)
def c1(cfg, ctx):
    from pytorch_metric_learning import losses

    from pipeline.losses.modules.pair_losses import PerAnchorSumReducer, reducer_kwargs, similarity

    return losses.ContrastiveLoss(
        pos_margin=1.0,
        neg_margin=cfg.neg_margin,
        distance=similarity(ctx.similarity),
        **reducer_kwargs(ctx.reducer, PerAnchorSumReducer),
    )


@section
class C2Config:
    """C2: contrastive with positive margin, CCP eq. 4.2: (y_ij (d_ij - beta) + alpha)_+, beta >= alpha > 0, on
    Euclidean distances (release reduction: the mean over the non-zero terms). Only CCP's ``ccp.c2`` section holds
    it, so it has no ``name`` tag (and a baseline cannot select it)."""

    alpha: float = Field(0.19205, gt=0.0)
    beta: float = Field(0.19205, gt=0.0)


@register_loss(C2Config, name="c2")
def c2(cfg, ctx):
    """m+ = beta - alpha, m- = beta + alpha (CCP eq. 4.2)."""
    from pytorch_metric_learning import losses, reducers

    from pipeline.losses.modules.pair_losses import euclidean, reducer_kwargs

    return losses.ContrastiveLoss(
        pos_margin=cfg.beta - cfg.alpha,
        neg_margin=cfg.beta + cfg.alpha,
        distance=euclidean(),
        **reducer_kwargs(ctx.reducer, reducers.AvgNonZeroReducer),
    )
