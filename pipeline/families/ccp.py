"""The CCP family (CCP Algorithms 1 and 2): ``<loss>_<variant>`` for every loss in ``ccp.losses`` and variant in
``ccp.variants`` (batch, loss_proxy: no projections) and ``ccp.alternating`` (ccp, sample_ccp: Algorithm 1's
sub-problems); objectives in pipeline/methods/ccp.py."""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from pydantic import Field

from pipeline.families import Claim, Family, MethodConfig, register_family
from pipeline.infra.schema import section
from pipeline.losses.ccp import C2Config, CosineContrastiveLossParams
from pipeline.losses.revisiting import MultiSimilarityLossParams, TripletLossParams

LOSSES = {"c1": "C1", "c2": "C2", "ms": "MS", "triplet": "Triplet"}
BATCH_VARIANTS = ("batch", "loss_proxy")
ALTERNATING_VARIANTS = ("ccp", "sample_ccp")  # re-initialise their anchors: several sub-problems
# the ccp keys every CCP run trains with besides its loss's own section, and those only Algorithm 1's alternating
# runs add: what a run records (pipeline/runs.py run_record), which the tune stage writes into the
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
ALGORITHM_1_KEYS = ("lambda", "zero_lambda_first", "pool_size", "patience", "max_subproblems")


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
    pool_size: int = Field(8, ge=1)
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
        stage_keys={"variants": SHARED_KEYS, "alternating": (*SHARED_KEYS, *ALGORITHM_1_KEYS)},
        check=_check,
        claims=_claims,
    )
)
