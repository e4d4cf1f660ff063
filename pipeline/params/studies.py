"""The studies of the families' runs: CCP's 2-D proof of concept (``poc``) and the ablations (``ablation``); and
their rules."""

from __future__ import annotations

from dataclasses import field, make_dataclass
from typing import Annotated, Literal

from pydantic import Field

from pipeline.config.base import ParamsError
from pipeline.config.loader import Section, rule
from pipeline.families import ccp, families
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


def _ablation_section() -> type:
    """``ablation``: the fold every grid point trains on, then one section per family with an ablation study (its
    record's schema: pipeline/families), so a family brings its own (dvc.yaml ablation@paper-<section>)."""
    studies = [
        (name, f.ablation.schema, field(default_factory=f.ablation.schema))
        for name, f in families().items()
        if f.ablation is not None
    ]
    fields = [("fold", int, Field(0, ge=0)), *studies]
    return section(make_dataclass("AblationConfig", fields, namespace={"__module__": __name__}))


AblationConfig = _ablation_section()


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
