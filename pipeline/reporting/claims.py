"""The claims table: each claim of the papers that the configured runs can test, with a verdict.

A claim says that run `better` beats run `base`. The evidence is paired: the two runs train a model
on the same MLRC fold with the same replicate seed (from the same initial network, on the same
batches until the methods differ), so each (fold, seed) gives one difference better - base of the
separated test metric (in points, i.e. % units). Two 95% intervals of the mean difference:
- ``t``: the paired t interval over the models (pipeline/evaluation/intervals.py): what another
  draw of seeds would give on these test classes;
- ``bootstrap``: a paired percentile bootstrap over test classes and models: each replicate draws
  the test classes with replacement (a class's queries move together) and the model pairs with
  replacement, and recomputes the mean difference; the claim is about classes the models never
  saw, so the sample of test classes is part of the uncertainty.
The verdict uses the wider of the two: reproduced when it lies above 0, contradicted when below 0,
inconclusive when it contains 0 (decided on MAP@R). The 2-D proof of concept (CCP Fig. 2) pairs the
variants by ``poc.seeds`` and has the t interval only. A claim whose runs are not configured is
listed as "not run", never left out; a claim on a run that did not train (most of its models kept the
untrained network, pipeline/reporting/budgets.py) gets "not trained" instead of a verdict: its difference
measures our settings for that run, not the method. Compared runs tuned to a value at an end of its search range
are named under the table (`flagged_runs_note`, `RANGE_END`): their verdicts may reflect the range rather than the
method; so are runs tuned by a study that found its best among its last trials (`STILL_IMPROVING`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pipeline.evaluation.intervals import LEVEL, mean_interval
from pipeline.reporting.names import label
from pipeline.runtime import derive_seed

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
        out.append(
            Claim(
                f"{name}: CCP beats Loss-Proxy (alternating proxies help)",
                "CCP Fig. 4a",
                f"{loss}_loss_proxy",
                f"{loss}_ccp",
            )
        )
        out.append(
            Claim(f"{name}: Loss-Proxy beats the loss on batches", "CCP Fig. 4a", f"{loss}_batch", f"{loss}_loss_proxy")
        )
    for loss in profs_losses:
        out.append(Claim(f"{loss}: PROFS beats the plain loss", "PROFS Tables 1-2", f"{loss}_plain", f"{loss}_profs"))
        out.append(Claim(f"{loss}: PROFS-HNCM beats PROFS", "PROFS Tables 1-2", f"{loss}_profs", f"{loss}_profs_hncm"))
    out += [
        Claim("ANML-Lifted beats Lifted", "ANML Table 3", "lifted", "anml_lifted"),
        Claim("ANML-N-pair beats N-pair", "ANML Table 3", "npair", "anml_npair"),
        Claim("DANML beats MS", "ANML Tables 4-6", "ms", "danml"),
        Claim(
            "R-Margin beats Margin (rho-regularisation helps)",
            "Revisiting suppl. Table 5 (also 4, 6)",
            "margin_d",
            "r_margin_d",
        ),
        Claim(
            "2-D: sample-based CCP beats proxy-based CCP (98.06 vs 97.21 MAP@R on MNIST)",
            "CCP Fig. 2, section 5.3",
            "ccp",
            "sample_ccp",
            where=POC,
        ),
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


def class_bootstrap(
    base: pd.DataFrame, better: pd.DataFrame, models: list[str], metric: str, samples: int, seed: int
) -> tuple[float, float]:
    """Percentile interval (LEVEL) of the mean paired difference better - base in points, resampling the
    test classes and the models with replacement.

    base / better: per-class scores (rows: test classes, ``queries`` and ``<model>:<metric>`` columns, from
    the evaluate stage). With d[p, c] = the summed per-query difference of model pair p on class c and n[c]
    the class's queries, a replicate with class counts w and pair counts v gives
    sum_p v_p sum_c w_c d[p, c] / (sum_c w_c n[c]) / P; with every count 1 that is the mean difference.
    """
    if not base.index.equals(better.index) or not base["queries"].equals(better["queries"]):
        raise ValueError("claims: the runs were evaluated on different test classes")
    n = base["queries"].to_numpy(np.float64)
    d = np.stack([(better[f"{m}:{metric}"] - base[f"{m}:{metric}"]).to_numpy(np.float64) * n for m in models])
    pairs, classes = d.shape
    rng = np.random.default_rng(seed)
    w = rng.multinomial(classes, np.full(classes, 1 / classes), size=samples).astype(np.float64)
    v = rng.multinomial(pairs, np.full(pairs, 1 / pairs), size=samples).astype(np.float64)
    stat = 100 * ((v @ d) * w).sum(axis=1) / (w @ n) / pairs
    tail = 100 * (1 - LEVEL) / 2
    low, high = np.percentile(stat, [tail, 100 - tail])
    return float(low), float(high)


def verdict(low: float, high: float) -> str:
    if np.isnan(low):
        return "inconclusive"
    return "reproduced" if low > 0 else "contradicted" if high < 0 else "inconclusive"


def claims_table(
    claims: list[Claim],
    metrics: dict,
    poc: dict,
    per_class: dict | None = None,
    samples: int = 10000,
    seed: int = 0,
    untrained: frozenset[str] = frozenset(),
) -> pd.DataFrame:
    """One row per claim: runs, pairs, and per metric the mean paired difference, its t interval, its
    bootstrap interval over test classes and models (when `per_class` holds both runs' scores), and the
    interval the verdict uses (the wider)."""
    per_class = per_class or {}
    rows = []
    for c in claims:
        row = {
            "claim": c.text,
            "source": c.source,
            "base": c.base,
            "better": c.better,
            "compared_over": "poc seeds" if c.where == POC else "fold x seed models",
        }
        present = {c.base, c.better} <= set(poc if c.where == POC else metrics)
        for metric, _ in METRICS:
            row.update(
                {f"{metric}_{k}": np.nan for k in ("diff", "t_low", "t_high", "boot_low", "boot_high", "low", "high")}
            )
            row[f"{metric}_interval"] = ""
            diffs = None
            if present:
                diffs = (
                    _poc_paired(poc, c.base, c.better, metric)
                    if c.where == POC
                    else _paired(metrics, c.base, c.better, metric)
                )
            if diffs is None:
                continue
            mean, half = mean_interval(diffs)
            row.update(
                {
                    "pairs": len(diffs),
                    f"{metric}_diff": mean,
                    f"{metric}_t_low": mean - half,
                    f"{metric}_t_high": mean + half,
                    f"{metric}_low": mean - half,
                    f"{metric}_high": mean + half,
                    f"{metric}_interval": "t",
                }
            )
            if c.where != POC and {c.base, c.better} <= set(per_class):
                models = sorted(metrics[c.base]["separated"]["models"])
                low, high = class_bootstrap(
                    per_class[c.base],
                    per_class[c.better],
                    models,
                    metric,
                    samples,
                    derive_seed(seed, "bootstrap", c.base, c.better, metric),
                )
                row.update({f"{metric}_boot_low": low, f"{metric}_boot_high": high})
                if not high - low <= 2 * half:  # the wider decides (a NaN t interval: the bootstrap)
                    row.update({f"{metric}_low": low, f"{metric}_high": high, f"{metric}_interval": "bootstrap"})
        row["verdict"] = (
            "not run"
            if not present
            else "not trained"
            if {c.base, c.better} & untrained
            else verdict(row["map_at_r_low"], row["map_at_r_high"])
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _interval(row, metric: str, decimals: int, kind: str = "") -> str:
    """`diff [low, high]` with the interval the verdict uses, or with kind "t" / "boot" that one."""
    low, high = (f"{metric}_{kind}_low", f"{metric}_{kind}_high") if kind else (f"{metric}_low", f"{metric}_high")
    if np.isnan(row[f"{metric}_diff"]) or np.isnan(row[low]):
        return "-"
    f = f".{decimals}f"
    return f"{row[f'{metric}_diff']:+{f}} [{row[low]:+{f}}, {row[high]:+{f}}]"


def claims_markdown(table: pd.DataFrame, decimals: int) -> str:
    """The table as markdown: claim, source, the runs compared, pairs, MAP@R with both intervals (the one the
    verdict uses in bold), P@1 with the wider interval, and the verdict (decided on MAP@R)."""
    pct = f"{100 * LEVEL:.0f}%"
    head = (
        f"| claim | source | compared (base → claimed better) | pairs | MAP@R diff [{pct} t, models] "
        f"| MAP@R diff [{pct} bootstrap, classes × models] | P@1 diff [{pct}, wider] | verdict |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        runs = (
            f"{r.base} → {r.better} (2-D proof of concept)"
            if r.compared_over == "poc seeds"
            else f"{label(r.base)} → {label(r.better)}"
        )
        pairs = "-" if pd.isna(r.get("pairs")) else f"{int(r.pairs)}"
        cells = []
        for kind, name in (("t", "t"), ("boot", "bootstrap")):
            text = _interval(r, "map_at_r", decimals, kind)
            cells.append(f"**{text}**" if r.map_at_r_interval == name else text)
        lines.append(
            f"| {r.claim} | {r.source} | {runs} | {pairs} | {cells[0]} | {cells[1]} | "
            f"{_interval(r, 'precision_at_1', decimals)} | **{r.verdict}** |"
        )
    return "\n".join(lines) + "\n"


RANGE_END = (
    "**Runs tuned to a value at an end of its search range** (the optimum may lie beyond it, so a verdict on "
    "them may reflect the range rather than the method; [tuning.md](tuning.md))"
)
STILL_IMPROVING = (
    "**Runs tuned by a study still improving at its last trials** (the study in brackets found its best among "
    "its last trials, so more trials may move a verdict on them; [tuning.md](tuning.md))"
)


def compared_runs(claims: pd.DataFrame) -> list[str]:
    """The runs the claims compare, in the order they first appear."""
    return list(dict.fromkeys(r for _, c in claims.iterrows() for r in (c.base, c.better)))


def flagged_runs_note(claims: pd.DataFrame, flagged: dict[str, list[str]], lead: str) -> str:
    """A line after `lead` naming the compared runs in `flagged` (run -> what flags it: the keys at an end of their
    search range for `RANGE_END`, the studies still improving for `STILL_IMPROVING`, pipeline/reporting/tuning.py),
    or nothing when none of them is compared."""
    runs = [r for r in compared_runs(claims) if r in flagged]
    if not runs:
        return ""
    return f"\n{lead}: " + ", ".join(f"`{r}` ({', '.join(f'`{k}`' for k in flagged[r])})" for r in runs) + ".\n"
