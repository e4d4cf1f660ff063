"""The CCP family (CCP Algorithms 1 and 2): ``<loss>_<variant>`` for every loss in ``ccp.losses`` and variant in
``ccp.variants`` (batch, loss_proxy: no projections) and ``ccp.alternating`` (ccp, sample_ccp: Algorithm 1's
sub-problems); objectives in pipeline/methods/ccp.py."""

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
from pipeline.losses.ccp import C2Config, CosineContrastiveLossParams
from pipeline.losses.revisiting import MultiSimilarityLossParams, TripletLossParams

LOSSES = {"c1": "C1", "c2": "C2", "ms": "MS", "triplet": "Triplet"}
BATCH_VARIANTS = ("batch", "loss_proxy")
ALTERNATING_VARIANTS = ("ccp", "sample_ccp")  # re-initialise their anchors: several sub-problems
# the ccp keys every CCP run trains with besides its loss's own section, the K-center pool every proxy run's first
# anchors are drawn from (Loss-Proxy too: CCP Alg. 2 starts its single sub-problem), and the keys only Algorithm 1's
# alternating runs add: what a run records (pipeline/runs.py run_record), which the values stage writes into the
# data/tuned/<run>.json its train stage depends on (tests/test_ccp.py)
SHARED_KEYS = (
    "proxies_per_class",
    "in_batch_weight",
    "proxy_lr_multiplier",
    "reset_proxy_optimizer",
    "reducer",
    "similarity",
    "kcenter_space",
    "embedding_norm",
)
PROXY_KEYS = ("pool_size",)
ALGORITHM_1_KEYS = ("lambda", "zero_lambda_first", "patience", "max_subproblems")


@section(kw_only=True)
class CCPConfig(MethodConfig):
    """CCP (Algorithms 1 and 2) and its ablation variants; see pipeline/methods/ccp.py."""

    embedding_norm: Literal["l2", "lipschitz", "none"] = "lipschitz"
    losses: list[Literal[tuple(LOSSES)]] = field(default_factory=lambda: list(LOSSES))
    # the variants without projections (batch, Loss-Proxy: CCP Fig. 4a), and those of Algorithm 1; two lists so
    # that dvc.yaml gives each group its own stages and param keys (ccp.lambda reruns only the second)
    variants: list[Literal[BATCH_VARIANTS]] = field(default_factory=lambda: list(BATCH_VARIANTS))
    alternating: list[Literal[ALTERNATING_VARIANTS]] = field(default_factory=lambda: ["ccp"])
    lambda_: float = Field(2e-4, ge=0.0)
    zero_lambda_first: bool = True
    proxies_per_class: int = Field(4, ge=1)
    # at least proxies_per_class (`_check`): the search's own floor there (pipeline/studies/tuning.py key_limits)
    pool_size: int = Field(8, ge=1, json_schema_extra={"ge_field": "proxies_per_class"})
    patience: int = Field(3, ge=1)  # epochs without a better validation MAP@R that end a sub-problem
    max_subproblems: int = Field(50, ge=1)
    in_batch_weight: float = Field(0.1, ge=0.0)
    # the authors' release, each a choice (pipeline/methods/ccp.py, pipeline/losses/modules/pair_losses.py): proxies at
    # train.lr x this; Adam's proxy moments kept across re-initialisations; per-loss reductions; C1 / MS on the
    # dot product of the normalised embeddings; K-center on raw head outputs
    proxy_lr_multiplier: float = Field(1.0, gt=0.0)
    reset_proxy_optimizer: bool = False
    reducer: Literal["release", "mean", "avg_nonzero"] = "release"
    similarity: Literal["dot", "cosine"] = "dot"
    kcenter_space: Literal["raw", "normalized"] = "raw"
    # the pair losses' settings (C2 is CCP's own; the others share the baselines' schemas)
    c1: CosineContrastiveLossParams = field(default_factory=CosineContrastiveLossParams)
    c2: C2Config = field(default_factory=C2Config)
    ms: MultiSimilarityLossParams = field(default_factory=MultiSimilarityLossParams)
    triplet: TripletLossParams = field(default_factory=lambda: TripletLossParams(margin=0.0961))


def _check(params) -> str | None:
    ccp = params.ccp
    if ccp.pool_size < ccp.proxies_per_class:
        return (
            f"ccp.pool_size: must be >= ccp.proxies_per_class "
            f"({ccp.pool_size} < {ccp.proxies_per_class}; Algorithm 2 picks from the pool)"
        )
    if ccp.c2.beta < ccp.c2.alpha:
        return "ccp.c2.beta: must be >= ccp.c2.alpha (eq. 4.2 needs beta >= alpha > 0)"
    return None


def _claims(params) -> list[Claim]:
    """CCP Fig. 4a per loss configured; Fig. 2's 2-D comparison (the poc stage, whatever the losses)."""
    out = []
    for loss in params.ccp.losses:
        name = LOSSES[loss]
        out.append(
            Claim(
                f"{name}: CCP beats Loss-Proxy (alternating proxies help)",
                "CCP Fig. 4a",
                f"{loss}_loss_proxy",
                f"{loss}_ccp",
            )
        )
        out.append(
            Claim(f"{name}: Loss-Proxy beats the loss on batches", "CCP Fig. 4a", f"{loss}_batch", f"{loss}_loss_proxy")
        )
    sample_based = "2-D: sample-based CCP beats proxy-based CCP (98.06 vs 97.21 MAP@R on MNIST)"
    return [*out, Claim(sample_based, "CCP Fig. 2, section 5.3", "ccp", "sample_ccp", where="poc")]


@section
class CCPAblationConfig:
    """CCP Fig. 5 (#proxy x pool size b) and a lambda sweep, on ``<loss>_ccp``."""

    loss: Literal[tuple(LOSSES)] = "c2"  # Fig. 5 uses C2-CCP
    proxies_per_class: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [1, 2, 4], min_length=1)
    # b = factor x #proxy; factor 1 = random selection
    pool_factors: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [1, 2, 4], min_length=1)
    lambdas: list[Annotated[float, Field(ge=0.0)]] = Field(
        default_factory=lambda: [0.0, 2e-5, 2e-4, 2e-3, 2e-2], min_length=1
    )


def _grid(params) -> list[tuple[dict, object]]:
    """CCP Fig. 5, #proxy per class x pool size b (b = factor x #proxy, factor 1 = random proxy selection), then a
    sweep of the projection regulariser lambda (eq. 4.10); every other setting is the ``ccp`` section's."""
    a, cfg = params.ablation.ccp, params.ccp

    def point(sweep, proxies, pool, lambda_):
        row = {"sweep": sweep, "proxies_per_class": proxies, "pool_size": pool, "lambda": lambda_}
        return row, replace(params, ccp=replace(cfg, proxies_per_class=proxies, pool_size=pool, lambda_=lambda_))

    return [point("proxies_pool", p, f * p, cfg.lambda_) for p in a.proxies_per_class for f in a.pool_factors] + [
        point("lambda", cfg.proxies_per_class, cfg.pool_size, lambda_) for lambda_ in a.lambdas
    ]


def _paragraphs(table, params) -> list[str]:
    """What the CCP ablation figures show, with numbers."""
    loss, fold = params.ablation.ccp.loss, params.ablation.fold
    grid = table[table.sweep == "proxies_pool"]
    lam = table[table.sweep == "lambda"]
    out = []
    if len(grid):
        best = best_point(grid)
        random = grid[grid.pool_size == grid.proxies_per_class]
        rand_text = ""
        if len(random):
            gain = [
                100 * (best_point(grid[grid.proxies_per_class == p]).test_map_at_r - r)
                for p, r in zip(random.proxies_per_class, random.test_map_at_r)
            ]
            rand_text = (
                " Against random proxy selection (b = #proxy), the pool size of each #proxy with the best validation "
                "MAP@R gains "
                + ", ".join(f"{g:+.1f}" for g in gain)
                + " points (#proxy = "
                + ", ".join(str(p) for p in random.proxies_per_class)
                + ")."
            )
        out.append(
            f"**#proxy x pool size (CCP Fig. 5)** — `figures/ccp_proxies_pool.png`: {loss.upper()}-CCP on fold {fold}, "
            f"test MAP@R spans {span_text(grid)}; the best point by validation MAP@R is #proxy = "
            f"{best.proxies_per_class}, b = {best.pool_size} ({point_text(best)}).{rand_text} The paper reports that "
            "both more proxies and a larger pool help on CUB and Cars196; differences below about 2 points are within "
            "the fold-to-fold spread of this data set (see the std columns of the results table)."
        )
    if len(lam):
        best = best_point(lam)
        zero = lam[lam["lambda"] == 0]
        zero_text = f"; λ = 0 gives {100 * zero.test_map_at_r.iloc[0]:.1f}%" if len(zero) else ""
        out.append(
            f"**CCP λ sweep** — `figures/ccp_lambda.png`: test MAP@R spans {span_text(lam)}, best by validation MAP@R "
            f"at λ = {best['lambda']:g} ({point_text(best)}){zero_text}."
        )
    return out


ABLATION = Ablation(
    schema=CCPAblationConfig,
    run=lambda params: f"{params.ablation.ccp.loss}_ccp",
    grid=_grid,
    figures=(
        SweepFigure(
            "ccp_proxies_pool",
            "proxies_pool",
            "pool_size",
            lambda p: (
                f"{p.ablation.ccp.loss.upper()}-CCP: #proxy per class x pool size b "
                f"(CCP Fig. 5), fold {p.ablation.fold}; b = #proxy is random selection"
            ),
            series="proxies_per_class",
            xlabel="pool size b (candidates per class for greedy K-center)",
        ),
        SweepFigure(
            "ccp_lambda",
            "lambda",
            "lambda",
            lambda p: f"{p.ablation.ccp.loss.upper()}-CCP: projection regulariser λ (eq. 4.10), fold {p.ablation.fold}",
            lambda_axis=True,
            mark=lambda p: p.ccp.lambda_,
        ),
    ),
    paragraphs=_paragraphs,
)


FAMILY = register_family(
    Family(
        section="ccp",
        schema=CCPConfig,
        losses=LOSSES,
        variants={
            "batch": "{} (batch)",
            "loss_proxy": "{}-Loss-Proxy",
            "ccp": "{}-CCP",
            "sample_ccp": "{}-CCP (samples)",
        },
        variant_lists={"variants": BATCH_VARIANTS, "alternating": ALTERNATING_VARIANTS},
        objective="pipeline.methods.ccp",
        stage_keys={
            "batch": SHARED_KEYS,
            "loss_proxy": (*SHARED_KEYS, *PROXY_KEYS),
            **dict.fromkeys(ALTERNATING_VARIANTS, (*SHARED_KEYS, *PROXY_KEYS, *ALGORITHM_1_KEYS)),
        },
        check=_check,
        claims=_claims,
        ablation=ABLATION,
        runs_text="CCP family `<loss>_<variant>` (batch: the loss on in-batch pairs; loss_proxy: one proxy-DML, "
        "Loss-Proxy of CCP Fig. 4a; ccp: Algorithm 1; sample_ccp: sample anchors)",
        stopping_text="CCP takes the stop only at the end of a sub-problem (a sub-problem ends after ccp.patience "
        "epochs without improvement)",
    )
)
