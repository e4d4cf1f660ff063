"""The ablation studies as grids of training jobs (one model each: ``ablation.fold`` with the first of
``experiment.seeds``) and the table of their results.

- ``ccp``: CCP Fig. 5, #proxy per class x pool size b (b = factor x #proxy, factor 1 = random proxy
  selection), and a sweep of the projection regulariser lambda (eq. 4.10), on ``<ablation.ccp.loss>_ccp``;
- ``profs``: PROFS Fig. 3, a sweep of lambda (eq. 4.7), and Fig. 2, a sweep of a fixed number of steps M
  per projection, on ``<ablation.profs.loss>_profs``.
Every other setting comes from the ``ccp`` / ``profs`` sections, so a grid point with the section's own
values is the pipeline's run on that fold.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from pipeline.params.root import Params
from pipeline.runs import run_setup
from pipeline.training.jobs import FoldJob, FoldOutcome

STUDIES = ("ccp", "profs")
TEST_METRICS = ("map_at_r", "r_precision", "precision_at_1")


def grid(params: Params, study: str) -> list[tuple[dict, Params]]:
    """(grid point as a row of settings, the params that train it) for every point of `study`."""
    if study == "ccp":
        a, cfg = params.ablation.ccp, params.ccp

        def point(sweep, proxies, pool, lambda_):
            row = {"sweep": sweep, "proxies_per_class": proxies, "pool_size": pool, "lambda": lambda_}
            return row, replace(params, ccp=replace(cfg, proxies_per_class=proxies, pool_size=pool, lambda_=lambda_))

        return [point("proxies_pool", p, f * p, cfg.lambda_) for p in a.proxies_per_class for f in a.pool_factors] + [
            point("lambda", cfg.proxies_per_class, cfg.pool_size, lambda_) for lambda_ in a.lambdas
        ]
    if study == "profs":
        a, cfg = params.ablation.profs, params.profs

        def point(sweep, mode, m, lambda_):
            row = {"sweep": sweep, "m_mode": mode, "m": m, "lambda": lambda_}
            return row, replace(params, profs=replace(cfg, m_mode=mode, m=m, lambda_=lambda_))

        return [point("lambda", cfg.m_mode, cfg.m, lambda_) for lambda_ in a.lambdas] + [
            point("m", "fixed", m, cfg.lambda_) for m in a.m
        ]
    raise ValueError(f"unknown ablation study {study!r} (valid: {', '.join(STUDIES)})")


def method(params: Params, study: str) -> str:
    """The run name every point of `study` trains."""
    return f"{params.ablation.ccp.loss}_ccp" if study == "ccp" else f"{params.ablation.profs.loss}_profs"


def jobs(params: Params, study: str, data: str, features: str) -> tuple[list[dict], list[FoldJob]]:
    points = grid(params, study)
    name = method(params, study)
    return (
        [row for row, _ in points],
        [
            FoldJob(
                run_setup(p, name), params.ablation.fold, data, features, evaluate=True, seed=params.experiment.seeds[0]
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
