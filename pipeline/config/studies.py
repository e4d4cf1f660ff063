"""The studies around the runs: CCP's 2-D proof of concept, LANML on UCI data, the ablations, MLRC's tuning
step, the report and the scope that runs them."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Any, Literal, get_args

from pydantic import Field

from pipeline.config.run import Workers
from pipeline.families import Claim, ccp, profs
from pipeline.infra.schema import section

LanmlDataset = Literal[
    "iris",
    "wine",
    "breast_cancer",
    "digits",
    "australian",
    "cars",
    "ecoli",
    "german",
    "glass",
    "isolet",
    "monk1",
    "solar",
    "vehicle",
    "pendigits",
    "letter",
    "usps",
    "coil20",
]
LanmlMethod = Literal["euclidean", "lanml_minus", "lanml_plus", "pnca", "nca", "lmnn", "itml", "scml", "gmml"]
LANML_METHODS = list(get_args(LanmlMethod))
# what `lanml.grids.<method>` may search: each fit function's keyword arguments less the data, the seed and what
# the protocol sets itself (k_similar, the warm start m0); pipeline/linear/methods.py, tests/test_lanml.py checks
LANML_GRID_KEYS: dict[str, tuple[str, ...]] = {
    "euclidean": (),
    "lanml_minus": ("gamma1", "gamma2", "lam", "smoothing_min", "tol"),
    "lanml_plus": ("gamma1", "gamma2", "lam", "smoothing_min", "tol"),
    "pnca": ("alpha",),
    "nca": (),
    "lmnn": ("n_neighbors", "regularization"),
    "itml": ("gamma",),
    "scml": (),
    "gmml": ("reg", "t"),
}


@section
class PocConfig:
    """CCP's 2-D proof of concept (Fig. 2): ten digit classes, 4 proxies per class, b = 16."""

    loss: Literal[tuple(ccp.LOSSES)] = "c2"
    proxies_per_class: int = Field(4, ge=1)
    pool_size: int = Field(16, ge=1)
    max_subproblems: int = Field(6, ge=1)
    max_epochs: int = Field(80, ge=1)
    hidden: int = Field(64, ge=1)
    val_fraction: float = Field(0.2, gt=0.0, lt=0.5)
    test_fraction: float = Field(0.2, gt=0.0, lt=0.5)
    # replicate seeds of every variant (the claims table's pairs)
    seeds: list[Annotated[int, Field(ge=0)]] = Field(default_factory=lambda: [0, 1, 2, 3, 4], min_length=1)


@section
class LanmlConfig:
    """LANML on UCI data (ANML section 7.1); see pipeline/linear/protocol.py."""

    datasets: list[LanmlDataset] = field(default_factory=lambda: ["iris", "wine"])
    methods: list[LanmlMethod] = field(
        default_factory=lambda: ["euclidean", "lanml_minus", "lanml_plus", "pnca", "nca", "lmnn", "itml", "gmml"]
    )
    repeats: int = Field(3, ge=1)  # random 70/30 splits (paper: 30)
    test_fraction: float = Field(0.3, gt=0.0, lt=1.0)
    cv_folds: int = Field(5, ge=2)
    max_k: int = Field(40, ge=1)  # kNN with K in 1..max_k
    pca_dims: int = Field(150, ge=1)  # PCA when there are more features
    k_similar: int = Field(10, ge=1)  # LANML-: S_i = the k nearest same-class samples
    # LANML-/LANML+ (L-BFGS on M = L^T L): a smoothing round ends at this relative decrease of f;
    # the hinge smoothing goes from 0.1 down to smoothing_min
    solver_tol: float = Field(1e-7, gt=0.0)
    smoothing_min: float = Field(1e-4, gt=0.0)
    workers: Workers = "auto"  # cross-validation and refit jobs in this many processes, one BLAS thread each
    # method -> {hyperparameter: values}; every combination is cross-validated (keys: LANML_GRID_KEYS)
    grids: dict[str, Any] = field(default_factory=dict)


@section
class CCPAblationConfig:
    """CCP Fig. 5 (#proxy x pool size b) and a lambda sweep, on ``<loss>_ccp``."""

    loss: Literal[tuple(ccp.LOSSES)] = "c2"  # Fig. 5 uses C2-CCP
    proxies_per_class: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [1, 2, 4], min_length=1)
    # b = factor x #proxy; factor 1 = random selection
    pool_factors: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [1, 2, 4], min_length=1)
    lambdas: list[Annotated[float, Field(ge=0.0)]] = Field(
        default_factory=lambda: [0.0, 2e-5, 2e-4, 2e-3, 2e-2], min_length=1
    )


@section
class PROFSAblationConfig:
    """PROFS Fig. 3 (lambda sweep) and Fig. 2 (fixed M sweep), on ``<loss>_profs``."""

    loss: Literal[tuple(profs.LOSSES)] = "margin"  # Fig. 3 uses Margin
    lambdas: list[Annotated[float, Field(ge=0.0)]] = Field(
        default_factory=lambda: [0.0, 1e-4, 1e-3, 1e-2, 1e-1], min_length=1
    )
    m: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [5, 15, 30, 60, 120], min_length=1)


@section
class AblationConfig:
    """The ablation studies (dvc.yaml ablation@paper-ccp, ablation@paper-profs): one fold per grid point."""

    fold: int = Field(0, ge=0)
    ccp: CCPAblationConfig = field(default_factory=CCPAblationConfig)
    profs: PROFSAblationConfig = field(default_factory=PROFSAblationConfig)


@section
class SearchDim:
    """One tuned hyperparameter's range (Optuna suggest_float / suggest_int)."""

    low: float = 0.0
    high: float = 1.0
    log: bool = False  # sample uniformly in log space (low > 0)
    integer: bool = False


@section
class PrunerConfig:
    """Stopping hopeless trials early, one rule for every run's study (pipeline/studies/tuning.py, pruning_floors;
    pipeline/training/pruning.py): from `warmup` epochs on, every `interval` epochs, a fold model whose best validation
    MAP@R so far is below the `percentile` of the completed trials' best-so-far on its fold at that epoch, and which
    is not improving (its best so far did not rise within its last `window` epochs, nor its last value over them),
    stops; its trial is pruned (recorded, never chosen, counted among `tune.trials`). Nothing is pruned before
    `min_trials` trials completed."""

    rule: Literal["none", "percentile"] = "none"
    percentile: float = Field(25.0, gt=0.0, lt=100.0)  # 25: the lowest quarter at that epoch (50: Optuna's median)
    warmup: int = Field(20, ge=1)  # epochs every model trains before the first check (the default patience)
    interval: int = Field(5, ge=1)  # epochs between checks
    window: int = Field(10, ge=1)  # a model still improving over its last `window` epochs is not cut
    min_trials: int = Field(5, ge=1)  # completed trials before anything is pruned (Optuna: n_startup_trials)


@section
class TuneConfig:
    """MLRC's tuning step on the validation folds (pipeline/studies/tuning.py)."""

    trials: int = Field(0, ge=0)  # per tuned run; 0 = train at the values written in params.yaml
    sampler: Literal["tpe", "gp"] = "tpe"  # Optuna's TPESampler or GPSampler, seeded per trial
    startup_trials: int = Field(10, ge=1)  # random trials before the model-based proposals start
    # run -> {params key (dotted, e.g. baselines.ms.loss.alpha): range}; runs without a space are not tuned
    spaces: dict[str, dict[str, SearchDim]] = field(default_factory=dict)
    # run -> run: the first trains at the second's tuned values (the loss keys a family shares, e.g. ccp.c2.*)
    # and its own space, if any, is searched with those values fixed (pipeline/studies/tuning.py)
    inherit: dict[str, str] = field(default_factory=dict)
    pruner: PrunerConfig = field(default_factory=PrunerConfig)


@section
class ScopeConfig:
    """What runs beside the chosen runs (conf/scope): dvc.yaml runs the paper's own stages (poc, lanml,
    lanml_timing, ablation, report) once per entry, so `[paper]` runs them and `[]` (scope=methods) none."""

    paper: list[Literal["paper"]] = Field(default_factory=lambda: ["paper"], max_length=1)


@section
class ReportConfig:
    decimals: int = Field(2, ge=0, le=6)
    # rows in run order ("none": baselines, then per CCP loss its batch / Loss-Proxy / CCP rows) or by a metric
    sort_by: Literal["none", "precision_at_1", "r_precision", "map_at_r", "map_at_c", "nmi", "f1"] = "none"
    # runs whose singular value spectra share one figure (each must be trained: experiment.methods, ccp, profs)
    spectrum_runs: list[str] = field(default_factory=lambda: ["margin_d", "r_margin_d", "ms", "c2_batch", "c2_ccp"])
    # resamples of the claims' cluster bootstrap over folds and test classes (pipeline/reporting/claims.py)
    bootstrap_samples: int = Field(10000, ge=100)
    # other data sets' claims tables drawn beside this one in figures/claims_forest.png ("<name>=<claims.csv>";
    # a list, so that a data set's conf can clear it)
    companions: list[Annotated[str, Field(pattern=r"^[\w-]+=.+\.csv$")]] = field(default_factory=list)
    # the papers' claims about the baselines (`better` beats `base`, claims.md); a family declares its own claims
    # in its record (pipeline/families)
    claims: list[Claim] = field(default_factory=list)
    # pictures (stage pictures): fixed test queries and their top-k per run; classes on the t-SNE map
    retrieval_queries: int = Field(6, ge=1)
    retrieval_k: int = Field(5, ge=1)
    map_classes: int = Field(12, ge=2)
