"""Paired comparisons of two runs over replicate models: the statistics of the claims table
(pipeline/reporting/claims.py), beside the plain intervals (intervals.py).

Two runs train a model on the same MLRC fold with the same replicate seed, so each (fold, seed) gives one
difference better - base of a test metric (in points). The unit of replication is the **fold**, not the model: a
fold's seeds share its training and validation classes and fail together, so 4 folds x 2 seeds are nearer 4
observations than 8. Two 95% intervals of the mean difference:
- ``t`` (:func:`t_over_units`): the t interval over the fold means (each fold's difference averaged over its seeds;
  F - 1 degrees of freedom): what another draw of folds would give on these test classes;
- ``bootstrap`` (:func:`cluster_bootstrap`): a cluster bootstrap that resamples the folds, then the test classes (a
  class's queries move together), and recomputes the mean of the fold means.
:func:`verdict` needs every interval on one side of 0; :func:`holm` adjusts the p-values of a family of claims;
:func:`sign_flips_leaving_one_out` says which units a verdict's sign hangs on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.evaluation.intervals import LEVEL, mean_interval


def model_fold(model: str) -> int:
    """The MLRC fold of a model key of the metrics files (``fold_<k>_seed_<s>``)."""
    return int(model.split("_")[1])


def unit_means(diffs: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Each unit's mean difference (a fold's over its seeds), units in ascending order."""
    return np.array([diffs[units == u].mean() for u in np.unique(units)])


def t_over_units(diffs: np.ndarray, units: np.ndarray) -> tuple[float, float, float]:
    """The mean difference over the units (folds: each fold's mean over its seeds), its 95% t interval's half-width
    and the two-sided p-value of the t-test of mean 0, with the units as the sample (NaN below two units)."""
    means = unit_means(diffs, units)
    mean, half = mean_interval(means)
    if len(means) < 2:
        return mean, float("nan"), float("nan")
    if np.ptp(means) <= 1e-9 * max(1.0, abs(mean)):  # no spread (to rounding): t is infinite, or 0 / 0 at no difference
        return mean, 0.0, 1.0 if abs(mean) <= 1e-9 else 0.0
    return mean, half, float(stats.ttest_1samp(means, 0.0).pvalue)


def cluster_bootstrap(
    base: pd.DataFrame, better: pd.DataFrame, models: list[str], metric: str, samples: int, seed: int
) -> tuple[float, float, float]:
    """Percentile interval (LEVEL) of the mean paired difference better - base in points, and its two-sided
    bootstrap p-value, resampling folds, then test classes: the folds are the unit (a fold's seeds share its
    validation classes and fail together), the test classes are what the claim is about.

    base / better: per-class scores (rows: test classes, ``queries`` and ``<model>:<metric>`` columns, from the
    evaluate stage). With d[p, c] the summed per-query difference of model pair p on class c and n[c] the class's
    queries, a replicate with fold counts u (F folds) and class counts w gives
    sum_f u_f mean_{p in f} (sum_c w_c d[p, c] / sum_c w_c n[c]) / F; with every count 1 that is the mean over
    folds of the fold means. p = 2 min(share of replicates <= 0, share >= 0), at most 1."""
    if not base.index.equals(better.index) or not base["queries"].equals(better["queries"]):
        raise ValueError("claims: the runs were evaluated on different test classes")
    n = base["queries"].to_numpy(np.float64)
    d = np.stack([(better[f"{m}:{metric}"] - base[f"{m}:{metric}"]).to_numpy(np.float64) * n for m in models])
    folds = np.array([model_fold(m) for m in models])
    names = np.unique(folds)
    average = np.stack([(folds == f) / (folds == f).sum() for f in names], axis=1)  # pairs x folds
    rng = np.random.default_rng(seed)
    classes = len(n)
    u = rng.multinomial(len(names), np.full(len(names), 1 / len(names)), size=samples).astype(np.float64)
    w = rng.multinomial(classes, np.full(classes, 1 / classes), size=samples).astype(np.float64)
    per_pair = (w @ d.T) / (w @ n)[:, None]  # replicate x pair
    stat = 100 * ((per_pair @ average) * u).sum(axis=1) / len(names)
    tail = 100 * (1 - LEVEL) / 2
    low, high = np.percentile(stat, [tail, 100 - tail])
    p = min(1.0, 2 * min(float(np.mean(stat <= 0)), float(np.mean(stat >= 0))))
    return float(low), float(high), p


def sign_flips_leaving_one_out(diffs: np.ndarray, units: np.ndarray) -> list[int]:
    """The units whose removal flips the sign of the mean of the unit means (or brings it to 0); none below
    three units (one left would be no mean to speak of)."""
    names, means = np.unique(units), unit_means(diffs, units)
    if len(means) < 3:
        return []
    sign = np.sign(means.mean())
    return [int(u) for k, u in enumerate(names) if np.sign(np.delete(means, k).mean()) != sign]


def verdict(intervals: list[tuple[float, float]]) -> str:
    """Reproduced when every interval lies above 0, contradicted when every one lies below, else inconclusive."""
    if not intervals or any(np.isnan(low) or np.isnan(high) for low, high in intervals):
        return "inconclusive"
    if all(low > 0 for low, _ in intervals):
        return "reproduced"
    return "contradicted" if all(high < 0 for _, high in intervals) else "inconclusive"


def holm(p: pd.Series) -> pd.Series:
    """Holm's step-down adjusted p-values (family-wise error) of the non-NaN entries of `p`; NaN stays NaN."""
    valid = p.dropna().sort_values(kind="stable")
    m = len(valid)
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * valid.to_numpy()))
    return pd.Series(adjusted, index=valid.index).reindex(p.index)


TESTED = ("reproduced", "contradicted", "inconclusive")  # the verdicts of a claim that was measured


def holm_verdict(unadjusted: str, p_holm: float) -> str:
    """A tested claim keeps its reproduced / contradicted verdict when Holm's adjusted p is below 1 - LEVEL."""
    if unadjusted in ("reproduced", "contradicted") and p_holm < 1 - LEVEL:
        return unadjusted
    return "inconclusive" if unadjusted in TESTED else unadjusted
