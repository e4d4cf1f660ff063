"""The quadruplet loss (Chen et al. 2017; Revisiting supplement eq. 14); its formula is in
pipeline/losses/modules/quadruplet.py."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.infra.schema import section
from pipeline.losses import register_loss


@section
class QuadrupletLossParams:
    """Quadruplet loss (Chen et al. 2017; Revisiting eq. 14), margins gamma1 and gamma2 (Euclidean)."""

    name: Literal["quadruplet"] = "quadruplet"
    margin1: float = Field(1.0, ge=0.0)
    margin2: float = Field(0.5, ge=0.0)


@register_loss(QuadrupletLossParams)
def quadruplet(cfg, ctx):
    from pipeline.losses.modules.quadruplet import QuadrupletLoss

    return QuadrupletLoss(cfg.margin1, cfg.margin2)
