"""The LANML report: per UCI data set, every linear method's kNN accuracy beside ANML Table 2."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.evaluation.intervals import LEVEL
from pipeline.evaluation.paired import TESTED, holm, holm_verdict, t_over_units, verdict

# our method names -> the paper's row names (ANML Table 2; the Euclidean kNN baseline has no row there)
PAPER_NAMES = {
    "lanml_minus": "LANML-",
    "lanml_plus": "LANML+",
    "pnca": "PNCA",
    "nca": "NCA",
    "lmnn": "LMNN",
    "itml": "ITML",
    "scml": "SCML",
    "gmml": "GMML",
    "euclidean": None,
}


def method_label(method: str) -> str:
    """'LANML- (`lanml_minus`)': the paper's name with our id beside it, as in the other tables."""
    return f"{PAPER_NAMES.get(method) or method.capitalize()} (`{method}`)"


def anml_table2(published: pd.DataFrame) -> pd.DataFrame:
    """ANML Table 2's rows of the published numbers (dataset in lower case, method, accuracy, std)."""
    table = published[(published.paper == "ANML") & (published.table == "Table 2")]
    return pd.DataFrame(
        {"dataset": table.dataset.str.lower(), "method": table.method, "accuracy": table.value, "std": table["std"]}
    )


def lanml_markdown(results: list[dict], reference: pd.DataFrame, decimals: int) -> str:
    """One table per data set: ours (K by cross-validation), ours (best K on test, the paper's reading),
    the paper's value and our best-K-on-test minus the paper."""
    f = f".{decimals}f"
    lines = []
    for result in results:
        name = result["dataset"]
        lines += [
            f"## {name} ({result['samples']} samples, {result['features']} features, {result['classes']} classes)",
            "",
            "| method | accuracy, K by 5-fold CV | accuracy, best K on test (paper's reading) | paper (ANML Table 2) "
            "| difference (best K - paper) |",
            "|---|---|---|---|---|",
        ]
        for method, r in result["methods"].items():
            paper = reference[(reference["dataset"] == name) & (reference["method"] == PAPER_NAMES.get(method))]
            acc, best = r["accuracy"], r["accuracy_best_k_on_test"]
            paper_text, diff = "-", "-"
            if len(paper):
                value = float(paper["accuracy"].iloc[0])
                paper_text = f"{value:{f}} ± {float(paper['std'].iloc[0]):{f}}"
                diff = f"{best['mean'] - value:+{f}}"
            lines.append(
                f"| {method_label(method)} | {acc['mean']:{f}} ± {acc['std']:{f}} "
                f"| {best['mean']:{f}} ± {best['std']:{f}} "
                f"| {paper_text} | {diff} |"
            )
        lines.append("")
    return "\n".join(lines)


# the comparisons of ANML Table 2 that these runs can test: (claimed better, base, claim)
TABLE2_CLAIMS = (("lanml_minus", "lmnn", "LANML- beats LMNN"), ("pnca", "nca", "PNCA beats NCA"))


def table2_claims(results: list[dict]) -> pd.DataFrame:
    """Per data set and Table 2 claim whose two methods ran: the paired difference of the test accuracy with K by
    cross-validation (better - base, points), one pair per split (every method sees the same splits, so the split
    is the unit), its 95% t interval over the splits, the verdict it supports (pipeline/evaluation/paired.py:
    reproduced above 0, contradicted below, else inconclusive) and Holm's adjustment over these claims as one
    family. The paper's own reading (best K on the test part) chooses K on the data it scores, so it decides
    nothing here."""
    rows = []
    for result in results:
        methods = result["methods"]
        for better, base, claim in TABLE2_CLAIMS:
            if better not in methods or base not in methods:
                continue
            diffs = 100 * np.array(
                [b["accuracy"] - a["accuracy"] for a, b in zip(methods[base]["splits"], methods[better]["splits"])]
            )
            mean, half, p = t_over_units(diffs, np.arange(len(diffs)))
            low, high = mean - half, mean + half
            rows.append(
                {
                    "dataset": result["dataset"],
                    "claim": claim,
                    "splits": len(diffs),
                    "diff": mean,
                    "t_low": low,
                    "t_high": high,
                    "p": p,
                    "verdict": verdict([(low, high)]),
                }
            )
    table = pd.DataFrame(rows, columns=["dataset", "claim", "splits", "diff", "t_low", "t_high", "p", "verdict"])
    table["p_holm"] = holm(table.p.where(table.verdict.isin(TESTED)))
    table["verdict_holm"] = [holm_verdict(v, q) for v, q in zip(table.verdict, table.p_holm)]
    return table


def table2_claims_markdown(table: pd.DataFrame, decimals: int) -> str:
    """The Table 2 claims as a markdown section (`table2_claims`)."""
    if table.empty:
        return ""
    f, pct = f"+.{decimals}f", f"{100 * LEVEL:.0f}%"
    lines = [
        "## Table 2's claims",
        "",
        "Each claim's paired difference of the test accuracy with K by cross-validation (claimed better minus base, "
        f"points), one pair per split, with its {pct} t interval over the splits (the split is the unit: "
        f"{int(table.splits.max())} splits give {int(table.splits.max()) - 1} degrees of freedom, so the interval is "
        "wide); verdict: **reproduced** when it lies above 0, **contradicted** when below, **inconclusive** "
        "otherwise; Holm over the claims below as one family.",
        "",
        f"| data set | claim | accuracy diff [{pct} t, splits] | verdict | Holm |",
        "|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        interval = "-" if np.isnan(r.t_low) else f"{r.diff:{f}} [{r.t_low:{f}}, {r.t_high:{f}}]"
        lines.append(f"| {r.dataset} | {r.claim} | {interval} | **{r.verdict}** | {r.verdict_holm} |")
    return "\n".join(lines) + "\n\n"


def timing_markdown(results: list[dict], decimals: int) -> str:
    """ANML section 7.1.3 as measured: per data set the best process CPU time of LANML-, LANML+ and
    LMNN-<Kt>, the test accuracies at the default and a strict tolerance, the work of the LANML solver
    with and without screening, and the LMNN / LANML fit-time ratios (the paper: about 10)."""
    f = f".{decimals}f"
    lines = [
        "| data set | method | CPU s (best) | accuracy | accuracy, strict tolerance | objective gap to strict "
        "| evaluations | distances (screened / all) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ratio_lines = [
        "| data set | "
        + " | ".join(f"LMNN-{t} / {PAPER_NAMES[m]}" for m in ("lanml_minus", "lanml_plus") for t in (4, 5, 6, 7))
        + " |",
        "|---|" + "---|" * 8,
    ]
    for r in results:
        name = f"{r['dataset']} ({r['train_samples']} x {r['features']})"
        for method, m in r["methods"].items():
            label = PAPER_NAMES.get(method) or f"LMNN-{method.split('_')[1]}"
            if "strict_accuracy" in m:
                gap = (m["objective"] - m["strict_objective"]) / abs(m["strict_objective"])
                extra = (
                    f"{m['strict_accuracy']:{f}} | {gap:.1e} | {m['evaluations']} "
                    f"| {m['pairs'] / m['pairs_unscreened']:.2f} |"
                )
            else:
                extra = "- | - | - | - |"
            lines.append(f"| {name} | {label} | {m['cpu_seconds']:.3f} | {m['accuracy']:{f}} | {extra}")
        ratio_lines.append(f"| {r['dataset']} | " + " | ".join(f"{v:.1f}" for v in r["ratios"].values()) + " |")
    return "\n".join(lines + ["", "LMNN / LANML fit-time ratios (CPU time):", ""] + ratio_lines) + "\n"
