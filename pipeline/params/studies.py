"""The studies of the families' runs: CCP's 2-D proof of concept (``poc``) and the ablations (``ablation``); and
their rules."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal

from pydantic import Field

from pipeline.config.base import ParamsError
from pipeline.config.loader import Section, rule
from pipeline.families import ccp, profs
from pipeline.infra.schema import section


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


@rule()
def _check_poc(p, source: str) -> None:
    if len(set(p.poc.seeds)) != len(p.poc.seeds):
        raise ParamsError(f"{source}: poc.seeds: need distinct seeds, got {p.poc.seeds}")
    if p.poc.pool_size < p.poc.proxies_per_class:
        raise ParamsError(f"{source}: poc.pool_size: must be >= poc.proxies_per_class")


@rule("experiment")
def _check_ablation_fold(p, source: str) -> None:
    if p.ablation.fold not in p.experiment.folds:
        raise ParamsError(
            f"{source}: ablation.fold: {p.ablation.fold} is not one of experiment.folds {p.experiment.folds}"
        )


POC = Section("poc", PocConfig, field(default_factory=PocConfig), (_check_poc,))
ABLATION = Section("ablation", AblationConfig, field(default_factory=AblationConfig), (_check_ablation_fold,))
