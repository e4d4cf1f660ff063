"""The whole params root, every section of params.yaml: what `python -m pipeline.compose`, the stages that train or
report every run, and the tests load. It imports every registry (losses, miners, families, data sets); a stage that
reads fewer sections loads only those (pipeline/config/loader.py ``params_type``)."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path

from pipeline.config import loader
from pipeline.config.base import ParamsError
from pipeline.config.lanml import LANML
from pipeline.config.loader import Section, params_type, rule
from pipeline.config.report import REPORT
from pipeline.config.run import BACKBONE, EVAL, EXPERIMENT, SCOPE, SEED, TRAIN
from pipeline.config.tune import TUNE, check_tune
from pipeline.families import families
from pipeline.params.baselines import BASELINES
from pipeline.params.data import DATA
from pipeline.params.studies import ABLATION, POC
from pipeline.runs import all_runs


@rule("experiment", "baselines")
def _check_runs(p, source: str) -> None:
    """experiment.methods names baselines once each; experiment.runs is what the lists give (the train matrix)."""
    for name in p.experiment.methods:
        if name not in p.baselines:
            raise ParamsError(
                f"{source}: experiment.methods: unknown method {name!r} "
                f"(valid: the runs under baselines: {', '.join(sorted(p.baselines))})"
            )
    if len(set(p.experiment.methods)) != len(p.experiment.methods):
        raise ParamsError(f"{source}: experiment.methods: duplicate method names")
    if p.experiment.runs is not None and p.experiment.runs != (runs := all_runs(p)):
        raise ParamsError(
            f"{source}: experiment.runs: {p.experiment.runs} is not what experiment.methods and the families' lists "
            f"give ({runs}): compose params.yaml again (python -m pipeline.compose) instead of editing its lists"
        )


@rule()
def _check_families(p, source: str) -> None:
    """Each family's own rule (its record's ``check``) and no name twice in its lists."""
    for family in families().values():
        problem = family.check(p)
        if problem:
            raise ParamsError(f"{source}: {problem}")
        for key in ("losses", *family.variant_lists):
            values = getattr(getattr(p, family.section), key)
            if len(set(values)) != len(values):
                raise ParamsError(f"{source}: {family.section}.{key}: duplicate names")


# after baselines, one section per method family (pipeline/families: ccp, profs), so a new family needs no edit here
FAMILIES = tuple(Section(f.section, f.schema, field(default_factory=f.schema)) for f in families().values())
Params = params_type(
    SEED,
    EXPERIMENT,
    DATA,
    BACKBONE,
    TRAIN,
    EVAL,
    BASELINES,
    *FAMILIES,
    POC,
    LANML,
    ABLATION,
    REPORT,
    TUNE,
    SCOPE,
    rules=(_check_runs, _check_families, check_tune),  # the whole params: every run, every tuned key
    module=__name__,
    whole=True,
)


def load_params(path: str | Path = "params.yaml") -> Params:
    """Load and validate every section of params.yaml; raise ParamsError with a one-line message."""
    return loader.load_params(path, Params)


def params_from_dict(data: dict, source: str = "params.yaml") -> Params:
    """A plain dict validated as the whole params (tests, benchmarks)."""
    return loader.validate(loader.with_starting_values(data, source), Params, source)
