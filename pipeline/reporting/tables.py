"""The results table: every method's metrics, Separated and Concatenated, as mean ± 95% interval."""

from __future__ import annotations

import pandas as pd

from pipeline.reporting.names import label, paper_name

# (metrics-file key, column title); values are fractions, shown in %, except RAW_COLUMNS
METRIC_COLUMNS = [
    ("precision_at_1", "P@1"),
    ("r_precision", "R-precision"),
    ("map_at_r", "MAP@R"),
    ("map_at_c", "mAP@C"),
    ("nmi", "NMI"),
    ("f1", "F1"),
    ("spectral_decay", "ρ(Φ)"),
]
RAW_COLUMNS = {"spectral_decay"}  # shown as is, and no "best" (Revisiting: lower tends to go with better)


def metric_columns(recall_at: list[int]) -> list[tuple[str, str]]:
    return METRIC_COLUMNS[:4] + [(f"recall_at_{k}", f"R@{k}") for k in recall_at] + METRIC_COLUMNS[4:]


def results_frame(metrics: dict[str, dict], recall_at: list[int], embedding_dim: int) -> pd.DataFrame:
    """Long table: one row per (method, protocol), columns <metric>, <metric>_std and <metric>_ci95 (the
    half-width of the 95% t interval: over the fold x seed models for separated rows, over the seeds for
    concatenated rows), in %."""
    rows = []
    for method, m in metrics.items():
        folds, seeds = len(m["folds"]), len(m["seeds"])
        for protocol, models in (
            (f"separated-{embedding_dim}D", folds * seeds),
            (f"concatenated-{folds * embedding_dim}D", seeds),
        ):
            summary = m[protocol.split("-")[0]]
            row = {"method": method, "name": paper_name(method), "protocol": protocol, "models": models}
            for key, _ in metric_columns(recall_at):
                scale = 1 if key in RAW_COLUMNS else 100
                for stat, suffix in (("mean", ""), ("std", "_std"), ("ci95", "_ci95")):
                    row[key + suffix] = scale * summary[stat][key]
            rows.append(row)
    return pd.DataFrame(rows)


def backbone_row(backbone: dict, recall_at: list[int]) -> dict:
    """The results row of the backbone's features with no head trained (evaluate's backbone.json): one embedding,
    so no std or interval; protocol `features-<D>D`, compared with no run for the bold."""
    protocol = f"features-{backbone['dim']}D"
    row = {"method": "backbone", "name": paper_name("backbone"), "protocol": protocol, "models": 1}
    for key, _ in metric_columns(recall_at):
        row[key] = (1 if key in RAW_COLUMNS else 100) * backbone["test"][key]
        row[key + "_std"] = row[key + "_ci95"] = float("nan")
    return row


def markdown_table(frame: pd.DataFrame, recall_at: list[int], decimals: int) -> str:
    """Markdown with `mean ± 95% half-width` cells; the best mean per protocol and column in bold."""
    cols = metric_columns(recall_at)
    head = "| method | protocol | " + " | ".join(title for _, title in cols) + " |"
    lines = [head, "|" + "---|" * (len(cols) + 2)]
    for _, row in frame.iterrows():
        same = frame[frame["protocol"] == row["protocol"]]
        cells = []
        for key, _ in cols:
            text = f"{row[key]:.{decimals}f}"
            half = row.get(f"{key}_ci95")
            if pd.notna(half):
                text += f" ± {half:.{decimals}f}"
            if len(same) > 1 and key not in RAW_COLUMNS and row[key] == same[key].max():
                text = f"**{text}**"
            cells.append(text)
        lines.append(f"| {label(row['method'])} | {row['protocol']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
