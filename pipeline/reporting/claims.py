"""The claims table: each claim of the papers that the configured runs can test, with a verdict.

A claim says that run `better` beats run `base`. The evidence is paired: the two runs train a model
on the same MLRC fold with the same replicate seed, so each (fold, seed) gives one difference
better - base of the separated test metric (in points, i.e. % units). The 95% interval is the paired
t interval of those differences (pipeline/evaluation/intervals.py). Verdict on MAP@R:
reproduced when the whole interval is above 0, contradicted when it is below 0, inconclusive when it
contains 0. The 2-D proof of concept (CCP Fig. 2) pairs the variants by ``poc.seeds`` instead.
A claim whose runs are not configured is listed as "not run", never left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pipeline.evaluation.intervals import LEVEL, mean_interval
from pipeline.reporting.names import label

METRICS = (("map_at_r", "MAP@R"), ("precision_at_1", "P@1"))  # the first decides the verdict
POC = "poc"  # the claims measured by the 2-D proof of concept, not by the MLRC runs


@dataclass(frozen=True)
class Claim:
    text: str
    source: str
    base: str
    better: str
    where: str = "runs"  # runs: the MLRC fold x seed models; poc: the 2-D proof of concept's seeds


def paper_claims(ccp_losses, profs_losses) -> list[Claim]:
    """The claims the default can test, for the CCP and PROFS losses configured."""
    out = []
    for loss in ccp_losses:
        name = loss.upper() if loss in ("c1", "c2", "ms") else loss.capitalize()
        out.append(Claim(f"{name}: CCP beats Loss-Proxy (alternating proxies help)", "CCP Fig. 4a",
                         f"{loss}_loss_proxy", f"{loss}_ccp"))
        out.append(Claim(f"{name}: Loss-Proxy beats the loss on batches", "CCP Fig. 4a",
                         f"{loss}_batch", f"{loss}_loss_proxy"))
    for loss in profs_losses:
        out.append(Claim(f"{loss}: PROFS beats the plain loss", "PROFS Tables 1-2", f"{loss}_plain", f"{loss}_profs"))
        out.append(Claim(f"{loss}: PROFS-HNCM beats PROFS", "PROFS Tables 1-2", f"{loss}_profs", f"{loss}_profs_hncm"))
    out += [
        Claim("ANML-Lifted beats Lifted", "ANML Table 3", "lifted", "anml_lifted"),
        Claim("ANML-N-pair beats N-pair", "ANML Table 3", "npair", "anml_npair"),
        Claim("DANML beats MS", "ANML Tables 4-6", "ms", "danml"),
        Claim("R-Margin beats Margin (rho-regularisation helps)", "Revisiting suppl. Table 5 (also 4, 6)",
              "margin_d", "r_margin_d"),
        Claim("2-D: sample-based CCP beats proxy-based CCP (98.06 vs 97.21 MAP@R on MNIST)",
              "CCP Fig. 2, section 5.3", "ccp", "sample_ccp", where=POC),
    ]
    return out


def _paired(metrics: dict, base: str, better: str, metric: str) -> np.ndarray:
    """better - base per (fold, seed) model, in points."""
    a, b = metrics[base]["separated"]["models"], metrics[better]["separated"]["models"]
    if set(a) != set(b):
        raise ValueError(f"claims: runs {base} and {better} have different models ({sorted(a)} vs {sorted(b)})")
    return 100 * np.array([b[k][metric] - a[k][metric] for k in sorted(a)])


def _poc_paired(poc: dict, base: str, better: str, metric: str) -> np.ndarray | None:
    seeds, key = poc[base]["seeds"], f"test_{metric}"  # the poc stage's metric names
    if key not in next(iter(seeds.values())):
        return None  # the proof of concept measures MAP@R only
    return 100 * np.array([poc[better]["seeds"][s][key] - seeds[s][key] for s in sorted(seeds)])


def verdict(low: float, high: float) -> str:
    if np.isnan(low):
        return "inconclusive"
    return "reproduced" if low > 0 else "contradicted" if high < 0 else "inconclusive"


def claims_table(claims: list[Claim], metrics: dict, poc: dict) -> pd.DataFrame:
    """One row per claim: runs, pairs, and per metric the mean paired difference and its 95% interval."""
    rows = []
    for c in claims:
        row = {"claim": c.text, "source": c.source, "base": c.base, "better": c.better,
               "compared_over": "poc seeds" if c.where == POC else "fold x seed models"}
        present = {c.base, c.better} <= set(poc if c.where == POC else metrics)
        for metric, _ in METRICS:
            diffs = None
            if present:
                diffs = (_poc_paired(poc, c.base, c.better, metric) if c.where == POC
                         else _paired(metrics, c.base, c.better, metric))
            if diffs is None:
                row.update({f"{metric}_diff": np.nan, f"{metric}_low": np.nan, f"{metric}_high": np.nan})
                continue
            mean, half = mean_interval(diffs)
            row.update({"pairs": len(diffs), f"{metric}_diff": mean, f"{metric}_low": mean - half,
                        f"{metric}_high": mean + half})
        row["verdict"] = verdict(row["map_at_r_low"], row["map_at_r_high"]) if present else "not run"
        rows.append(row)
    return pd.DataFrame(rows)


def _interval(row, metric: str, decimals: int) -> str:
    if np.isnan(row[f"{metric}_diff"]):
        return "-"
    f = f".{decimals}f"
    return f"{row[f'{metric}_diff']:+{f}} [{row[f'{metric}_low']:+{f}}, {row[f'{metric}_high']:+{f}}]"


def claims_markdown(table: pd.DataFrame, decimals: int) -> str:
    """The table as markdown: claim, source, the runs compared, pairs, MAP@R and P@1 differences, verdict."""
    head = (f"| claim | source | compared (base → claimed better) | pairs | MAP@R diff [{100 * LEVEL:.0f}% CI] "
            f"| P@1 diff [{100 * LEVEL:.0f}% CI] | verdict |")
    lines = [head, "|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        runs = (f"{r.base} → {r.better} (2-D proof of concept)" if r.compared_over == "poc seeds"
                else f"{label(r.base)} → {label(r.better)}")
        pairs = "-" if pd.isna(r.get("pairs")) else f"{int(r.pairs)}"
        lines.append(f"| {r.claim} | {r.source} | {runs} | {pairs} | {_interval(r, 'map_at_r', decimals)} | "
                     f"{_interval(r, 'precision_at_1', decimals)} | **{r.verdict}** |")
    return "\n".join(lines) + "\n"
