"""The PROFS family (PROFS Algorithm 1): ``<loss>_<variant>`` for every loss in ``profs.losses`` and variant in
``profs.variants`` (plain, profs, profs_hncm); objectives in pipeline/methods/profs.py."""

from __future__ import annotations

from dataclasses import field, replace
from typing import Annotated, Literal

from pydantic import Field

from pipeline.families import (
    Ablation,
    Claim,
    Family,
    MethodConfig,
    SweepFigure,
    best_point,
    point_text,
    register_family,
    span_text,
)
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
# the profs keys every run trains with besides its loss's own section, those the projections add (Alg. 1: lambda,
# M or rho) and HNCM's: what a run records (pipeline/runs.py run_record), so that a plain run's study and train
# stage do not move with a key only PROFS reads
PLAIN_KEYS = ("embedding_norm", "pair_sampling", "ms_miner_epsilon", "reducer", "loss_lr", "max_epochs", "patience")
PROJECTION_KEYS = ("lambda", "m_mode", "m", "rho")


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
    # HNCM batches: random seed classes, each followed by this many of its nearest classes (section 4.2); fewer than
    # the classes per batch (`_check`): the search's own ceiling there (pipeline/studies/tuning.py key_limits)
    hard_classes: int = Field(1, ge=1, json_schema_extra={"lt_field": "train.classes_per_batch"})
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
    batch = params.train.batch_size
    source = "PROFS Tables 1-2" + (f" (batch 128 there; {batch} here, both arms)" if batch != 128 else "")
    out = []
    for loss in params.profs.losses:
        out.append(Claim(f"{loss}: PROFS beats the plain loss", source, f"{loss}_plain", f"{loss}_profs"))
        out.append(Claim(f"{loss}: PROFS-HNCM beats PROFS", source, f"{loss}_profs", f"{loss}_profs_hncm"))
    return out


@section
class PROFSAblationConfig:
    """PROFS Fig. 3 (lambda sweep) and Fig. 2 (fixed M sweep), on ``<loss>_profs``."""

    loss: Literal[tuple(LOSSES)] = "margin"  # Fig. 3 uses Margin
    lambdas: list[Annotated[float, Field(ge=0.0)]] = Field(
        default_factory=lambda: [0.0, 1e-4, 1e-3, 1e-2, 1e-1], min_length=1
    )
    m: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [5, 15, 30, 60, 120], min_length=1)


def _grid(params) -> list[tuple[dict, object]]:
    """PROFS Fig. 3, a sweep of lambda (eq. 4.7), then Fig. 2, a sweep of a fixed number of steps M per projection;
    every other setting is the ``profs`` section's."""
    a, cfg = params.ablation.profs, params.profs

    def point(sweep, mode, m, lambda_):
        row = {"sweep": sweep, "m_mode": mode, "m": m, "lambda": lambda_}
        return row, replace(params, profs=replace(cfg, m_mode=mode, m=m, lambda_=lambda_))

    return [point("lambda", cfg.m_mode, cfg.m, lambda_) for lambda_ in a.lambdas] + [
        point("m", "fixed", m, cfg.lambda_) for m in a.m
    ]


def _paragraphs(table, params) -> list[str]:
    """What the PROFS ablation figures show, with numbers."""
    loss, fold = params.ablation.profs.loss, params.ablation.fold
    out = []
    lam = table[table.sweep == "lambda"]
    m = table[table.sweep == "m"]
    if len(lam):
        best = best_point(lam)
        out.append(
            f"**PROFS λ sweep (PROFS Fig. 3)** — `figures/profs_lambda.png`: {loss}-PROFS on fold {fold}, "
            f"test MAP@R spans {span_text(lam)}, best by validation MAP@R at λ = {best['lambda']:g} "
            f"({point_text(best)}). "
            "The paper finds similar results for λ in [1e-4, 1e-2] and drops outside."
        )
    if len(m):
        best = best_point(m)
        out.append(
            f"**PROFS steps per projection M (PROFS Fig. 2)** — `figures/profs_m.png`: fixed M, test MAP@R "
            f"spans {span_text(m)}, best by validation MAP@R at M = {best.m:.0f} ({point_text(best)}). The paper sees "
            "performance rise with M up to a data-set-dependent value and then fall."
        )
    return out


ABLATION = Ablation(
    schema=PROFSAblationConfig,
    run=lambda params: f"{params.ablation.profs.loss}_profs",
    grid=_grid,
    figures=(
        SweepFigure(
            "profs_lambda",
            "lambda",
            "lambda",
            lambda p: f"{p.ablation.profs.loss}-PROFS: regulariser λ (eq. 4.7, PROFS Fig. 3), fold {p.ablation.fold}",
            lambda_axis=True,
            mark=lambda p: p.profs.lambda_,
        ),
        SweepFigure(
            "profs_m",
            "m",
            "m",
            lambda p: (
                f"{p.ablation.profs.loss}-PROFS: fixed steps per projection M (PROFS Fig. 2), fold {p.ablation.fold}"
            ),
            xlabel="M (training steps per projection)",
        ),
    ),
    paragraphs=_paragraphs,
)


FAMILY = register_family(
    Family(
        section="profs",
        schema=PROFSConfig,
        losses=LOSSES,
        variants=VARIANTS,
        variant_lists={"variants": tuple(VARIANTS)},
        objective="pipeline.methods.profs",
        stage_keys={
            "plain": PLAIN_KEYS,
            "profs": (*PLAIN_KEYS, *PROJECTION_KEYS),
            "profs_hncm": (*PLAIN_KEYS, *PROJECTION_KEYS, "hard_classes"),
        },
        own_budget=True,
        check=_check,
        claims=_claims,
        ablation=ABLATION,
        runs_text="PROFS family `<loss>_<variant>` (plain: the loss on ordinary batches; profs: Algorithm 1 with "
        "class representatives; profs_hncm: with hard negative class mining)",
        stopping_text="PROFS only at the end of an epoch in which a projection ended",
    )
)
