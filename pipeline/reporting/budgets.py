"""Did every run get its budget? Best and stop epochs, sub-problems / projections, runs cut while improving.

Read from the per-epoch training logs (reports/train_logs/<run>/<model>.csv; CCP runs log their current
sub-problem, PROFS runs their current projection). A model counts as **cut while improving** when it
stopped before its patience had run out, i.e. fewer than the run's patience epochs after its best
epoch: at the epoch cap (train.max_epochs) or at ccp.max_subproblems. Such a model might still have
improved, so a claim resting on it is flagged in the table.

A model **failed** (pipeline/reporting/rules.py ``failed``, the one rule for every compared arm) when it kept
epoch 0 or 1 (training left it at the untrained network, or it peaked after one epoch and fell away for the whole
patience), or when its validation MAP@R never rose above the untrained network's (epoch 0). Such a model measures a
failure of our settings for that fold, not the method: the claims table names it and tests its claim again without
it.

Did the patience itself decide anything? A model's trajectory does not depend on the patience (only
where it stops does), so early stopping with a shorter patience can be replayed on the logged curve:
``replay_shorter_patience`` says how many models would have kept an earlier, worse epoch and by how much
validation MAP@R. If a shorter patience costs little, the curves had flattened well before the stop.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from pipeline.reporting.rules import failed
from pipeline.runs import model_logs, model_name
from pipeline.training.stopping import cut_while_improving

UNITS = {"subproblem": "sub-problems", "projection": "projections"}  # log column -> what the table calls it


def read_logs(folder: Path, runs: list[str], models: list[tuple[int, int]]) -> pd.DataFrame:
    """Every epoch row of the given runs and models, with `run` and `model` columns."""
    frames = [
        t.assign(run=run, model=model_name(fold, seed))
        for run, fold, seed, t in model_logs(folder, runs, models, "training log")
    ]
    return (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["epoch", "val_map_at_r", "run", "model"])
    )


def per_model(logs: pd.DataFrame, patience: dict[str, int], min_delta: float) -> pd.DataFrame:
    """One row per (run, model): best (kept) epoch, stop epoch, outer-loop units (NaN for none), cut while improving,
    failed."""
    rows = []
    for (run, model), t in logs.groupby(["run", "model"], sort=False):
        best = int(t.epoch.iloc[_replay(t, math.inf, min_delta)[0]])  # the epoch early stopping kept
        stop = int(t.epoch.max())
        unit = next((c for c in UNITS if c in t and t[c].notna().any()), None)
        rows.append(
            {
                "run": run,
                "model": model,
                "best_epoch": best,
                "stop_epoch": stop,
                "unit": UNITS.get(unit, ""),
                "units": t[unit].max() if unit else float("nan"),
                "cut_while_improving": cut_while_improving(best, stop, patience[run]),
                "failed": failed(t.val_map_at_r.reset_index(drop=True), best),
            }
        )
    return pd.DataFrame(
        rows, columns=["run", "model", "best_epoch", "stop_epoch", "unit", "units", "cut_while_improving", "failed"]
    )


def failed_models(models: pd.DataFrame) -> frozenset[tuple[str, str]]:
    """(run, model) of every failed model, the model named as in the metrics files (``fold_<k>_seed_<s>``)."""
    rows = models[models.failed]
    return frozenset((r, m.replace("-", "_")) for r, m in zip(rows.run, rows.model))


def _spread(values: pd.Series) -> str:
    return f"{values.median():g} ({values.min():g}-{values.max():g})"


def budget_markdown(models: pd.DataFrame, patience: dict[str, int], max_epochs: dict[str, int]) -> str:
    """Per run: budget, best and stop epoch, outer-loop units per model (median, min-max), models cut."""
    out = [
        "| run | patience / max epochs | best epoch | stop epoch | sub-problems or projections per model "
        "| models cut while improving | failed models |",
        "|---|---|---|---|---|---|---|",
    ]
    for run, t in models.groupby("run", sort=False):
        units = f"{_spread(t.units)} {t.unit.iloc[0]}" if t.unit.iloc[0] else "-"
        cut = int(t.cut_while_improving.sum())
        lost = ", ".join(t.model[t.failed])
        out.append(
            f"| {run} | {patience[run]} / {max_epochs[run]} | {_spread(t.best_epoch)} | {_spread(t.stop_epoch)} "
            f"| {units} | {f'**{cut} of {len(t)}**' if cut else f'0 of {len(t)}'} | {f'**{lost}**' if lost else '-'} |"
        )
    return "\n".join(out) + "\n"


def poc_markdown(poc: dict) -> str:
    """Per variant of the 2-D proof of concept (reports/ccp_poc.json): each seed's best and stop epoch, why it
    stopped (patience, max_epochs: poc.max_epochs, method: poc.max_subproblems), its sub-problems, and whether it
    was cut while improving."""
    out = ["| variant | seed | best epoch | stop epoch | stopped by | sub-problems | cut while improving |"]
    out.append("|---|---|---|---|---|---|---|")
    for variant, result in poc.items():
        for seed, r in result["seeds"].items():
            cut = "**yes**" if r["cut_while_improving"] else "no"
            out.append(
                f"| {variant} | {seed.removeprefix('seed_')} | {r['best_epoch']} | {r['epochs']} | {r['stop_reason']} "
                f"| {r['subproblems']} | {cut} |"
            )
    return "\n".join(out) + "\n"


def _replay(t: pd.DataFrame, patience: float, min_delta: float) -> tuple[int, float]:
    """Early stopping with `patience` replayed on a logged curve (pipeline/training/loop.py's rule): the row of the
    epoch it keeps, the last one that beat the best so far by more than `min_delta`, and that epoch's validation
    MAP@R. A CCP run stops only where a sub-problem ends, a PROFS run only in an epoch where its projection
    count grows; with an infinite patience the whole logged curve is replayed."""
    values = t.val_map_at_r.to_numpy()
    unit = next((c for c in UNITS if c in t and t[c].notna().any()), None)
    marks = t[unit].to_numpy() if unit else None
    best, kept, stale = values[0], 0, 0
    for e in range(1, len(values)):
        if values[e] > best + min_delta:
            best, kept, stale = values[e], e, 0
        else:
            stale += 1
        at_boundary = (
            marks is None
            or e == len(values) - 1
            or (marks[e + 1] > marks[e] if unit == "subproblem" else marks[e] > marks[e - 1])
        )
        if stale >= patience and at_boundary:
            break
    return kept, best


def replay_shorter_patience(
    logs: pd.DataFrame, patience: dict[str, int], min_delta: float, shorter=(10, 20, 40)
) -> pd.DataFrame:
    """For each shorter patience P (below a run's own): the models that would have kept an earlier epoch, and
    the mean and largest loss of validation MAP@R (points) against what the run's own patience kept. The default
    list holds 20, the earlier protocol's patience (500 steps against MLRC's 1,800), so the report shows what it cut."""
    rows = []
    for p in shorter:
        lost = []
        for (run, _), t in logs.groupby(["run", "model"], sort=False):
            if p < patience[run]:
                kept = _replay(t, patience[run], min_delta)[1]
                lost.append(100 * (kept - _replay(t, p, min_delta)[1]))
        if lost:
            s = pd.Series(lost)
            rows.append(
                {
                    "patience": p,
                    "models": len(s),
                    "models_stopping_earlier": int((s > 0).sum()),
                    "mean_val_map_at_r_lost": s.mean(),
                    "max_val_map_at_r_lost": s.max(),
                }
            )
    return pd.DataFrame(rows)


def replay_markdown(table: pd.DataFrame, decimals: int) -> str:
    if table.empty:
        return "No shorter patience to replay.\n"
    out = [
        "| patience | models | would keep an earlier epoch | validation MAP@R lost: mean | max |",
        "|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        out.append(
            f"| {int(r.patience)} | {int(r.models)} | {int(r.models_stopping_earlier)} "
            f"| {r.mean_val_map_at_r_lost:.{decimals}f} "
            f"| {r.max_val_map_at_r_lost:.{decimals}f} |"
        )
    return "\n".join(out) + "\n"
