"""The method-family registry: one record per family of runs (CCP, PROFS) that trains every loss of a list with
every variant of a list, configured by one params section.

A family's module here declares its section's schema and registers a :class:`Family`; nothing else lists families:
the params root gets a section per family (pipeline/params/root.py), the functions at the end name and parse the
runs (``<loss>_<variant>``; all_runs also composes params' ``experiment.runs``, the train matrix), the training
stage builds each run's objective with the module the record names (its ``build_objective``), and the report prints
the papers' names from the record and tests the papers' claims about the family's runs that the record declares (the
claims table, pipeline/reporting/claims.py). Family modules import no torch (params load without it); the objective
module does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.config.report import Claim
from pipeline.infra.registry import Registry
from pipeline.infra.schema import section


@section(kw_only=True)
class MethodConfig:
    """Fields every method section has (a family's section and a baseline run's)."""

    # normalisation applied to the head output in training, validation and test
    embedding_norm: Literal["l2", "lipschitz", "none"] = "l2"


@dataclass(frozen=True)
class SweepFigure:
    """One figure of an ablation (pipeline/reporting/figures.py sweep_figure): test and best validation MAP@R of the
    grid rows whose ``sweep`` column is `sweep`, against column `x` (one line per value of `series`); `title` and
    `mark` (the value the pipeline's own runs use, a dotted line) from the whole params."""

    file: str  # reports/figures/<file>.png
    sweep: str
    x: str
    title: Callable[[Any], str]
    series: str | None = None
    xlabel: str = ""
    lambda_axis: bool = False
    mark: Callable[[Any], float] | None = None


@dataclass(frozen=True)
class Ablation:
    """A family's ablation study (dvc.yaml ablation@paper-<section>; params ``ablation.<section>``, of `schema`):

    - run: the run every grid point trains, from the whole params;
    - grid: (the point's settings as a row, the params that train it) for every point; each point trains one
      model on ``ablation.fold`` (pipeline/studies/ablation.py);
    - figures: what the report draws from the grid's table;
    - paragraphs: what the figures show, with numbers, from (the table, the whole params) (reports/README.md).
    """

    schema: type
    run: Callable[[Any], str]
    grid: Callable[[Any], list[tuple[dict, Any]]]
    figures: tuple[SweepFigure, ...]
    paragraphs: Callable[[Any, Any], list[str]]


def best_point(table):
    """The point of a sweep a user would pick without the test set: the highest validation MAP@R (the test
    MAP@R it is reported with decides nothing)."""
    return table.loc[table.best_val_map_at_r.idxmax()]


def point_text(row) -> str:
    return f"validation {100 * row.best_val_map_at_r:.1f}%, test {100 * row.test_map_at_r:.1f}%"


def span_text(table) -> str:
    return f"{100 * table.test_map_at_r.min():.1f}-{100 * table.test_map_at_r.max():.1f}%"


@dataclass(frozen=True)
class Family:
    """A family of runs ``<loss>_<variant>``.

    - section, schema: its params key and the section's schema;
    - losses: loss key -> the papers' name (each key is a field of the section holding a registered loss's
      params, pipeline/losses);
    - variants: variant -> the papers' name pattern (``"{}-CCP"``);
    - variant_lists: the section's lists that pick the variants trained, in run order (each its own dvc.yaml
      stage), with the variants each may hold;
    - objective: the module of pipeline/methods whose ``build_objective(section, train, loss, variant,
      num_classes)`` builds a run's objective from the family's section and the run's train section;
    - stage_keys: per variant, the section's keys its stage depends on besides the loss's own section (None:
      the whole section), which is also what a run records (pipeline/runs.py run_record);
    - own_budget: the section's max_epochs / patience (0: train's) are the family's training budget;
    - check: a cross-field rule on the whole params, returning a problem ``"<key>: ..."`` or None;
    - claims: the papers' claims about its runs, for the whole params (its losses configured, the batch);
    - ablation: its ablation study, if it has one;
    - runs_text: how reports/results.md introduces its runs (their names and what each variant is);
    - stopping_text: where its runs may take the early stop, for reports/budgets.md (empty: at any epoch).
    """

    section: str
    schema: type
    losses: dict[str, str]
    variants: dict[str, str]
    variant_lists: dict[str, tuple[str, ...]]
    objective: str
    stage_keys: dict[str, tuple[str, ...]] | None = None
    own_budget: bool = False
    check: Callable[[Any], str | None] = field(default=lambda params: None)
    claims: Callable[[Any], list[Claim]] = field(default=lambda params: [])
    ablation: Ablation | None = None
    runs_text: str = ""
    stopping_text: str = ""

    def trained_variants(self, cfg) -> list[str]:
        """The variants section `cfg` trains, in run order."""
        return [v for key in self.variant_lists for v in getattr(cfg, key)]


_FAMILIES: Registry[Family] = Registry(__name__, "family", identity=lambda f: f.schema)


def register_family(family: Family) -> Family:
    return _FAMILIES.add(family.section, family, family.schema.__module__)


def families() -> dict[str, Family]:
    """Every registered family by params section, in section order (imports this package's modules once)."""
    return _FAMILIES.records()
