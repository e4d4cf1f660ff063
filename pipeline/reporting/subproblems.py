"""CCP sub-problem diagnostics: steps per projection (Fig. 4b) and covering radius (Prop. 4.2)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipeline.runs import model_logs, model_name


def read_subproblems(folder: Path, runs: list[str], models: list[tuple[int, int]]) -> pd.DataFrame:
    """All sub-problem rows of the given runs and (fold, seed) models, with `run`, `fold`, `seed` and
    `model` columns."""
    frames = [
        t.assign(run=run, fold=fold, seed=seed, model=model_name(fold, seed))
        for run, fold, seed, t in model_logs(folder, runs, models, "sub-problem log")
        if len(t)
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def summary_markdown(rows: pd.DataFrame, decimals: int) -> str:
    """Per run, over its models: sub-problems, steps per sub-problem, covering radius of the first and last
    one, and how far the proxies moved from their K-center positions (first epoch, whole sub-problem)."""
    if rows.empty:
        return "No run with proxies was trained.\n"
    out = [
        "| run | models (folds x seeds) | sub-problems per model (median, min-max) | steps per sub-problem "
        "(median, min-max) | covering radius max: first → last | covering radius mean: first → last "
        "| proxy shift in the first epoch (mean / max) | proxy shift by the end (mean / max) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    f = f".{decimals + 1}f"

    def shift(t, column):
        if t[f"{column}_mean"].isna().all():
            return "-"  # sample-based CCP: its anchors are samples, not trained proxies
        return f"{t[f'{column}_mean'].mean():{f}} / {t[f'{column}_max'].max():{f}}"

    for run, t in rows.groupby("run", sort=False):
        per_model = t.groupby("model")
        first, last, count = per_model.first(), per_model.last(), per_model.size()
        out.append(
            f"| {run} | {t.model.nunique()} | {count.median():g} ({count.min()}-{count.max()}) | "
            f"{t.steps.median():.0f} ({t.steps.min()}-{t.steps.max()}) | "
            f"{first.covering_radius_max.mean():{f}} → {last.covering_radius_max.mean():{f}} | "
            f"{first.covering_radius_mean.mean():{f}} → {last.covering_radius_mean.mean():{f}} | "
            f"{shift(t, 'proxy_shift_first_epoch')} | {shift(t, 'proxy_shift')} |"
        )
    return "\n".join(out) + "\n"


def detail_markdown(rows: pd.DataFrame, run: str, fold: int, seed: int, decimals: int) -> str:
    """Every sub-problem of one run's model (fold, seed)."""
    t = rows[(rows.run == run) & (rows.model == model_name(fold, seed))]
    f = f".{decimals + 1}f"
    out = [
        f"### {run}, fold {fold}, seed {seed}\n",
        "| sub-problem | epochs | steps | lambda | best val MAP@R (%) | "
        "radius after K-center (max / mean) | radius at the end (max / mean) | proxy shift: first epoch / end "
        "(mean) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in t.iterrows():
        shift = (
            "-" if pd.isna(r.proxy_shift_mean) else f"{r.proxy_shift_first_epoch_mean:{f}} / {r.proxy_shift_mean:{f}}"
        )
        out.append(
            f"| {r.subproblem} | {r.epochs} | {r.steps} | {r['lambda']:g} | {100 * r.best_val_map_at_r:.{decimals}f} | "
            f"{r.initial_radius_max:{f}} / {r.initial_radius_mean:{f}} | "
            f"{r.covering_radius_max:{f}} / {r.covering_radius_mean:{f}} | {shift} |"
        )
    return "\n".join(out) + "\n"
