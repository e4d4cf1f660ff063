"""reports/tuning.md and figures/tuning_history.png: what MLRC's tuning step chose, from reports/tuning/<run>.json."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.config import dotted, to_dict
from pipeline.config.loader import STUDY
from pipeline.params.root import Params
from pipeline.reporting.figures import plt, save
from pipeline.reporting.rules import (
    EDGE,
    LATE,
    USER,
    at_limit,
    capped_trials,
    drawn,
    late_gain,
    range_end,
    range_text,
    trials_text,
    unconverged,
)
from pipeline.reporting.selection import Noise, tolerance
from pipeline.studies.tuning import completed


def _searching_record(by_run: dict[str, dict], run: str, key: str) -> dict | None:
    """The record of the study that searched `key` for `run`: its own or the nearest run's it inherits from."""
    record = by_run.get(run)
    while record is not None:
        if key in record["space"] and record["trials"] > 0:
            return record
        record = by_run.get(record["inherits"])
    return None


def tuning_frame(params: Params, records: list[dict]) -> pd.DataFrame:
    """One row per run and tuned, inherited or user-set key: the written value (params.yaml's: ``study``, or the
    number the user set, which the run trains at) and the used one, the range, the study's best, the end of the
    range (its own or its source's) the value lies at, if any, and whether that end is the key's own limit
    (`at_limit`)."""
    written = to_dict(params)
    by_run = {r["run"]: r for r in records}
    rows = []
    for r in records:
        best = None if r["best_val_map_at_r"] is None else 100 * r["best_val_map_at_r"]
        for key, value in {**r["values"], **r.get("user_set", {})}.items():
            if key in r.get("user_set", {}):
                rows.append(
                    {"run": r["run"], "key": key, "written": value, "used": value, "range": "set in params.yaml"}
                )
                continue
            own = key in r["space"] and r["trials"] > 0
            source = _searching_record(by_run, r["run"], key)
            end = range_end(drawn(r["values"], key, source["space"][key]), source["space"][key]) if source else ""
            rows.append(
                {
                    "run": r["run"],
                    "key": key,
                    "written": STUDY if key in params.tune.studied else dotted(written, key),
                    "used": value,
                    "range": range_text(r["space"][key]) if own else f"from `{r['inherits']}`",
                    "best_val_map_at_r": best if own else np.nan,
                    "trials": r["trials"] if own else 0,
                    "best_trial": r.get("best_trial") if own else None,
                    "range_end": end,
                    "at_limit": bool(source) and at_limit(source, key, end),
                }
            )
    columns = [
        "run",
        "key",
        "written",
        "used",
        "range",
        "best_val_map_at_r",
        "trials",
        "best_trial",
        "range_end",
        "at_limit",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.fillna({"best_val_map_at_r": np.nan, "trials": 0, "range_end": "", "at_limit": False})


def _written(value) -> str:
    return value if isinstance(value, str) else f"{value:.4g}"


def tuning_markdown(params: Params, records: list[dict], decimals: int, noise: Noise | None) -> str:
    """The table per data set, the flags its values raise (range ends, convergence against `noise`, capped trials),
    and the runs that trained at user or params.yaml's values."""
    frame = tuning_frame(params, records)
    untuned = [r["run"] for r in records if not r["values"]]
    if frame.empty:
        return (
            "No run was tuned (`tune.trials` is 0 or no run has a space): every run trained at params.yaml's values.\n"
        )
    lines = [
        "| run | key | params.yaml | tuned (used) | search range | best val MAP@R (%) | trials (best at) |",
        "|---|---|---|---|---|---|---|",
    ]
    previous = None
    for row in frame.itertuples():
        first = row.run != previous
        previous = row.run
        score = f"{row.best_val_map_at_r:.{decimals}f}" if np.isfinite(row.best_val_map_at_r) else ""
        trials = f"{row.trials} ({int(row.best_trial)})" if row.trials else ""
        end = f" **at its {row.range_end} end**" if row.range_end and not row.at_limit else ""
        end = f" at its {row.range_end} end, the key's own limit" if row.at_limit else end
        lines.append(
            f"| {'`' + row.run + '`' if first else ''} | `{row.key}` | {_written(row.written)} | **{row.used:.4g}** "
            f"| {row.range}{end} | {score} | {trials} |"
        )
    text = "\n".join(lines) + "\n"
    at_end = frame[(frame.range_end != "") & ~frame.at_limit]
    if len(at_end):
        text += (
            f"\nBest value within {EDGE:.0%} of an end of its range (on the sampler's scale): "
            + ", ".join(f"`{row.run}` `{row.key}` ({row.range_end})" for row in at_end.itertuples())
            + ". The optimum may lie beyond it, so a claim on such a run is measured at a clipped search: widen the"
            " range in `tune.spaces` (a changed space starts a new study).\n"
        )
    at_limit_rows = frame[frame.at_limit]
    if len(at_limit_rows):
        text += (
            f"\nBest value within {EDGE:.0%} of a range end that is the key's own limit (the bound its schema puts"
            " on it, where the loss stops meaning what it says: a margin below 0, a cosine radius above 1; the top"
            " of the paper's reading of the key: PROFS's small lambda, at most 1; or a value at which the key changes"
            " nothing: PROFS's rho and lambda where M is 1): "
            + ", ".join(f"`{row.run}` `{row.key}` ({row.range_end})" for row in at_limit_rows.itertuples())
            + ". The search covered every model the key gives on that side, so no wider range would find another;"
            " the value is the loss's edge, not a clipped search, and does not make the tuning unfinished.\n"
        )
    text += convergence_markdown(records, noise, decimals, params.report.convergence_sigmas)
    capped = {r["run"]: trials for r in records if (trials := capped_trials(r))}
    if capped:
        text += (
            "\nTrials in which a fold model stopped at the epoch cap (its score is a clipped one; raise "
            "`train.max_epochs` for the data set, and a new study, `<study>-epochs<cap>` at the raised cap, runs "
            "every trial again): " + ", ".join(f"`{run}` ({trials_text(t)})" for run, t in capped.items()) + ".\n"
        )
    user = {r["run"]: r["user_set"] for r in records if r.get("user_set")}
    if user:
        text += (
            "\nTrained at values set in params.yaml instead of their studies' (a claim with such an arm reads "
            f"**{USER}**: an experiment, not the papers' comparison): "
            + ", ".join(f"`{run}` ({', '.join(f'{k} = {v:g}' for k, v in keys.items())})" for run, keys in user.items())
            + ".\n"
        )
    if untuned:
        text += (
            "\nTrained at params.yaml's values, no study's (no search space, or `tune.trials` 0: a key that reads "
            "`study` takes its `tune.start` value): " + ", ".join(f"`{r}`" for r in untuned) + ".\n"
        )
    return text


def convergence_markdown(records: list[dict], noise: Noise | None, decimals: int, sigmas: float) -> str:
    """Each study whose last LATE share of trials raised its best (rules.late_gain), and whether that gain is within
    `sigmas` times the noise (rules.unconverged): converged, or not and why."""
    sigma = None if noise is None else noise.sigma
    bound = tolerance(noise, sigmas)
    late = {r["run"]: (g, unconverged(r, bound)) for r in records if (g := late_gain(r))}
    if not late:
        return f"\nNo study's last {LATE:.0%} of trials raised its best: every study had converged.\n"
    measured = f"{sigma:.{decimals}f}" if noise else "not measured (one seed)"
    lines = [
        f"\nConvergence: a study converged when its last {LATE:.0%} of trials raised its best by at most "
        f"{sigmas:g} x the noise of one trial's score (sigma = {measured} points, report.convergence_sigmas; the rule "
        "and its anchors: docs/results.md). The studies "
        "whose last trials raised their best:\n",
        "| study | best at trial (of) | gain of its last trials (points) | converged |",
        "|---|---|---|---|",
    ]
    for run, (g, why) in late.items():
        verdict = "**no**: more trials may still gain" if why else "yes: within the noise"
        lines.append(
            f"| `{run}` | {g['best_trial']} ({g['trials']}) | {g['gain']:+.{decimals}f} (last {g['window']}) "
            f"| {verdict} |"
        )
    return "\n".join(lines) + "\n"


def selection_markdown(table: pd.DataFrame, noise: Noise | None, seeds: list[int], decimals: int) -> str:
    """Per run: the chosen configuration's validation MAP@R (its first seed, which reproduces its study's best trial)
    beside its rerun with the other seeds (pipeline/reporting/selection.py), and the noise they measure."""
    if noise is None:
        return "One replicate seed: no rerun of the chosen configurations, so the noise is not measured.\n"
    f = f".{decimals}f"
    lines = [
        f"| run | chosen: seed {seeds[0]} (%) | rerun: seed {', '.join(map(str, seeds[1:]))} (%) | rerun - chosen |",
        "|---|---|---|---|",
    ]
    lines += [f"| `{r.run}` | {r.chosen:{f}} | {r.rerun:{f}} | {r.diff:+{f}} |" for r in table.itertuples()]
    curse = (
        f"The rerun scored below the chosen score in {noise.below} of {noise.runs} runs (mean "
        f"{noise.mean_diff:+{f}} points): a study's best validation score is biased up by the selection (the winner's "
        "curse), so read the test metrics, on which nothing was selected. The spread measures the noise of one trial's "
        f"score: sigma = sd(rerun - chosen) / sqrt(2) = **{noise.sigma:{f}}** points over the {noise.runs} runs."
    )
    return "\n".join(lines) + f"\n\n{curse}\n"


def history_figure(records: list[dict], startup_trials: int, path: Path) -> None:
    """Validation MAP@R of every trial and the best so far, one panel per tuned run (Optuna's history plot)."""
    tuned = [r for r in records if r["history"]]
    cols = min(4, max(1, len(tuned)))
    rows = max(1, -(-len(tuned) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(max(8.0, 4.2 * cols), 3.0 * rows), squeeze=False)
    for ax in axes.flat[len(tuned) :]:
        ax.axis("off")
    if not tuned:
        axes[0][0].axis("off")
        axes[0][0].text(
            0.5,
            0.5,
            "no run was tuned (tune.trials = 0): every run trained at\n"
            "params.yaml's values, tune.start's for the searched keys",
            ha="center",
            va="center",
        )
    for ax, r in zip(axes.flat, tuned):
        done = completed(r["history"])
        cut = [t for t in r["history"] if t["val_map_at_r"] is None]
        values = 100 * np.array([t["val_map_at_r"] for t in done])
        trials = np.array([t["trial"] for t in done])
        ax.scatter(trials, values, s=12, color="tab:blue", label="trial")
        if cut:  # a pruned trial has no value: marked along the bottom
            bottom = [values.min()] * len(cut)
            ax.scatter([t["trial"] for t in cut], bottom, s=14, marker="x", color="grey", label="pruned")
        ax.step(trials, np.maximum.accumulate(values), where="post", color="tab:red", label="best so far")
        ax.axvline(min(startup_trials, len(r["history"])) - 0.5, color="grey", ls=":", lw=0.8)
        ax.set_title(r["run"], fontsize=10)
        ax.set_xlabel("trial (dotted: random start ends)", fontsize=8)
        ax.set_ylabel("val MAP@R (%)", fontsize=8)
    if tuned:
        axes.flat[0].legend(fontsize=7, loc="lower right")
    fig.suptitle("MLRC's tuning step: mean validation MAP@R over the folds per trial", fontsize=11)
    save(fig, path, rect=(0, 0, 1, 0.96))


def runs_at_range_ends(params: Params, records: list[dict]) -> dict[str, list[str]]:
    """Per run, the keys whose used value (tuned or inherited) lies at an end of the range it was searched on that
    is not the key's own limit (`at_limit`)."""
    frame = tuning_frame(params, records)
    frame = frame[(frame.range_end != "") & ~frame.at_limit]
    return {run: list(group.key) for run, group in frame.groupby("run", sort=False)}
