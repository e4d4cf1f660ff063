"""The ``lanml`` section: LANML on UCI data (ANML section 7.1), the lanml and lanml_timing stages; and its rule."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal, get_args

from pydantic import Field

from pipeline.config.base import ParamsError
from pipeline.config.loader import Section, rule
from pipeline.config.run import Workers
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


# sign rules of eq. 19: LANML- (convex, Lemma 3) gamma1 < 0 < gamma2; LANML+ gamma1 > 0, gamma2 > 0
_GAMMA_SIGNS = {
    ("lanml_minus", "gamma1"): -1,
    ("lanml_minus", "gamma2"): 1,
    ("lanml_plus", "gamma1"): 1,
    ("lanml_plus", "gamma2"): 1,
}


@rule()
def _check_grids(p, source: str) -> None:
    for method, grid in p.lanml.grids.items():
        key = f"{source}: lanml.grids.{method}"
        if method not in LANML_GRID_KEYS:
            raise ParamsError(f"{key}: unknown method (valid: {', '.join(LANML_GRID_KEYS)})")
        if not isinstance(grid, dict):
            raise ParamsError(f"{key}: must map hyperparameter names to lists of values")
        accepted = LANML_GRID_KEYS[method]
        for name, values in grid.items():
            if name not in accepted:
                raise ParamsError(f"{key}.{name}: unknown hyperparameter (valid: {', '.join(sorted(accepted))})")
            if not isinstance(values, list) or not values:
                raise ParamsError(f"{key}.{name}: must be a non-empty list of values")
            sign = _GAMMA_SIGNS.get((method, name))
            if sign and any(not isinstance(v, (int, float)) or v * sign <= 0 for v in values):
                raise ParamsError(
                    f"{key}.{name}: every value must be {'> 0' if sign > 0 else '< 0'} "
                    f"(LANML- needs gamma1 < 0 < gamma2, LANML+ gamma1 > 0), got {values}"
                )


LANML = Section("lanml", LanmlConfig, field(default_factory=LanmlConfig), (_check_grids,))
