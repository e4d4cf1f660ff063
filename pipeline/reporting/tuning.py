"""reports/tuning.md and figures/tuning_history.png: what MLRC's tuning step chose, from reports/tuning/<run>.json."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.config import dotted, to_dict
from pipeline.config.loader import STUDY
from pipeline.params.root import Params
from pipeline.reporting.figures import plt, save
from pipeline.studies.tuning import completed

EDGE = 0.05  # a best value this close to a range's end (fraction of its width) is flagged: the optimum may lie beyond
LATE = 0.2  # a study whose best trial is among its last 20 % of trials is flagged: its history had not flattened


def _range(dim: dict) -> str:
    kind = "int " if dim["integer"] else ("log " if dim["log"] else "")
    above = f" above `{dim['above']}`" if dim.get("above") else ""
    return f"{kind}[{dim['low']:g}, {dim['high']:g}]{above}"


def drawn(values: dict[str, float], key: str, dim: dict) -> float:
    """What the search drew for `key` at `values` (a run's used values): the value, or its excess over the key it is
    kept above (pipeline/studies/tuning.py `applied`), which its range bounds."""
    return values[key] - values[dim["above"]] if dim.get("above") else values[key]


def range_end(value: float, dim: dict) -> str:
    """The end of the range (`low` / `high`) that `value` lies within EDGE of, on the scale the sampler draws on
    (logarithmic for a log range); an empty string when it lies inside."""
    scale = math.log if dim["log"] else float
    low, high = scale(dim["low"]), scale(dim["high"])
    position = (scale(value) - low) / (high - low)
    return "low" if position <= EDGE else ("high" if position >= 1 - EDGE else "")


def at_limit(record: dict, key: str, end: str) -> bool:
    """Whether the `end` ("low" / "high") of `key`'s range in `record`'s study is the key's own limit: the bound
    the schema puts on it (pipeline/studies/values.py `limits`: a margin's 0, a cosine radius's 1; or the top of
    the paper's reading of the key, PROFS's lambda's 1: pipeline/studies/tuning.py READING_TOPS), or a best value at
    which the key changes nothing (`inert_while`: PROFS's rho and lambda where M is 1). The search covered every
    model the key gives on that side, so a best value there is the loss's edge, not a clipped search."""
    limits = record.get("limits", {}).get(key)
    if not end or not limits:
        return False
    limit = limits[0 if end == "low" else 1]
    when = record.get("inert_while", {}).get(key, {})
    values = record["values"]
    inert = bool(when) and all(k in values and values[k] <= bound for k, bound in when.items())
    return inert or (limit is not None and limit == record["space"][key][end])


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
                    "range": _range(r["space"][key]) if own else f"from `{r['inherits']}`",
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


def late_studies(records: list[dict]) -> dict[str, dict]:
    """The studies whose best trial lies among their last LATE share of trials (at least the last one), so that
    more trials may still find a better value: run -> best trial, trials, and the gain of that last improvement
    over the best before it (validation MAP@R points)."""
    late = {}
    for r in records:
        trials, best = r["trials"], r.get("best_trial")
        if trials > 1 and best is not None and best >= trials - max(1, round(LATE * trials)):
            before = max(t["val_map_at_r"] for t in completed(r["history"]) if t["trial"] < best)
            gain = 100 * (r["best_val_map_at_r"] - before)
            late[r["run"]] = {"best_trial": best, "trials": trials, "gain": gain}
    return late


def runs_still_improving(records: list[dict]) -> dict[str, list[str]]:
    """Per run, the studies among its own and those it inherits values from that were still improving
    (`late_studies`): a claim on such a run is measured at a search that had not flattened."""
    late = late_studies(records)
    by_run = {r["run"]: r for r in records}
    flagged = {}
    for r in records:
        chain, record = [], r
        while record is not None:
            if record["run"] in late:
                chain.append(record["run"])
            record = by_run.get(record["inherits"])
        if chain and r["values"]:
            flagged[r["run"]] = chain
    return flagged


UNTUNED = "untuned"
UNFINISHED = "tuning unfinished"
USER = "user values"  # an arm trained at a value set in params.yaml: the user's experiment, no equal-effort comparison


def study_flaw(record: dict | None) -> tuple[str, list[str]]:
    """What keeps a run's tuning from counting under the equal-effort rule (MLRC): (USER, why) when a key of its
    space was set in params.yaml (pipeline/studies/values.py); (UNTUNED, why) when it
    has no study of its own or trains at values another run's study chose; (UNFINISHED, why) when a value of its
    study lies within EDGE of an end of its range that is not the key's own limit (`at_limit`), its best trial is
    among the last LATE share of its trials (`late_studies`) or a trial was cut by the epoch cap
    (`capped_trials`); ("", []) when none of these."""
    if record is None:
        return UNTUNED, ["no tuning record"]
    if record.get("user_set"):
        return USER, [f"{key} = {value:g} set in params.yaml" for key, value in record["user_set"].items()]
    if record["inherited"]:
        own = "" if record["trials"] else ", no study of its own"
        return UNTUNED, [f"{', '.join(record['inherited'])} from {record['inherits']}'s study{own}"]
    if not record["trials"]:
        return UNTUNED, ["no study (trained at params.yaml's values)"]
    space, values = record["space"], record["values"]
    why = [
        f"{key} at its {end} end"
        for key in values
        if key in space
        and (end := range_end(drawn(values, key, space[key]), space[key]))
        and not at_limit(record, key, end)
    ]
    late = late_studies([record]).get(record["run"])
    if late:
        why.append(f"best at trial {late['best_trial']} of {late['trials']}")
    capped = capped_trials(record)
    if capped:
        why.append(f"{_trials(capped)} cut by the epoch cap")
    return (UNFINISHED, why) if why else ("", [])


def unequal_searches(base: dict, better: dict) -> list[str]:
    """Where a claim's arms did not search alike (MLRC's equal effort: one search space for the keys the arms
    share): a key of the base arm's study that is not its own (outside `baselines.<run>.`, i.e. a key of the
    family both arms train with) but that the better arm's study did not search, or searched over another range.
    The better arm's variant keys (CCP's lambda and pool size, PROFS's lambda and rho) are its own to add."""
    why = []
    for key, dim in base["space"].items():
        if key.startswith(f"baselines.{base['run']}."):
            continue
        other = better["space"].get(key)
        if other is None:
            why.append(f"{better['run']}: {key} not searched ({base['run']} searched it)")
        elif other != dim:
            why.append(f"{key} searched on {_range(dim)} by {base['run']}, {_range(other)} by {better['run']}")
    return why


def _trials(numbers: list[int]) -> str:
    return f"trial{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"


def capped_trials(record: dict) -> list[int]:
    """The trials of a study in which a fold model stopped at the epoch cap: their score is a clipped one."""
    return [t["trial"] for t in record["history"] if t.get("capped")]


def claim_tuning(records: dict[str, dict], base: str, better: str) -> tuple[str, str]:
    """(verdict, why) that the tuning of a claim's two arms imposes, or ("", "") when both ran studies of their own
    with the same number of trials over the same searches (`unequal_searches`) and neither is unfinished
    (`study_flaw`): an arm at a value set in params.yaml is USER (an experiment, not the papers' comparison); an arm
    tuned less than the other, or not at all, is UNTUNED; an arm whose search hit a range end
    or was still improving is UNFINISHED."""
    flaws = {run: study_flaw(records.get(run)) for run in (base, better)}
    user = [f"{run}: {'; '.join(why)}" for run, (flaw, why) in flaws.items() if flaw == USER]
    if user:
        return USER, "; ".join(user)
    untuned = [f"{run}: {'; '.join(why)}" for run, (flaw, why) in flaws.items() if flaw == UNTUNED]
    if untuned:
        return UNTUNED, "; ".join(untuned)
    if records[base]["trials"] != records[better]["trials"]:
        return UNTUNED, f"{base}: {records[base]['trials']} trials, {better}: {records[better]['trials']}"
    unequal = unequal_searches(records[base], records[better])
    if unequal:
        return UNTUNED, "; ".join(unequal)
    unfinished = [f"{run}: {'; '.join(why)}" for run, (flaw, why) in flaws.items() if flaw == UNFINISHED]
    return (UNFINISHED, "; ".join(unfinished)) if unfinished else ("", "")


def _written(value) -> str:
    return value if isinstance(value, str) else f"{value:.4g}"


def tuning_markdown(params: Params, records: list[dict], decimals: int) -> str:
    """The table per data set, and the runs that trained at params.yaml's values."""
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
    late = late_studies(records)
    if late:
        text += (
            f"\nBest trial among the last {LATE:.0%} of the study's trials (its history had not flattened, so more "
            "trials may find a better value; MLRC ran 50): "
            + ", ".join(
                f"`{run}` (trial {v['best_trial']} of {v['trials']}, {v['gain']:+.{decimals}f} over the best before it)"
                for run, v in late.items()
            )
            + ". The runs that inherit their values are flagged with their source in claims.md.\n"
        )
    capped = {r["run"]: trials for r in records if (trials := capped_trials(r))}
    if capped:
        text += (
            "\nTrials in which a fold model stopped at the epoch cap (its score is a clipped one; raise "
            "`train.max_epochs` for the data set, and a new study, `<study>-epochs<cap>` at the raised cap, runs "
            "every trial again): " + ", ".join(f"`{run}` ({_trials(t)})" for run, t in capped.items()) + ".\n"
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
