"""The LANML report: per UCI data set, every linear method's kNN accuracy beside ANML Table 2."""

from __future__ import annotations

import pandas as pd

# our method names -> the paper's row names
PAPER_NAMES = {"lanml_minus": "LANML-", "lanml_plus": "LANML+", "pnca": "PNCA", "nca": "NCA", "lmnn": "LMNN",
               "itml": "ITML", "scml": "SCML", "gmml": "GMML", "euclidean": None}


def anml_table2(published: pd.DataFrame) -> pd.DataFrame:
    """ANML Table 2's rows of the published numbers (dataset in lower case, method, accuracy, std)."""
    table = published[(published.paper == "ANML") & (published.table == "Table 2")]
    return pd.DataFrame({"dataset": table.dataset.str.lower(), "method": table.method,
                         "accuracy": table.value, "std": table["std"]})


def lanml_markdown(results: list[dict], reference: pd.DataFrame, decimals: int) -> str:
    """One table per data set: ours (K by cross-validation), ours (best K on test, the paper's reading),
    the paper's value and our best-K-on-test minus the paper."""
    f = f".{decimals}f"
    lines = []
    for result in results:
        name = result["dataset"]
        lines += [f"## {name} ({result['samples']} samples, {result['features']} features, "
                  f"{result['classes']} classes)", "",
                  "| method | accuracy, K by 5-fold CV | accuracy, best K on test (paper's reading) | paper (ANML Table 2) "
                  "| difference (best K - paper) |", "|---|---|---|---|---|"]
        for method, r in result["methods"].items():
            paper = reference[(reference["dataset"] == name) & (reference["method"] == PAPER_NAMES.get(method))]
            acc, best = r["accuracy"], r["accuracy_best_k_on_test"]
            paper_text, diff = "-", "-"
            if len(paper):
                value = float(paper["accuracy"].iloc[0])
                paper_text = f"{value:{f}} ± {float(paper['std'].iloc[0]):{f}}"
                diff = f"{best['mean'] - value:+{f}}"
            lines.append(f"| {method} | {acc['mean']:{f}} ± {acc['std']:{f}} | {best['mean']:{f}} ± {best['std']:{f}} "
                         f"| {paper_text} | {diff} |")
        lines.append("")
    return "\n".join(lines)
