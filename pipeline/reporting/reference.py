"""The papers' published numbers (reference/published.csv): one value per row with its paper and table.

Columns: paper, table, dataset, protocol, method (as printed), run (this project's run with the same
method and setting, or empty), metric (this project's metric key), value and std (in %), note.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipeline.datasets import datasets
from pipeline.infra.errors import PipelineError

COLUMNS = ["paper", "table", "dataset", "protocol", "method", "run", "metric", "value", "std", "note"]


class ReferenceError(PipelineError, ValueError):
    """The reference file is missing a column or holds a non-numeric value; the message names the file."""


def read_published(path: Path) -> pd.DataFrame:
    """The reference rows; `run` "" where no run of ours matches, `std` NaN where the paper gives none."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: reference numbers not found")
    table = pd.read_csv(path, comment="#", dtype={"run": str, "note": str}, keep_default_na=False)
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise ReferenceError(f"{path}: missing column(s) {', '.join(missing)}")
    for col in ("value", "std"):
        numbers = pd.to_numeric(table[col].replace("", float("nan")), errors="coerce")
        bad = numbers.isna() & (table[col] != "")
        if col == "value":
            bad |= table[col] == ""
        if bad.any():
            row = int(bad.idxmax())
            raise ReferenceError(
                f"{path}: row {row + 1} ({table.method[row]}, {table.table[row]}): "
                f"{col} {table[col][row]!r} is not a number"
            )
        table[col] = numbers
    return table[COLUMNS]


def paper_dataset(name: str) -> str | None:
    """The papers' name of data set `name` (its record's, pipeline/datasets), or None for a data set no paper
    reports (the embedded defaults, your own folder)."""
    return datasets()[name].paper_name
