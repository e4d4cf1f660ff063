"""95% confidence intervals over replicate models (folds x seeds): the mean and the Student t interval.

For n values x_1..x_n with mean m and sample standard deviation s (ddof = 1), the interval is
m ± t_{0.975, n-1} s / sqrt(n). For a paired comparison the values are the per-model differences
b_i - a_i of two runs trained on the same fold with the same seed (the paired t interval). Folds and
seeds are treated as independent replicates; models of one fold share their validation classes, so
the interval is a guide to what another draw of seeds would give, not a bound over data sets.
With one value the half-width is NaN (no spread to estimate).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

LEVEL = 0.95


def mean_interval(values) -> tuple[float, float]:
    """(mean, half-width of the 95% t interval) of `values`."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("mean_interval: no values")
    if x.size == 1:
        return float(x[0]), float("nan")
    half = stats.t.ppf(0.5 + LEVEL / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return float(x.mean()), float(half)
