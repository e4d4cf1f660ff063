"""ANML's deep losses (ANML section 6, Table 3): DANML (eq. 22) and the improved Lifted (eq. 25) and N-pair
(eq. 31) losses; their formulas are in pipeline/losses/modules/anml.py."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.infra.schema import section
from pipeline.losses import register_loss


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


@register_loss(DANMLLossParams)
def danml(cfg, ctx):
    from pipeline.losses.modules.anml import DANMLLoss

    return DANMLLoss(cfg.gamma1, cfg.gamma2, cfg.lambda1, cfg.lambda1 + cfg.sigma, cfg.outer)


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


@register_loss(ImprovedLiftedLossParams)
def anml_lifted(cfg, ctx):
    from pipeline.losses.modules.anml import ImprovedLiftedLoss

    return ImprovedLiftedLoss(cfg.gamma1, cfg.gamma2, cfg.lambda1, cfg.lambda2, cfg.margin)


@section
class ImprovedNPairLossParams:
    """ANML eq. 31. gamma and lambda are not given for Table 3; these defaults are ours."""

    name: Literal["anml_npair"] = "anml_npair"
    gamma: float = Field(2.0, gt=0.0)
    lambda_: float = Field(0.1, ge=0.0)


@register_loss(ImprovedNPairLossParams)
def anml_npair(cfg, ctx):
    from pipeline.losses.modules.anml import ImprovedNPairLoss

    return ImprovedNPairLoss(cfg.gamma, cfg.lambda_)
