"""The results table: every method's metrics, Separated (mean +- std) and Concatenated."""

from __future__ import annotations

import pandas as pd

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
    """Long table: one row per (method, protocol), columns <metric> and <metric>_std, in %."""
    rows = []
    for method, m in metrics.items():
        folds = len(m["separated"]["folds"])
        sep = {"method": method, "protocol": f"separated-{embedding_dim}D", "folds": folds}
        con = {"method": method, "protocol": f"concatenated-{folds * embedding_dim}D", "folds": folds}
        for key, _ in metric_columns(recall_at):
            scale = 1 if key in RAW_COLUMNS else 100
            sep[key] = scale * m["separated"]["mean"][key]
            sep[f"{key}_std"] = scale * m["separated"]["std"][key]
            con[key] = scale * m["concatenated"][key]
        rows += [sep, con]
    return pd.DataFrame(rows)


def markdown_table(frame: pd.DataFrame, recall_at: list[int], decimals: int) -> str:
    """Markdown with `mean +- std` cells for separated rows; the best value per protocol and column in bold."""
    cols = metric_columns(recall_at)
    head = "| method | protocol | " + " | ".join(title for _, title in cols) + " |"
    lines = [head, "|" + "---|" * (len(cols) + 2)]
    for _, row in frame.iterrows():
        same = frame[frame["protocol"] == row["protocol"]]
        cells = []
        for key, _ in cols:
            text = f"{row[key]:.{decimals}f}"
            std = row.get(f"{key}_std")
            if pd.notna(std):
                text += f" ± {std:.{decimals}f}"
            if len(same) > 1 and key not in RAW_COLUMNS and row[key] == same[key].max():
                text = f"**{text}**"
            cells.append(text)
        lines.append(f"| {row['method']} | {row['protocol']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
