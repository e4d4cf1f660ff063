"""`dml experiments`: the experiments of `dvc exp show` as a person reads them, at most 120 columns wide.

`dvc exp show --only-changed` puts every column that varies side by side: dependency hashes first (data/ablations,
pipeline/...), then the params and, for this project, three headline metrics per run (87 for the digit default), so
at 80 or 120 columns a reader sees hashes only. This view turns the table: one column per experiment (the
workspace, the commit, its experiments, newest last) and one row per param that varies, then per run whose
headline metrics vary, its validation MAP@R (choose by it, never by test), test MAP@R and P@1. Dependency hashes
and the params no experiment changed are left out. The numbers are `dvc exp show --json`'s (DVC's own reading of
params.yaml and reports/headline_metrics.json), rounded to 4 digits.
"""

from __future__ import annotations

import json
import subprocess
import sys

from pipeline.infra.errors import PipelineError

METRICS_FILE = "reports/headline_metrics.json"
METRIC_ROWS = (("val_map_at_r", "val MAP@R"), ("map_at_r", "test MAP@R"), ("precision_at_1", "P@1"))
WIDTH, LABEL, CELL = 120, 34, 12


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


def columns(shown: list[dict]) -> list[tuple[str, dict, dict]]:
    """(name, flat params, headline metrics) of the workspace, each commit and its experiments, in DVC's order."""
    found = []

    def add(name: str, data: dict) -> None:
        params = {}
        for file, content in (data.get("params") or {}).items():
            params.update(_flat((content or {}).get("data") or {}, "" if file == "params.yaml" else f"{file}:"))
        metrics = ((data.get("metrics") or {}).get(METRICS_FILE) or {}).get("data") or {}
        found.append((name, params, metrics))

    for entry in shown:
        add(
            entry.get("name") or (entry["rev"] if entry["rev"] == "workspace" else entry["rev"][:7]),
            entry.get("data") or {},
        )
        for experiment in entry.get("experiments") or []:
            for rev in experiment.get("revs") or []:
                add(rev.get("name") or rev["rev"][:7], rev.get("data") or {})
    return found


def _cell(value) -> str:
    """A value in at most CELL - 1 characters (a longer one cut, ending in …)."""
    if isinstance(value, float):
        text = f"{value:.4f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3g}"
    else:
        text = "-" if value is None else json.dumps(value) if isinstance(value, list) else str(value)
    return text if len(text) < CELL else text[: CELL - 2] + "…"


def experiments_table(shown: list[dict], last: int = 7) -> str:
    """The view (module docstring) of the newest `last` columns (the workspace and the commit always shown)."""
    found = columns(shown)
    if len(found) > last:
        found = found[:2] + found[2:][-(last - 2) :]
    varying = sorted(
        {k for _, p, _ in found for k in p if len({json.dumps(q.get(k), default=str) for _, q, _ in found}) > 1}
    )
    runs = sorted({r for _, _, m in found for r in m})
    lines = [f"{'':<{LABEL}}" + "".join(f"{_cell(name):>{CELL}}" for name, _, _ in found)]
    for key in varying:
        label = key if len(key) <= LABEL - 1 else "…" + key[-(LABEL - 2) :]
        lines.append(f"{label:<{LABEL}}" + "".join(f"{_cell(p.get(key)):>{CELL}}" for _, p, _ in found))
    if varying:
        lines.append("")
    for run in runs:
        values = [[(m.get(run) or {}).get(metric) for _, _, m in found] for metric, _ in METRIC_ROWS]
        if all(len({json.dumps(v) for v in row}) == 1 for row in values):
            continue  # no experiment moved this run
        for (_, name), row in zip(METRIC_ROWS, values):
            label = f"{run[: LABEL - 12]:<{LABEL - 12}} {name:<11}"
            lines.append(f"{label:<{LABEL}}" + "".join(f"{_cell(v):>{CELL}}" for v in row))
    if len(lines) == 1:
        lines.append("(no param or headline metric differs among these experiments)")
    return "\n".join(line.rstrip() for line in lines)
