"""`dml experiments`: the experiments of `dvc exp show` as a person reads them, at most 100 columns wide.

`dvc exp show --only-changed` puts every column that varies side by side: dependency hashes first (data/ablations,
pipeline/...), then the params and, for this project, three headline metrics per run (87 for the digit default), so
at 80 or 120 columns a reader sees hashes only. This view turns the table: one column per experiment (the
workspace, the commit, its experiments, newest last) and one row per param that varies, then, for each run that an
experiment (or the workspace) trained and whose headline metrics vary, its validation MAP@R (choose by it, never by
test), test MAP@R and P@1. A run only the commit holds (the committed default's, beside experiments on your own data)
is left out, and so are dependency hashes and the params no experiment changed. The first row, where it varies,
names the runs that trained at a user value: a searched key (``tune.spaces``) set to a number instead of ``study``
(`dvc exp run -S ccp.lambda=1e-3`; pipeline/studies/values.py). A value too long for its column
(a folder in `data.source`) shows as a note mark, `[1]`, and is printed in full under the table. The numbers are
`dvc exp show --json`'s (DVC's own reading of params.yaml and reports/headline_metrics.json), rounded to 4 digits.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from pipeline.config import dotted
from pipeline.config.loader import STUDY
from pipeline.infra.errors import PipelineError

METRICS_FILE = "reports/headline_metrics.json"
METRIC_ROWS = (("val_map_at_r", "val MAP@R"), ("map_at_r", "test MAP@R"), ("precision_at_1", "P@1"))
USER_ROW = "(runs at user values)"  # sorts before every param
WIDTH, LABEL, CELL = 100, 28, 12
FITS = (WIDTH - LABEL) // CELL  # experiment columns in WIDTH


def shown_experiments(repo: str = ".") -> list[dict]:
    """`dvc exp show --json` in `repo`: the workspace, the commit and its experiments (DVC's nesting)."""
    # this interpreter's DVC (the package's dependency): no `dvc` on PATH needed
    done = subprocess.run(
        [sys.executable, "-m", "dvc", "exp", "show", "--json"], cwd=repo, capture_output=True, text=True
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise PipelineError(f"dvc exp show failed in {repo}: {last}")
    return json.loads(done.stdout)


def _flat(tree: dict, prefix: str = "") -> dict[str, object]:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def user_value_runs(params: dict, trained: dict) -> str | None:
    """The runs of `trained` (headline metrics) whose searched keys include one that params.yaml's tree `params` sets
    to a number, comma-separated ("-" for none); None for a params.yaml without ``tune.start`` (older than `study`)."""
    tune = params.get("tune") or {}
    if "start" not in tune:
        return None
    spaces = tune.get("spaces") or {}
    runs = [r for r in trained if any(dotted(params, key) != STUDY for key in spaces.get(r) or {})]
    return ", ".join(sorted(runs)) or "-"


def columns(shown: list[dict]) -> list[tuple[str, dict, dict, bool]]:
    """(name, flat params, headline metrics, is a commit) of the workspace, each commit and its experiments, in DVC's
    order."""
    found = []

    def add(name: str, data: dict, commit: bool) -> None:
        params = {}
        for file, content in (data.get("params") or {}).items():
            params.update(_flat((content or {}).get("data") or {}, "" if file == "params.yaml" else f"{file}:"))
        metrics = ((data.get("metrics") or {}).get(METRICS_FILE) or {}).get("data") or {}
        tree = (((data.get("params") or {}).get("params.yaml") or {}).get("data")) or {}
        if (user := user_value_runs(tree, metrics)) is not None:
            params[USER_ROW] = user
        found.append((name, params, metrics, commit))

    for entry in shown:
        workspace = entry["rev"] == "workspace"
        name = entry.get("name") or (entry["rev"] if workspace else entry["rev"][:7])
        add(name, entry.get("data") or {}, not workspace)
        for experiment in entry.get("experiments") or []:
            for rev in experiment.get("revs") or []:
                add(rev.get("name") or rev["rev"][:7], rev.get("data") or {}, False)
    return found


def _text(value) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3g}"
    return "-" if value is None else json.dumps(value) if isinstance(value, list) else str(value)


def _varies(values: list) -> bool:
    return len({json.dumps(v, default=str) for v in values}) > 1


def experiments_table(shown: list[dict], last: int = FITS) -> str:
    """The view (module docstring) of the newest `last` columns (the workspace and the commit always shown; at most
    as many as fit in WIDTH)."""
    found = columns(shown)
    last = max(2, min(last, FITS))
    if len(found) > last:
        found = found[:2] + found[2:][-(last - 2) :]
    names = [name for name, _, _, _ in found]
    varying = sorted({k for _, p, _, _ in found for k in p if _varies([q.get(k) for _, q, _, _ in found])})
    trained = {r for _, _, m, commit in found if not commit for r in m}  # by the workspace or an experiment
    notes: list[str] = []

    def cell(value, key: str = "") -> str:
        text = _text(value)
        if len(text) < CELL:
            return f"{text:>{CELL}}"
        if key:  # a param: in full under the table
            notes.append(f"{key} = {text}")
            return f"{f'[{len(notes)}]':>{CELL}}"
        return f"{text[: CELL - 2] + '…':>{CELL}}"

    def label(text: str) -> str:
        return f"{text if len(text) < LABEL else '…' + text[-(LABEL - 2) :]:<{LABEL}}"

    lines = [label("") + "".join(cell(n) for n in names)]
    for key in varying:
        lines.append(label(key) + "".join(cell(p.get(key), key) for _, p, _, _ in found))
    if varying:
        lines.append("")
    for run in sorted(trained):
        rows = [[(m.get(run) or {}).get(metric) for _, _, m, _ in found] for metric, _ in METRIC_ROWS]
        if not any(_varies(row) for row in rows):
            continue  # no experiment moved this run
        for (_, name), row in zip(METRIC_ROWS, rows):
            lines.append(label(f"{run[: LABEL - 13]:<{LABEL - 13}} {name}") + "".join(cell(v) for v in row))
    if len(lines) == 1:
        lines.append("(no param or headline metric differs among these experiments)")
    for n, note in enumerate(notes, 1):
        lines += textwrap.wrap(note, WIDTH, initial_indent=f"[{n}] ", subsequent_indent="    ", break_on_hyphens=False)
    return "\n".join(line.rstrip() for line in lines)
