"""The claims table: each claim of the papers that the configured runs can test, with a verdict.

The claims are declared by the method families' records (pipeline/families) and, for the baselines, in
``report.claims`` (conf/config.yaml). A claim says that run `better` beats run `base`. The evidence is paired: the
two runs train a model on the same MLRC fold with the same replicate seed (from the same initial network, on the
same batches until the methods differ), so each (fold, seed) gives one difference better - base of the separated
test metric (in points, i.e. % units), with the fold as the unit of replication and two 95% intervals of the mean
difference, t over the fold means and a fold-then-class cluster bootstrap (the statistics:
pipeline/evaluation/paired.py); the claim is about classes the models never saw, so the sample of test classes is
part of the uncertainty. The verdict needs both (decided on MAP@R): reproduced when both lie above 0, contradicted
when both lie below, inconclusive otherwise. Beside it, Holm's step-down adjustment over the claims tested on this
data set (each with the larger of its two p-values, the test both intervals must pass): a family of about 19 claims
at 95% would show one false verdict in a typical report. The 2-D proof of concept (CCP Fig. 2) pairs the variants
by ``poc.seeds`` (seeds are its unit), has the t interval only, and is a Holm family of its own (it is measured
once, not per data set).

The rules that replace a verdict (a failed model, a cap, user values, unequal tuning effort, an unfinished search)
are in pipeline/reporting/rules.py, and `rules.decide` applies them all to the table `claims_table` measures. A
claim whose runs are not configured is "not run", never left out. Compared runs tuned to a value at an end of its
search range are named under the table (`flagged_runs_note`, `RANGE_END`), and so are runs tuned by a study that had
not converged (`NOT_CONVERGED`).

How fragile a verdict is: a reproduced or contradicted verdict is marked **fragile** when the sign of the
mean difference flips (or reaches 0) as any one unit (fold; seed in 2-D) is left out in turn, or when the P@1
difference has the other sign than the MAP@R one. The verdict itself keeps its rule; the mark says it hangs on one
fold or on the metric.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.evaluation.intervals import LEVEL
from pipeline.evaluation.paired import (
    TESTED,
    cluster_bootstrap,
    holm,
    holm_verdict,
    model_fold,
    sign_flips_leaving_one_out,
    t_over_units,
    verdict,
)
from pipeline.families import Claim, families
from pipeline.infra.runtime import derive_seed
from pipeline.reporting.names import label
from pipeline.reporting.rules import USER, cap_decides, decide

METRICS = (("map_at_r", "MAP@R"), ("precision_at_1", "P@1"))  # the first decides the verdict
POC = "poc"  # the claims measured by the 2-D proof of concept, not by the MLRC runs


def paper_claims(params) -> list[Claim]:
    """The claims the runs can test: each family's (its record, pipeline/families) and the baselines'
    (``report.claims``), those on the MLRC runs first, then those on the proof of concept."""
    declared = [c for family in families().values() for c in family.claims(params)] + list(params.report.claims)
    return [c for c in declared if c.where == "runs"] + [c for c in declared if c.where == POC]


def _paired(metrics: dict, base: str, better: str, metric: str, models: list[str]) -> np.ndarray:
    """better - base per (fold, seed) model of `models`, in points."""
    a, b = metrics[base]["separated"]["models"], metrics[better]["separated"]["models"]
    return 100 * np.array([b[k][metric] - a[k][metric] for k in models])


def _poc_paired(poc: dict, base: str, better: str, metric: str) -> np.ndarray | None:
    seeds, key = poc[base]["seeds"], f"test_{metric}"  # the poc stage's metric names
    if key not in next(iter(seeds.values())):
        return None  # the proof of concept measures MAP@R only
    return 100 * np.array([poc[better]["seeds"][s][key] - seeds[s][key] for s in sorted(seeds)])


def _evidence(c: Claim, metrics, poc, per_class, models: list[str], samples: int, seed: int) -> dict:
    """Per metric: the mean difference, the t interval over the units (folds; seeds in 2-D) with its p-value, and
    for the MLRC runs the fold-cluster bootstrap interval with its p-value; and the verdict both support."""
    out = {"pairs": np.nan, "folds": np.nan, "sign_flips_without": ""}
    for metric, _ in METRICS:
        out.update({f"{metric}_{k}": np.nan for k in ("diff", "t_low", "t_high", "t_p", "boot_low", "boot_high")})
        out[f"{metric}_boot_p"] = np.nan
        if c.where == POC:
            diffs = _poc_paired(poc, c.base, c.better, metric)
            units = None if diffs is None else np.arange(len(diffs))
        else:
            diffs = _paired(metrics, c.base, c.better, metric, models) if models else None
            units = np.array([model_fold(m) for m in models])
        if diffs is None or not len(diffs):
            continue
        mean, half, p = t_over_units(diffs, units)
        if metric == METRICS[0][0]:
            out["sign_flips_without"] = " ".join(map(str, sign_flips_leaving_one_out(diffs, units)))
        out.update(
            {
                "pairs": len(diffs),
                "folds": len(np.unique(units)),
                f"{metric}_diff": float(diffs.mean()),
                f"{metric}_t_low": mean - half,
                f"{metric}_t_high": mean + half,
                f"{metric}_t_p": p,
            }
        )
        if c.where != POC and {c.base, c.better} <= set(per_class):
            low, high, boot_p = cluster_bootstrap(
                per_class[c.base],
                per_class[c.better],
                models,
                metric,
                samples,
                derive_seed(seed, "bootstrap", c.base, c.better, metric),
            )
            out.update({f"{metric}_boot_low": low, f"{metric}_boot_high": high, f"{metric}_boot_p": boot_p})
    intervals = [(out["map_at_r_t_low"], out["map_at_r_t_high"])]
    if c.where != POC and {c.base, c.better} <= set(per_class):
        intervals.append((out["map_at_r_boot_low"], out["map_at_r_boot_high"]))
    out["verdict"] = verdict(intervals)
    p = [q for q in (out["map_at_r_t_p"], out["map_at_r_boot_p"]) if not np.isnan(q)]
    out["p"] = max(p) if p else np.nan  # the test both intervals must pass
    return out


def _cut_per_arm(c: Claim, cut: dict[str, int], poc: dict) -> dict[str, int]:
    """Per arm of `c`: its models (2-D: seeds) cut by a cap while improving (pipeline/training/stopping.py)."""
    if c.where == POC:
        return {
            r: sum(bool(s.get("cut_while_improving")) for s in poc[r]["seeds"].values())
            for r in (c.base, c.better)
            if r in poc
        }
    return {r: cut.get(r, 0) for r in (c.base, c.better)}


def claims_table(
    claims: list[Claim],
    metrics: dict,
    poc: dict,
    per_class: dict | None = None,
    samples: int = 10000,
    seed: int = 0,
    failed: frozenset[tuple[str, str]] = frozenset(),
    cut: dict[str, int] | None = None,
    differs: dict[tuple[str, str], str] | None = None,
    tuning: dict[str, dict] | None = None,
    noise: float | None = None,
) -> pd.DataFrame:
    """One row per claim: runs, pairs, folds, per metric the mean paired difference with the t interval over fold
    means and the fold-cluster bootstrap interval (when `per_class` holds both runs' scores), the verdict both
    support, and Holm's adjustment over the claims tested.

    `failed`: (run, model) pairs of models that failed (pipeline/reporting/rules.py ``failed``). A claim with
    such models in its pairs is measured again without those pairs; where that changes its verdict it is
    **not tested** (the difference rests on a failure, not on the methods). `cut`: run -> its models cut by a cap
    while improving (the 2-D proof of concept: its seeds' ``cut_while_improving`` in `poc`); where the cap would
    decide a claim (rules.cap_decides) it is **not tested** too. `differs`: (base, better) -> what the arms'
    settings differ in (`arm_differences`; a family's variants: the variant). `tuning`: run -> its tuning record
    (reports/tuning/<run>.json), for the tuning rules with `noise` (points, pipeline/reporting/selection.py); None
    leaves the tuning out (a table of hand-made runs)."""
    per_class, cut, differs = per_class or {}, cut or {}, differs or {}
    rows = []
    for c in claims:
        row = {
            "claim": c.text,
            "source": c.source,
            "base": c.base,
            "better": c.better,
            "compared_over": "poc seeds" if c.where == POC else "fold x seed models",
            "differs": differs.get((c.base, c.better), ""),
            "flagged_models": "",
            "verdict_without_flagged": "",
            "capped_arms": " ".join(f"{r}:{n}" for r, n in _cut_per_arm(c, cut, poc).items() if cap_decides(n)),
        }
        present = {c.base, c.better} <= set(poc if c.where == POC else metrics)
        models = []
        if present and c.where != POC:
            a, b = metrics[c.base]["separated"]["models"], metrics[c.better]["separated"]["models"]
            if set(a) != set(b):
                raise ValueError(
                    f"claims: runs {c.base} and {c.better} have different models ({sorted(a)} vs {sorted(b)})"
                )
            models = sorted(a)
        row.update(_evidence(c, metrics, poc, per_class, models, samples, seed))
        flagged = [f"{r}:{m}" for m in models for r in (c.base, c.better) if (r, m) in failed]
        if not present:
            row["verdict"], row["p"] = "not run", np.nan
        elif flagged:
            kept = [m for m in models if (c.base, m) not in failed and (c.better, m) not in failed]
            without = _evidence(c, metrics, poc, per_class, kept, samples, seed)["verdict"] if kept else "no pair left"
            row["flagged_models"] = " ".join(flagged)
            row["verdict_without_flagged"] = without
        rows.append(row)
    table = pd.DataFrame(rows)
    table["p1_disagrees"] = np.sign(table.precision_at_1_diff) * np.sign(table.map_at_r_diff) < 0
    return with_holm(decide(table, tuning, noise))


def with_holm(table: pd.DataFrame) -> pd.DataFrame:
    """The fragile mark (module docstring) and Holm's adjustment, over the tested claims on the MLRC runs as one
    family and the 2-D proof of concept's as another (it is measured once for every data set, so it belongs to
    no data set's family)."""
    table = table.copy()
    table["fragile"] = table.verdict.isin(("reproduced", "contradicted")) & (
        (table.sign_flips_without.fillna("") != "") | table.p1_disagrees
    )
    tested = table.verdict.isin(TESTED)
    poc = table.compared_over == "poc seeds"
    table["p_holm"] = np.nan
    for family in (~poc, poc):
        if family.any():
            table.loc[family, "p_holm"] = holm(table.p.where(tested)[family])
    table["verdict_holm"] = [holm_verdict(v, q) for v, q in zip(table.verdict, table.p_holm)]
    return table


VERDICTS = ("reproduced", "contradicted", "inconclusive", "untuned", "tuning unfinished", "not tested", "not run")


def verdict_counts(table: pd.DataFrame) -> tuple[str, str]:
    """How many claims got each verdict, before and after Holm's adjustment (claims.md's and the index's first line)."""
    counts, holm_counts = table.verdict.value_counts(), table.verdict_holm.value_counts()
    shown = VERDICTS + ((USER,) if counts.get(USER) else ())  # user values: only in an experiment
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in shown)
    summary += f" ({int(table.fragile.sum())} of the reproduced or contradicted fragile)"
    return summary, ", ".join(f"{holm_counts.get(v, 0)} {v}" for v in VERDICTS[:3])


def interval_text(row, metric: str, decimals: int, kind: str) -> str:
    """`diff [low, high]` of interval `kind` ("t" or "boot")."""
    low, high = row[f"{metric}_{kind}_low"], row[f"{metric}_{kind}_high"]
    if np.isnan(row[f"{metric}_diff"]) or np.isnan(low):
        return "-"
    f = f".{decimals}f"
    return f"{row[f'{metric}_diff']:+{f}} [{low:+{f}}, {high:+{f}}]"


def fragility(row) -> str:
    """The two checks of a row (module docstring): does the sign hold as each unit is left out, does P@1 agree."""
    if np.isnan(row.map_at_r_diff):
        return "-"
    unit = "seed" if row.compared_over == "poc seeds" else "fold"
    flips = str(row.sign_flips_without or "").split()
    out = [
        f"sign flips without {unit} {' or '.join(flips)}"
        if flips
        else (f"sign holds leaving any {unit} out" if row.folds >= 3 else f"too few {unit}s to leave one out")
    ]
    if not np.isnan(row.precision_at_1_diff):
        out.append(f"P@1 has the other sign ({row.precision_at_1_diff:+.2f})" if row.p1_disagrees else "P@1 agrees")
    return "; ".join(out)


def _render(value) -> str:
    """A setting as the differences column shows it: a section as ``name (key value, ...)``."""
    if isinstance(value, dict):
        rest = ", ".join(f"{k} {_render(v)}" for k, v in value.items() if k != "name")
        return f"{value.get('name', '')} ({rest})".strip() if rest else str(value.get("name", ""))
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def claim_differences(claims: list[Claim], settings: dict[str, dict]) -> dict[tuple[str, str], str]:
    """(base, better) -> what the arms of each claim differ in: a family's variants (or the 2-D proof of concept's)
    by their variant first; then, where both runs are trained, `arm_differences` of the settings each trained at
    (`settings`: run -> its data/tuned/<run>.json settings, its tuned values applied), so a row shows the values its
    models were trained with, not params.yaml's."""
    from pipeline.runs import parse_run

    out = {}
    for c in claims:
        a, b = (None, None) if c.where == POC else (parse_run(c.base), parse_run(c.better))
        parts = []
        if c.where == POC or a and b and a[:2] == b[:2]:
            parts.append(f"variant: {a[2] if a else c.base} → {b[2] if b else c.better}")
        if c.base in settings and c.better in settings:
            parts.append(arm_differences(settings[c.base], settings[c.better]))
        if parts:
            out[c.base, c.better] = "; ".join(p for p in parts if p)
    return out


def arm_differences(base: dict, better: dict) -> str:
    """What two runs' recorded settings (pipeline/runs.py run_record) differ in, key by key; a section that
    names the same thing (loss, miner, sampler) on both sides is compared key by key, else shown whole."""
    out = []
    for key in dict.fromkeys([*base, *better]):
        a, b = base.get(key), better.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict) and a.get("name") == b.get("name"):
            out += [
                f"{key}.{k}: {_render(a.get(k))} → {_render(b.get(k))}"
                for k in dict.fromkeys([*a, *b])
                if a.get(k) != b.get(k)
            ]
        else:
            out.append(f"{key}: {_render(a)} → {_render(b)}")
    return "; ".join(out)


def claims_markdown(table: pd.DataFrame, decimals: int) -> str:
    """The table as markdown: claim, source, the runs compared and what they differ in, pairs (folds), MAP@R with
    the t interval over fold means and the fold-cluster bootstrap interval, P@1 with the t interval, the verdict
    (MAP@R, both intervals; marked fragile, module docstring), the verdict after Holm's adjustment, what makes the
    sign fragile, and the models flagged as failed or cut by a cap."""
    pct = f"{100 * LEVEL:.0f}%"
    head = (
        f"| claim | source | compared (base → claimed better) | the arms differ in | pairs (folds) "
        f"| MAP@R diff [{pct} t, fold means] | MAP@R diff [{pct} bootstrap, folds × classes] | P@1 diff [{pct} t] "
        "| verdict | Holm | leave one out, P@1 | failed models, caps, tuning |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        runs = (
            f"{r.base} → {r.better} (2-D proof of concept; seeds are the unit)"
            if r.compared_over == "poc seeds"
            else f"{label(r.base)} → {label(r.better)}"
        )
        pairs = "-" if pd.isna(r.pairs) else f"{int(r.pairs)} ({int(r.folds)})"
        flags = [f"{r.flagged_models.count(':')} failed: verdict without them {r.verdict_without_flagged}"]
        flags = flags if r.flagged_models else []
        flags += [f"{run}: {n} models cut by a cap" for run, n in (a.split(":") for a in r.capped_arms.split())]
        flags += [f"{r.verdict}: {r.tuning}"] if r.get("tuning") else []
        failed = "; ".join(flags) or "-"
        verdict_text = f"**{r.verdict}**" + (" (fragile)" if r.fragile else "")
        lines.append(
            f"| {r.claim} | {r.source} | {runs} | {r.differs or '-'} | {pairs} "
            f"| {interval_text(r, 'map_at_r', decimals, 't')} | {interval_text(r, 'map_at_r', decimals, 'boot')} "
            f"| {interval_text(r, 'precision_at_1', decimals, 't')} | {verdict_text} | {r.verdict_holm} "
            f"| {fragility(r)} | {failed} |"
        )
    return "\n".join(lines) + "\n"


RANGE_END = (
    "**Runs tuned to a value at an end of its search range** (the optimum may lie beyond it, so a verdict on "
    "them may reflect the range rather than the method; [tuning.md](tuning.md))"
)
NOT_CONVERGED = (
    "**Runs tuned by a study that had not converged** (the study in brackets: its last trials raised its best by "
    "more than the noise of one trial's score, so more trials may move a verdict on them; [tuning.md](tuning.md))"
)


def compared_runs(claims: pd.DataFrame) -> list[str]:
    """The runs the claims compare, in the order they first appear."""
    return list(dict.fromkeys(r for _, c in claims.iterrows() for r in (c.base, c.better)))


def flagged_runs_note(claims: pd.DataFrame, flagged: dict[str, list[str]], lead: str) -> str:
    """A line after `lead` naming the compared runs in `flagged` (run -> what flags it: the keys at an end of their
    search range for `RANGE_END`, the studies that had not converged for `NOT_CONVERGED`, pipeline/reporting/rules.py),
    or nothing when none of them is compared."""
    runs = [r for r in compared_runs(claims) if r in flagged]
    if not runs:
        return ""
    return f"\n{lead}: " + ", ".join(f"`{r}` ({', '.join(f'`{k}`' for k in flagged[r])})" for r in runs) + ".\n"
