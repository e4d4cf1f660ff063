"""studies/<data.name>/README.md: every study record in the folder, in two tables, written by `dml studies` (and
after each `dml tune`).

The first table holds the study each run trains at under the current params.yaml (the record the values stage
reads: pipeline/studies/tuning.py kept_study). The second holds every other record: an earlier search of the same
run, kept because its trials are evidence. For each, how its search space differs from the current one; the same
space means other settings (its study name's fingerprint: data, budget, the run's fixed keys).
"""

from __future__ import annotations

from pathlib import Path

from pipeline.config import apply_values
from pipeline.infra.io import read_json
from pipeline.params.root import Params
from pipeline.studies.tuning import PARTIAL, applied, completed, kept_study, tuning_order


def current_studies(params: Params, folder: Path) -> dict[str, str]:
    """run -> the name of the study it trains at under `params` (runs with a space and a kept record), in tuning
    order; a run that inherits values takes them from its source's kept study, as the values stage does."""
    names, values = {}, {}
    for run in tuning_order(params):
        space = params.tune.spaces.get(run)
        if not space:
            continue
        inherited = values.get(params.tune.inherit.get(run), {})
        fixed = apply_values(params, inherited, source=f"values {run} inherits") if inherited else params
        kept = kept_study(folder, fixed, run, inherited or None)
        if kept is None or not completed(kept[1]) or not (folder / f"{kept[0]}.json").is_file():
            continue  # no record, or one whose trials the epoch cap altered: the run has no study here yet
        names[run] = kept[0]
        best = max(completed(kept[1]), key=lambda t: t["val_map_at_r"])
        values[run] = {**inherited, **applied(best["values"], space)}
    return names


def _number(value: float) -> str:
    return f"{value:.3g}"


def _range(dim: dict) -> str:
    return f"[{_number(dim['low'])}, {_number(dim['high'])}]" + (" log" if dim.get("log") else "")


def space_change(old: dict, new: dict) -> str:
    """How search space `old` differs from `new` ({key: {low, high, log, integer}}), key by key."""
    changes = [
        f"{key} {_range(old[key]) if key in old else 'not searched'} "
        f"(now {_range(new[key]) if key in new else 'not searched'})"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]
    return "; ".join(changes) or "the same space, other settings"


def _row(record: dict) -> str:
    values = ", ".join(f"{k.split('.')[-1]} {_number(v)}" for k, v in sorted(record["values"].items()))
    best = record.get("best_val_map_at_r")
    score = "-" if best is None else f"{best:.4f}"
    trial = record.get("best_trial", "-")
    return f"| {record['run']} | `{record['study']}` | {record['trials']} | {trial} | {score} | {values}"


def catalogue_markdown(params: Params, folder: Path) -> str:
    """The folder's README (module docstring)."""
    records = [read_json(p) for p in sorted(folder.glob("*.json")) if not p.name.endswith(f"{PARTIAL}.json")]
    current = current_studies(params, folder)
    used = set(current.values())
    spaces = {r["study"]: r.get("space", {}) for r in records}
    head = "| run | study | trials | best trial | validation MAP@R | chosen values |"
    lines = [
        f"# Studies of `{params.data.name}`",
        "",
        "Written by `dml studies` from the records in this folder (pipeline/studies/catalogue.py). The values stage "
        "reads the first table's studies; the second's are other searches of the same runs, kept as evidence. "
        "Every trial of a study is in its record's `history`.",
        "",
        "## The studies the runs train at",
        "",
        head,
        "|---|---|---:|---:|---:|---|",
        *[_row(r) + " |" for run in current for r in records if r["study"] == current[run]],
        "",
        "## Other records",
        "",
        head + " how its space differs |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for r in records:
        if r["study"] not in used:
            now = spaces.get(current.get(r["run"]))
            change = "no current study of this run" if now is None else space_change(r.get("space", {}), now)
            lines.append(f"{_row(r)} | {change} |")
    return "\n".join(lines) + "\n"
