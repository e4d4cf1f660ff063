"""Comparison tables: measured runs beside the papers' numbers, as markdown, CSV and LaTeX.

Two protocols, one table each per data set:
- MLRC: P@1, R-precision, MAP@R, Separated (mean +- std over the fold x seed models) and Concatenated
  (mean +- std over the seeds, each seed's folds concatenated);
- conventional metrics: R@K, NMI, F1 of the fold x seed models (mean +- std). The papers' conventional numbers
  come from one model trained on all training classes at 512-D; ours are the MLRC fold models, so even on
  the same data set the comparison is approximate, and the table says so.
A published value sits beside a measured row only when the data set is the one the paper measured. On
the embedded default no row has a counterpart; the orientation table instead lists what the papers
report for the same runs on the real benchmarks, and the rank agreement table asks whether the runs
come out in the same order here as there (Spearman's rho over the runs both have).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from pipeline.reporting.names import label

MLRC = [
    (f"{protocol}:{metric}", title)
    for protocol in ("separated", "concatenated")
    for metric, title in (("precision_at_1", "P@1"), ("r_precision", "R-precision"), ("map_at_r", "MAP@R"))
]


def conventional_columns(recall_at: list[int]) -> list[tuple[str, str]]:
    return [(f"separated:recall_at_{k}", f"R@{k}") for k in recall_at] + [
        ("separated:nmi", "NMI"),
        ("separated:f1", "F1"),
    ]


def measured(metrics: dict[str, dict], columns: list[tuple[str, str]]) -> pd.DataFrame:
    """Long table (run, column, value, std) in % from the evaluate stage's metrics files."""
    rows = []
    for run, m in metrics.items():
        for column, _ in columns:
            protocol, metric = column.split(":")
            value, std = m[protocol]["mean"][metric], m[protocol]["std"][metric]
            rows.append({"run": run, "column": column, "value": 100 * value, "std": 100 * std})
    return pd.DataFrame(rows, columns=["run", "column", "value", "std"])


def _published_protocol(column: str, protocol: str) -> str:
    """The prefix of the published `protocol` values a measured column compares with."""
    kind = column.split(":")[0]
    return f"mlrc-{kind}" if protocol == "mlrc" else "conventional" if protocol == "conventional" else ""


def attach_published(table: pd.DataFrame, published: pd.DataFrame, dataset: str | None, protocol: str) -> pd.DataFrame:
    """Add paper_value / paper_std / difference / source for rows whose run and data set the papers report
    (the first matching row of the reference file when several papers do)."""
    out = table.assign(paper_value=np.nan, paper_std=np.nan, difference=np.nan, source="")
    if dataset is None:
        return out
    for i, row in out.iterrows():
        metric = row.column.split(":")[1]
        prefix = _published_protocol(row.column, protocol)
        match = published[
            (published.run == row.run)
            & (published.dataset == dataset)
            & (published.metric == metric)
            & published.protocol.str.replace("revisiting-", "").str.startswith(prefix)
        ]
        if len(match):
            first = match.iloc[0]
            out.loc[i, ["paper_value", "paper_std", "difference", "source"]] = [
                first.value,
                first["std"],
                row.value - first.value,
                f"{first.paper} {first.table}",
            ]
    return out


def _cell(value: float, std: float, decimals: int) -> str:
    text = f"{value:.{decimals}f}"
    return text + (f" ± {std:.{decimals}f}" if pd.notna(std) else "")


def render(table: pd.DataFrame, columns: list[tuple[str, str]], decimals: int, latex: bool = False) -> str:
    """Wide markdown (or LaTeX tabular): one row per run, a measured cell per column with the best in bold,
    and where the papers report the run on this data set, the paper's value and the difference."""
    has_paper = table.paper_value.notna().any()
    best = table.groupby("column").value.max()
    header = ["run"]
    for column, title in columns:
        kind = column.split(":")[0]
        header.append(f"{title} ({kind[:3]}.)" if kind else title)
        if has_paper:
            header += [f"{title} paper", "Δ"]
    if has_paper:
        header.append("source")
    lines = []
    for run, rows in table.groupby("run", sort=False):
        rows = rows.set_index("column")
        cells, sources = [label(run, latex)], set()
        for column, _ in columns:
            r = rows.loc[column]
            text = _cell(r.value, r["std"], decimals)
            if np.isclose(r.value, best[column]):
                text = rf"\textbf{{{text}}}" if latex else f"**{text}**"
            cells.append(text.replace("±", r"$\pm$") if latex else text)
            if has_paper:
                cells += (
                    ["-", "-"]
                    if pd.isna(r.paper_value)
                    else [_cell(r.paper_value, r.paper_std, decimals), f"{r.difference:+.{decimals}f}"]
                )
                if r.source:
                    sources.add(r.source)
        if has_paper:
            cells.append("; ".join(sorted(sources)) or "-")
        lines.append(cells)
    if latex:
        body = "\n".join(" & ".join(c.replace("%", r"\%") for c in cells) + r" \\" for cells in lines)
        return (
            "\\begin{tabular}{l"
            + "r" * (len(header) - 1)
            + "}\n\\toprule\n"
            + " & ".join(h.replace("Δ", r"$\Delta$").replace("@", "@") for h in header)
            + " \\\\\n\\midrule\n"
            + body
            + "\n\\bottomrule\n\\end{tabular}\n"
        )
    return (
        "\n".join(
            ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(cells) + " |" for cells in lines]
        )
        + "\n"
    )


def orientation(runs: list[str], published: pd.DataFrame) -> pd.DataFrame:
    """What the papers report for these runs on the real benchmarks: MLRC separated MAP@R (CCP supplement)
    and the first conventional R@1 per data set. Rows = runs that have any, columns = data set x metric."""
    mask = published.run.isin(runs) & (
        (published.protocol.str.startswith("mlrc-separated") & (published.metric == "map_at_r"))
        | (~published.protocol.str.startswith("mlrc") & (published.metric == "recall_at_1"))
    )
    rows = published[mask].assign(
        key=lambda t: t.dataset + " " + np.where(t.metric == "map_at_r", "MAP@R (MLRC sep.)", "R@1")
    )
    wide = rows.drop_duplicates(["run", "key"]).pivot(index="run", columns="key", values="value")
    return wide.reindex([r for r in runs if r in wide.index])


def rank_agreement(table: pd.DataFrame, published: pd.DataFrame, protocol: str, min_runs: int = 3) -> pd.DataFrame:
    """Per published table, data set and metric that reports >= `min_runs` of our runs: Spearman's rho between our
    measured values (this data set) and theirs over the runs both have, its two-sided p-value (no association), and
    the ceiling: the range of rho between that table's own data sets over the same runs (how well the papers'
    data sets agree with each other; one data set alone gives none)."""
    rows = []
    ours = table.assign(metric=table.column.str.split(":").str[1], kind=table.column.str.split(":").str[0])
    for column in ours.column.unique():
        mine = ours[ours.column == column].set_index("run").value
        prefix = _published_protocol(column, protocol)
        theirs = published[
            published.run.isin(mine.index)
            & (published.metric == column.split(":")[1])
            & published.protocol.str.replace("revisiting-", "").str.startswith(prefix)
        ]
        wide = theirs.drop_duplicates(["paper", "table", "dataset", "run"]).pivot_table(
            index="run", columns=["paper", "table", "dataset"], values="value", aggfunc="first"
        )
        for (paper, tab, dataset), group in theirs.groupby(["paper", "table", "dataset"], sort=False):
            group = group.drop_duplicates("run").set_index("run").value
            if len(group) >= min_runs:
                result = spearmanr(mine[group.index], group)
                others = _cross_dataset_rho(wide[(paper, tab)].loc[group.index], dataset, min_runs)
                rows.append(
                    {
                        "column": column,
                        "source": f"{paper} {tab}",
                        "dataset": dataset,
                        "runs": len(group),
                        "spearman_rho": result.statistic,
                        "p_value": result.pvalue,
                        "ceiling": f"{min(others):.2f} to {max(others):.2f}" if others else "-",
                        "run_names": " ".join(group.index),
                    }
                )
    columns = ["column", "source", "dataset", "runs", "spearman_rho", "p_value", "ceiling", "run_names"]
    return pd.DataFrame(rows, columns=columns)


def _cross_dataset_rho(table: pd.DataFrame, dataset: str, min_runs: int) -> list[float]:
    """Spearman's rho between `dataset`'s column and every other data set's of one published table (rows: runs),
    over the runs both report."""
    out = []
    for other in table.columns:
        both = table[[dataset, other]].dropna()
        if other != dataset and len(both) >= min_runs:
            out.append(spearmanr(both[dataset], both[other]).statistic)
    return out


def sign_agreement(map_at_r: pd.Series, published: pd.DataFrame, claims: pd.DataFrame, losses: list[str]) -> str:
    """Per CCP loss, the sign of CCP - batch and of CCP - Loss-Proxy (separated MAP@R) here against the papers':
    the CCP supplement's CCP-L - batch on each of its data sets (MLRC, separated 128-D MAP@R), and CCP Fig. 4a's
    claim that CCP beats Loss-Proxy (the figure gives no numbers). Ours comes with the verdict of its claim where
    the claims table has one, so that a sign is not read as more than its interval allows."""
    rows = published[published.protocol.str.startswith("mlrc-separated") & (published.metric == "map_at_r")]
    datasets = list(dict.fromkeys(rows.dataset))
    verdicts = {(c.base, c.better): c.verdict for _, c in claims.iterrows()}
    lines = [
        "| loss | CCP - batch here | "
        + " | ".join(f"CCP-L - batch, {d}" for d in datasets)
        + " | same sign | CCP - Loss-Proxy here (verdict) | CCP Fig. 4a |",
        "|" + "---|" * (len(datasets) + 5),
    ]
    for loss in losses:
        ccp, batch, proxy = f"{loss}_ccp", f"{loss}_batch", f"{loss}_loss_proxy"
        if ccp not in map_at_r or batch not in map_at_r:
            continue
        ours = map_at_r[ccp] - map_at_r[batch]
        theirs = []
        for d in datasets:
            v = rows[rows.dataset == d].drop_duplicates("run").set_index("run").value
            theirs.append(v[ccp] - v[batch] if {ccp, batch} <= set(v.index) else np.nan)
        known = [t for t in theirs if not np.isnan(t)]
        same = sum(np.sign(t) == np.sign(ours) for t in known)
        lp = (
            f"{map_at_r[ccp] - map_at_r[proxy]:+.2f} ({verdicts.get((proxy, ccp), 'no claim')})"
            if proxy in map_at_r
            else "-"
        )
        cells = " | ".join("-" if np.isnan(t) else f"{t:+.2f}" for t in theirs)
        lines.append(f"| {loss} | {ours:+.2f} | {cells} | {same} of {len(known)} | {lp} | + (claimed) |")
    return "\n".join(lines) + "\n"
