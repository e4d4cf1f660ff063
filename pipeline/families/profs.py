"""The PROFS family (PROFS Algorithm 1): ``<loss>_<variant>`` for every loss in ``profs.losses`` and variant in
``profs.variants`` (plain, profs, profs_hncm); objectives in pipeline/methods/profs.py."""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from pydantic import Field

from pipeline.families import Claim, Family, MethodConfig, register_family
from pipeline.infra.schema import section
from pipeline.losses.revisiting import (
    AngularLossParams,
    ContrastiveLossParams,
    GeneralizedLiftedLossParams,
    MarginLossParams,
    MultiSimilarityLossParams,
    SoftTripleLossParams,
    TripletLossParams,
)

LOSSES = {
    "contrastive": "Contrastive",
    "triplet": "Triplet",
    "margin": "Margin",
    "ms": "MS",
    "lifted": "Lifted",
    "angular": "Angular",
    "npair": "N-pair",
    "softtriple": "SoftTriple",
}
VARIANTS = {"plain": "{} (plain)", "profs": "{}-PROFS", "profs_hncm": "{}-PROFS-HNCM"}


@section(kw_only=True)
class PROFSConfig(MethodConfig):
    """PROFS (Algorithm 1) with and without hard negative class mining; see pipeline/methods/profs.py."""

    losses: list[Literal[tuple(LOSSES)]] = field(default_factory=lambda: ["contrastive", "triplet", "ms"])
    variants: list[Literal[tuple(VARIANTS)]] = field(default_factory=lambda: list(VARIANTS))
    lambda_: float = Field(1e-3, ge=0.0)
    # M, the steps per projection: "derived" = ceil(rho / p(y)), p(y) = B / (I L) (section 5.4.1); or "fixed" = m
    m_mode: Literal["derived", "fixed"] = "derived"
    m: int = Field(30, ge=1)
    rho: float = Field(6.0, gt=0.0)
    # HNCM batches: random seed classes, each followed by this many of its nearest classes (section 4.2)
    hard_classes: int = Field(1, ge=1)
    # contrastive/triplet/margin: as many hard negatives as positives per anchor (section 5.3), or all pairs
    pair_sampling: Literal["one_negative_per_positive", "all"] = "one_negative_per_positive"
    # MS keeps its own pair mining (Wang et al. eq. 3-4; section 5.3 changes only the pairing) in every variant:
    # the miner's epsilon, or null for none
    ms_miner_epsilon: float | None = Field(0.1, ge=0.0)
    # contrastive, triplet, MS: eq. 3.1's mean over the tuples; avg_nonzero: over the non-zero terms; library:
    # pytorch-metric-learning's default per loss (contrastive, triplet: non-zero terms)
    reducer: Literal["mean", "avg_nonzero", "library"] = "mean"
    # learning rate of the loss's own parameters (SoftTriple's centres)
    loss_lr: float = Field(1e-2, gt=0.0)
    # the PROFS family's budget (plain included), 0 = train.max_epochs / train.patience; the real-data
    # protocols set the paper's 100 epochs with the best epoch reported (patience 100)
    max_epochs: int = Field(0, ge=0)
    patience: int = Field(0, ge=0)
    # each loss's settings, in the baselines' schemas (PROFS eq. 4.6 margins for contrastive; SoftTriple
    # without the centre regulariser, tau = 0, as in the PROFS paper's use)
    contrastive: ContrastiveLossParams = field(default_factory=lambda: ContrastiveLossParams(neg_margin=0.8))
    triplet: TripletLossParams = field(default_factory=lambda: TripletLossParams(margin=0.2, squared=True))
    margin: MarginLossParams = field(default_factory=lambda: MarginLossParams(learn_beta=False))
    ms: MultiSimilarityLossParams = field(default_factory=lambda: MultiSimilarityLossParams(beta=50.0))
    lifted: GeneralizedLiftedLossParams = field(default_factory=lambda: GeneralizedLiftedLossParams(embedding_reg=0.0))
    angular: AngularLossParams = field(default_factory=lambda: AngularLossParams(alpha=40.0))
    softtriple: SoftTripleLossParams = field(default_factory=lambda: SoftTripleLossParams(la=20.0, tau=0.0))


def _check(params) -> str | None:
    if params.profs.hard_classes >= params.train.classes_per_batch:
        return (
            f"profs.hard_classes: must be < train.classes_per_batch "
            f"({params.profs.hard_classes} >= {params.train.classes_per_batch}; an HNCM batch needs a seed class)"
        )
    return None


def _claims(params) -> list[Claim]:
    """PROFS Tables 1-2 per loss configured (at batch 128 there, which the source says when ours differs)."""
    batch = params.train.classes_per_batch * params.train.images_per_class
    source = "PROFS Tables 1-2" + (f" (batch 128 there; {batch} here, both arms)" if batch != 128 else "")
    out = []
    for loss in params.profs.losses:
        out.append(Claim(f"{loss}: PROFS beats the plain loss", source, f"{loss}_plain", f"{loss}_profs"))
        out.append(Claim(f"{loss}: PROFS-HNCM beats PROFS", source, f"{loss}_profs", f"{loss}_profs_hncm"))
    return out


FAMILY = register_family(
    Family(
        section="profs",
        schema=PROFSConfig,
        losses=LOSSES,
        variants=VARIANTS,
        variant_lists={"variants": tuple(VARIANTS)},
        objective="pipeline.methods.profs",
        own_budget=True,
        check=_check,
        claims=_claims,
    )
)
