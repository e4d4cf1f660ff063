"""The verdict rules: what keeps a claim's intervals from deciding it, all in one place.

pipeline/reporting/claims.py applies them to every claim on the MLRC runs; each replaces the verdict its intervals
give (a verdict at our settings' or our tuning's mercy is worse than none):

- **failed** (`failed`): a compared model kept epoch 0 or 1, or its validation MAP@R never rose above the untrained
  network's. The claim is measured again without the pairs holding such models; where that changes the verdict it
  reads **not tested**.
- **capped** (`cap_decides`): more than one model of an arm was cut by a cap while still improving: **not tested**.
- **user values** (`study_flaw`): an arm trained at a value set in params.yaml is the user's experiment, not the
  papers' comparison.
- **equal effort** (MLRC; `claim_tuning`, `unequal_searches`): both arms need studies of their own with the same
  number of trials over the same ranges of the keys they share, else **untuned**.
- **finished search** (`study_flaw`): a study whose best value lies at a range end that is not the key's own limit
  (`range_end`, `at_limit`), or that holds a trial cut by the epoch cap (`capped_trials`), or that has not converged
  (`unconverged`), makes its claims **tuning unfinished**.

Convergence (`unconverged`) compares what a study could still gain with the noise of its objective, not the position
of its best trial. The estimate of the gain is what its last LATE share of trials raised its best by: TPE's gains
shrink as a search goes on, so as many trials again are not expected to gain more. The noise is the standard
deviation of one trial's fold-mean validation MAP@R, measured by rerunning chosen configurations with another seed
(pipeline/reporting/selection.py). A study converged when that gain is at most the noise (times
report.convergence_sigmas, 1 by default): its late best is tied with its earlier best within one standard error (the
1-SE rule), and more search would move the best by less than a
rerun of the same configuration does (the stopping rule of Makarova et al. 2022, "Automatic termination for
hyperparameter optimization"). MLRC itself runs a fixed, equal budget of 50 trials with no convergence test.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pipeline.evaluation.paired import verdict
from pipeline.studies.tuning import completed

EDGE = 0.05  # a best value this close to a range's end (fraction of its width) is flagged: the optimum may lie beyond
LATE = 0.2  # the share of a study's last trials whose gain estimates what more trials could still gain
MAX_CAPPED = 1  # an arm with more models than this cut by a cap while improving leaves its claim to the cap
UNTUNED = "untuned"
UNFINISHED = "tuning unfinished"
USER = "user values"  # an arm trained at a value set in params.yaml: the user's experiment, no equal-effort comparison


def failed(curve: pd.Series, best_epoch: int) -> bool:
    """The failure rule on a model's validation MAP@R per epoch (epoch 0 first) and the epoch early stopping kept:
    it kept epoch 0 or 1 (training left it at the untrained network, or it peaked after one epoch and fell away for
    the whole patience), or it never rose above the untrained network's (epoch 0)."""
    return best_epoch <= 1 or len(curve) < 2 or curve.iloc[1:].max() <= curve.iloc[0]


def cap_decides(cut_models: int) -> bool:
    """Whether an arm with `cut_models` models cut by a cap while improving leaves its claim to the cap (raise
    train.max_epochs / ccp.max_subproblems / poc.max_epochs / poc.max_subproblems for the data set)."""
    return cut_models > MAX_CAPPED


def late_gain(record: dict) -> dict | None:
    """What the last LATE share of a study's trials (at least its last one) raised its best by, in validation MAP@R
    points: {best_trial, trials, window, gain}; None when they raised nothing or the study has no earlier trial."""
    trials, done = record["trials"], completed(record["history"])
    window = max(1, round(LATE * trials))
    before = [t["val_map_at_r"] for t in done if t["trial"] < trials - window]
    if trials < 2 or not before or record.get("best_val_map_at_r") is None:
        return None
    gain = 100 * (record["best_val_map_at_r"] - max(before))
    if gain <= 0:
        return None
    return {"best_trial": record["best_trial"], "trials": trials, "window": window, "gain": gain}


def unconverged(record: dict, noise: float | None) -> str:
    """Why a study has not converged (module docstring), or "" when it has: its last trials gained more than the
    `noise` (points; None when no rerun measured it, and then any late gain counts)."""
    late = late_gain(record)
    if late is None or noise is not None and late["gain"] <= noise:
        return ""
    than = f"the noise bound {noise:.2f}" if noise is not None else "0 (no rerun measured the noise)"
    return f"its last {late['window']} trials gained {late['gain']:+.2f} points, more than {than}"


def unconverged_chain(records: list[dict], noise: float | None) -> dict[str, list[str]]:
    """Per run, the studies among its own and those it inherits values from that have not converged
    (`unconverged`): a claim on such a run is measured at a search that had not settled."""
    by_run = {r["run"]: r for r in records}
    flagged = {}
    for r in records:
        chain, record = [], r
        while record is not None:
            if unconverged(record, noise):
                chain.append(record["run"])
            record = by_run.get(record["inherits"])
        if chain and r["values"]:
            flagged[r["run"]] = chain
    return flagged


def range_text(dim: dict) -> str:
    kind = "int " if dim["integer"] else ("log " if dim["log"] else "")
    above = f" above `{dim['above']}`" if dim.get("above") else ""
    return f"{kind}[{dim['low']:g}, {dim['high']:g}]{above}"


def drawn(values: dict[str, float], key: str, dim: dict) -> float:
    """What the search drew for `key` at `values` (a run's used values): the value, or its excess over the key it is
    kept above (pipeline/studies/tuning.py `applied`), which its range bounds."""
    return values[key] - values[dim["above"]] if dim.get("above") else values[key]


def range_end(value: float, dim: dict) -> str:
    """The end of the range (`low` / `high`) that `value` lies within EDGE of, on the scale the sampler draws on
    (logarithmic for a log range); an empty string when it lies inside."""
    scale = math.log if dim["log"] else float
    low, high = scale(dim["low"]), scale(dim["high"])
    position = (scale(value) - low) / (high - low)
    return "low" if position <= EDGE else ("high" if position >= 1 - EDGE else "")


def at_limit(record: dict, key: str, end: str) -> bool:
    """Whether the `end` ("low" / "high") of `key`'s range in `record`'s study is the key's own limit: the bound
    the schema puts on it (pipeline/studies/values.py `limits`: a margin's 0, a cosine radius's 1; or the top of
    the paper's reading of the key, PROFS's lambda's 1: pipeline/studies/tuning.py READING_TOPS), or a best value at
    which the key changes nothing (`inert_while`: PROFS's rho and lambda where M is 1). The search covered every
    model the key gives on that side, so a best value there is the loss's edge, not a clipped search."""
    limits = record.get("limits", {}).get(key)
    if not end or not limits:
        return False
    limit = limits[0 if end == "low" else 1]
    when = record.get("inert_while", {}).get(key, {})
    values = record["values"]
    inert = bool(when) and all(k in values and values[k] <= bound for k, bound in when.items())
    return inert or (limit is not None and limit == record["space"][key][end])


def study_flaw(record: dict | None, noise: float | None) -> tuple[str, list[str]]:
    """What keeps a run's tuning from counting under the equal-effort rule (MLRC): (USER, why) when a key of its
    space was set in params.yaml (pipeline/studies/values.py); (UNTUNED, why) when it
    has no study of its own or trains at values another run's study chose; (UNFINISHED, why) when a value of its
    study lies within EDGE of an end of its range that is not the key's own limit (`at_limit`), the study has not
    converged against `noise` (`unconverged`) or a trial was cut by the epoch cap (`capped_trials`); ("", []) when
    none of these."""
    if record is None:
        return UNTUNED, ["no tuning record"]
    if record.get("user_set"):
        return USER, [f"{key} = {value:g} set in params.yaml" for key, value in record["user_set"].items()]
    if record["inherited"]:
        own = "" if record["trials"] else ", no study of its own"
        return UNTUNED, [f"{', '.join(record['inherited'])} from {record['inherits']}'s study{own}"]
    if not record["trials"]:
        return UNTUNED, ["no study (trained at params.yaml's values)"]
    space, values = record["space"], record["values"]
    why = [
        f"{key} at its {end} end"
        for key in values
        if key in space
        and (end := range_end(drawn(values, key, space[key]), space[key]))
        and not at_limit(record, key, end)
    ]
    settling = unconverged(record, noise)
    if settling:
        why.append(settling)
    capped = capped_trials(record)
    if capped:
        why.append(f"{trials_text(capped)} cut by the epoch cap")
    return (UNFINISHED, why) if why else ("", [])


def unequal_searches(base: dict, better: dict) -> list[str]:
    """Where a claim's arms did not search alike (MLRC's equal effort: one search space for the keys the arms
    share): a key of the base arm's study that is not its own (outside `baselines.<run>.`, i.e. a key of the
    family both arms train with) but that the better arm's study did not search, or searched over another range.
    The better arm's variant keys (CCP's lambda and pool size, PROFS's lambda and rho) are its own to add."""
    why = []
    for key, dim in base["space"].items():
        if key.startswith(f"baselines.{base['run']}."):
            continue
        other = better["space"].get(key)
        if other is None:
            why.append(f"{better['run']}: {key} not searched ({base['run']} searched it)")
        elif other != dim:
            why.append(f"{key} searched on {range_text(dim)} by {base['run']}, {range_text(other)} by {better['run']}")
    return why


def trials_text(numbers: list[int]) -> str:
    return f"trial{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"


def capped_trials(record: dict) -> list[int]:
    """The trials of a study in which a fold model stopped at the epoch cap: their score is a clipped one."""
    return [t["trial"] for t in record["history"] if t.get("capped")]


def claim_tuning(records: dict[str, dict], base: str, better: str, noise: float | None) -> tuple[str, str]:
    """(verdict, why) that the tuning of a claim's two arms imposes, or ("", "") when both ran studies of their own
    with the same number of trials over the same searches (`unequal_searches`) and neither is unfinished
    (`study_flaw`): an arm at a value set in params.yaml is USER (an experiment, not the papers' comparison); an arm
    tuned less than the other, or not at all, is UNTUNED; an arm whose search hit a range end, holds a capped trial
    or had not converged against `noise` (points) is UNFINISHED."""
    flaws = {run: study_flaw(records.get(run), noise) for run in (base, better)}
    user = [f"{run}: {'; '.join(why)}" for run, (flaw, why) in flaws.items() if flaw == USER]
    if user:
        return USER, "; ".join(user)
    untuned = [f"{run}: {'; '.join(why)}" for run, (flaw, why) in flaws.items() if flaw == UNTUNED]
    if untuned:
        return UNTUNED, "; ".join(untuned)
    if records[base]["trials"] != records[better]["trials"]:
        return UNTUNED, f"{base}: {records[base]['trials']} trials, {better}: {records[better]['trials']}"
    unequal = unequal_searches(records[base], records[better])
    if unequal:
        return UNTUNED, "; ".join(unequal)
    unfinished = [f"{run}: {'; '.join(why)}" for run, (flaw, why) in flaws.items() if flaw == UNFINISHED]
    return (UNFINISHED, "; ".join(unfinished)) if unfinished else ("", "")


def decide(table: pd.DataFrame, records: dict[str, dict] | None, noise: float | None) -> pd.DataFrame:
    """Every rule on a claims table (pipeline/reporting/claims.py claims_table's columns: this report's, or a
    companion's read from its csv, whatever rules it was written under). Each row's verdict comes from its intervals
    (MAP@R's t interval and, where measured, its bootstrap one), its p is the larger of theirs. Then the failed rule
    and the capped rule; then, with `records` (run -> tuning record), the tuning rules against `noise` (points),
    which replace any of these. A replaced verdict has no p; `tuning` says why a tuning rule replaced it. The 2-D
    proof of concept trains at the paper's Fig. 2 settings, the same for all: no tuning rule applies to it. Not run
    stays not run."""
    table = table.copy()
    table["tuning"] = ""
    for i, r in table.iterrows():
        if r.verdict == "not run":
            continue
        intervals = [(r.map_at_r_t_low, r.map_at_r_t_high)]
        if not np.isnan(r.map_at_r_boot_low):
            intervals.append((r.map_at_r_boot_low, r.map_at_r_boot_high))
        p = [q for q in (r.map_at_r_t_p, r.map_at_r_boot_p) if not np.isnan(q)]
        outcome, why = verdict(intervals), ""
        without = r.verdict_without_flagged if isinstance(r.verdict_without_flagged, str) else ""
        flagged = isinstance(r.flagged_models, str) and r.flagged_models != ""
        if flagged and without != outcome or isinstance(r.capped_arms, str) and r.capped_arms:
            outcome = "not tested"  # the failed and capped rules
        if records is not None and r.compared_over != "poc seeds":
            flaw, why = claim_tuning(records, r.base, r.better, noise)
            outcome = flaw or outcome
        tested = outcome in ("reproduced", "contradicted", "inconclusive")
        table.loc[i, ["verdict", "p", "tuning"]] = [outcome, max(p) if tested and p else np.nan, why]
    return table
