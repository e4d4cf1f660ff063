"""The ablation studies as grids of training jobs (one model each: ``ablation.fold`` with the first of
``experiment.seeds``) and the table of their results. A study is a family's (its record's ``ablation``,
pipeline/families): ``ccp`` (CCP Fig. 5 and a lambda sweep, pipeline/families/ccp.py), ``profs`` (PROFS Figs. 3 and
2, pipeline/families/profs.py). Every other setting comes from the family's section, so a grid point with the
section's own values is the pipeline's run on that fold.
"""

from __future__ import annotations

import pandas as pd

from pipeline.families import Ablation, families
from pipeline.infra.errors import PipelineError
from pipeline.params.root import Params
from pipeline.runs import run_setup
from pipeline.training.jobs import FoldJob, FoldOutcome

TEST_METRICS = ("map_at_r", "r_precision", "precision_at_1")


def studies() -> tuple[str, ...]:
    """The families with an ablation study (their record's ``ablation``), by params section."""
    return tuple(name for name, f in families().items() if f.ablation is not None)


def study(name: str) -> Ablation:
    if name not in studies():
        raise PipelineError(f"unknown ablation study {name!r} (valid: {', '.join(studies())})")
    return families()[name].ablation


def grid(params: Params, name: str) -> list[tuple[dict, Params]]:
    """(grid point as a row of settings, the params that train it) for every point of study `name`."""
    return study(name).grid(params)


def method(params: Params, name: str) -> str:
    """The run name every point of study `name` trains."""
    return study(name).run(params)


def jobs(params: Params, name: str, data: str, features: str) -> tuple[list[dict], list[FoldJob]]:
    points = grid(params, name)
    run = method(params, name)
    return (
        [row for row, _ in points],
        [
            FoldJob(
                run_setup(p, run), params.ablation.fold, data, features, evaluate=True, seed=params.experiment.seeds[0]
            )
            for _, p in points
        ],
    )


def results_table(rows: list[dict], outcomes: list[FoldOutcome]) -> pd.DataFrame:
    """One row per grid point: its settings, best validation MAP@R and epoch, test metrics, and for outer-loop
    methods the number of projections (sub-problems) and their mean length in steps."""
    table = []
    for row, out in zip(rows, outcomes):
        steps = [d["steps"] for d in out.diagnostics if "steps" in d]
        table.append(
            {
                **row,
                "best_epoch": out.best_epoch,
                "best_val_map_at_r": out.best_val_map_at_r,
                **{f"test_{k}": out.test_metrics[k] for k in TEST_METRICS},
                "projections": len(out.diagnostics) if out.diagnostics else float("nan"),
                "mean_steps_per_projection": sum(steps) / len(steps) if steps else float("nan"),
            }
        )
    return pd.DataFrame(table).dropna(axis=1, how="all")
