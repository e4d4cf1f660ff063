"""Fit time of LANML-, LANML+ and metric-learn's LMNN side by side (ANML section 7.1.3, Fig. 8).

On one data set, in one process: the training part of the protocol's first split (z-score and PCA
fitted on it, as in protocol.py), timed in process CPU time (a busy machine adds wall-clock time,
not CPU time): LANML- and LANML+ fitted ``repeats`` times, the least time kept (fits of a tenth of a
second are the ones a cache or a timer tick can disturb), LMNN once per Kt (fits of seconds). Settings of Fig. 8:
LANML- and LANML+ with lambda 1 and gamma1 -1 / +1 (gamma2 1: the paper does not give it), LMNN with regularisation
0.5 and Kt = 4..7 target neighbours. Neighbourhoods and tolerances are the protocol's (lanml.k_similar, solver_tol,
smoothing_min). Each LANML fit is also solved to a strict tolerance (relative decrease 1e-12,
smoothing 1e-7); the test accuracies of the two (kNN, best K in 1..max_k on the test part, the
paper's reading) show what the default tolerance costs. The solver's objective evaluations and
distances computed, with and without screening, are machine-independent measures of the work.
"""

from __future__ import annotations

import time

import numpy as np

from pipeline.linear.lanml import LANMLProblem, neighbourhoods, solve_quasi_newton
from pipeline.linear.methods import fit_lmnn, transform
from pipeline.linear.protocol import knn_accuracies, split_parts

LMNN_TARGETS = (4, 5, 6, 7)  # Fig. 8: LMNN-4 .. LMNN-7
STRICT = {"tol": 1e-12, "mu_min": 1e-7}


def best_cpu_time(fit, repeats: int):
    """(least process CPU seconds over `repeats` calls of fit(), fit()'s last result)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.process_time()
        out = fit()
        best = min(best, time.process_time() - start)
    return best, out


def lanml_problems(x, y, k_similar: int) -> dict[str, LANMLProblem]:
    """Fig. 8's LANML- and LANML+ problems (lambda 1, gamma1 -1 / +1, gamma2 1)."""
    return {
        "lanml_minus": LANMLProblem(x, neighbourhoods(x, y, k_similar), gamma1=-1.0, gamma2=1.0, lam=1.0),
        "lanml_plus": LANMLProblem(x, neighbourhoods(x, y, None), gamma1=1.0, gamma2=1.0, lam=1.0),
    }


def time_fits(x, y, cfg, seed: int, repeats: int) -> dict:
    """{method: {cpu_seconds, accuracy, ...}} for LANML-, LANML+ and LMNN-<Kt> on one data set
    (`cfg`: the lanml params section), and the LMNN / LANML fit-time ratios."""
    x_train, x_test, y_train, y_test = split_parts(x, y, seed, cfg.test_fraction, cfg.pca_dims)

    def accuracy(m):
        return 100 * float(
            knn_accuracies(transform(x_train, m), y_train, transform(x_test, m), y_test, cfg.max_k).max()
        )

    start = np.eye(x_train.shape[1]) / np.sqrt(len(x_train))  # M0 = I / sqrt(N) (section 7.1.2)
    out = {}
    for name, problem in lanml_problems(x_train, y_train, cfg.k_similar).items():

        def fit(screen=True, problem=problem):
            return solve_quasi_newton(problem, start, tol=cfg.solver_tol, mu_min=cfg.smoothing_min, screen=screen)

        seconds, (m, work) = best_cpu_time(fit, repeats)
        _, unscreened = fit(screen=False)
        strict, _ = solve_quasi_newton(problem, start, **STRICT)
        out[name] = {
            "cpu_seconds": seconds,
            "accuracy": accuracy(m),
            "strict_accuracy": accuracy(strict),
            "objective": problem.objective(m),
            "strict_objective": problem.objective(strict),
            "evaluations": work["evaluations"],
            "pairs": work["pairs"],
            "pairs_unscreened": unscreened["pairs"],
        }
    for targets in LMNN_TARGETS:
        seconds, m = best_cpu_time(
            lambda targets=targets: fit_lmnn(
                x_train, y_train, regularization=0.5, n_neighbors=targets, random_state=seed
            ),
            1,
        )
        out[f"lmnn_{targets}"] = {"cpu_seconds": seconds, "accuracy": accuracy(m)}
    ratios = {
        f"lmnn_{t}/{name}": out[f"lmnn_{t}"]["cpu_seconds"] / out[name]["cpu_seconds"]
        for name in ("lanml_minus", "lanml_plus")
        for t in LMNN_TARGETS
    }
    return {"train_samples": len(x_train), "features": int(x_train.shape[1]), "methods": out, "ratios": ratios}
