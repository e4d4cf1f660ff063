"""Every linear metric learner of the LANML comparison behind one interface: fit(x, y, **hp) -> M.

ANML section 7.1.2: LANML- (eq. 19, convex, 10 nearest same-class neighbours as S_i), LANML+
(gamma1 > 0, every same-class sample as S_i, non-convex: L-BFGS from I / sqrt(N)), PNCA (eq. 21),
and the baselines Euclidean (M = I), NCA (scikit-learn), LMNN, ITML, SCML (metric-learn) and GMML
(Zadeh et al. 2016, closed form, written here: metric-learn does not have it).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import fractional_matrix_power, sqrtm

from pipeline.linear.lanml import (
    LANMLError,
    LANMLProblem,
    neighbourhoods,
    pair_gradient,
    pnca_value_and_gradient,
    solve_factored,
    solve_quasi_newton,
)


def fit_euclidean(x, y, random_state: int = 0) -> np.ndarray:
    return np.eye(x.shape[1])


def fit_lanml_minus(
    x,
    y,
    lam: float,
    gamma1: float,
    gamma2: float,
    k_similar: int = 10,
    tol: float = 1e-7,
    smoothing_min: float = 1e-4,
    m0: np.ndarray | None = None,
    random_state: int = 0,
) -> np.ndarray:
    """Convex (Lemma 3), so any start reaches the optimum: `m0` (a warm start, e.g. the neighbouring
    grid point's solution) or I / sqrt(N) like LANML+."""
    if gamma1 >= 0 or gamma2 <= 0:
        raise LANMLError(f"LANML- needs gamma1 < 0 < gamma2, got gamma1={gamma1}, gamma2={gamma2}")
    problem = LANMLProblem(x, neighbourhoods(x, y, k_similar), gamma1, gamma2, lam)
    start = np.eye(x.shape[1]) / np.sqrt(len(x)) if m0 is None else m0
    return solve_quasi_newton(problem, start, tol=tol, mu_min=smoothing_min)[0]


def fit_lanml_plus(
    x,
    y,
    lam: float,
    gamma1: float,
    gamma2: float,
    tol: float = 1e-7,
    smoothing_min: float = 1e-4,
    random_state: int = 0,
) -> np.ndarray:
    """Not convex: from M0 = I / sqrt(N) (section 7.1.2) every time, so no warm start."""
    if gamma1 <= 0 or gamma2 <= 0:
        raise LANMLError(f"LANML+ needs gamma1 > 0 and gamma2 > 0, got gamma1={gamma1}, gamma2={gamma2}")
    problem = LANMLProblem(x, neighbourhoods(x, y, None), gamma1, gamma2, lam)
    return solve_quasi_newton(problem, np.eye(x.shape[1]) / np.sqrt(len(x)), tol=tol, mu_min=smoothing_min)[0]


def fit_pnca(x, y, alpha: float, random_state: int = 0) -> np.ndarray:
    sets = neighbourhoods(x, y, None)
    return solve_factored(lambda m: pnca_value_and_gradient(x, sets, alpha, m), x.shape[1], len(x))


def _metric_learn(estimator) -> np.ndarray:
    return estimator.get_mahalanobis_matrix()


def fit_nca(x, y, random_state: int = 0) -> np.ndarray:
    from sklearn.neighbors import NeighborhoodComponentsAnalysis

    nca = NeighborhoodComponentsAnalysis(random_state=random_state).fit(x, y)
    return nca.components_.T @ nca.components_


def fit_lmnn(x, y, regularization: float = 0.5, n_neighbors: int = 3, random_state: int = 0) -> np.ndarray:
    """metric-learn's LMNN. Its target neighbours are same-class samples, so a class of c samples allows at
    most c - 1 of them: n_neighbors is capped there (choice: Glass's smallest class has 9 samples, about 5
    in a cross-validation fold, below the paper's grid of 4..10; metric-learn would refuse the fit)."""
    from metric_learn import LMNN

    n_neighbors = min(n_neighbors, int(np.unique(y, return_counts=True)[1].min()) - 1)
    return _metric_learn(
        LMNN(n_neighbors=n_neighbors, regularization=regularization, random_state=random_state).fit(x, y)
    )


def fit_itml(x, y, gamma: float = 1.0, random_state: int = 0) -> np.ndarray:
    from metric_learn import ITML_Supervised

    return _metric_learn(ITML_Supervised(gamma=gamma, random_state=random_state).fit(x, y))


def fit_scml(x, y, random_state: int = 0) -> np.ndarray:
    from metric_learn import SCML_Supervised

    return _metric_learn(SCML_Supervised(random_state=random_state).fit(x, y))


def fit_gmml(x, y, t: float = 0.5, reg: float = 1e-3, random_state: int = 0) -> np.ndarray:
    """GMML: M = A^{-1} #_t B, the point at t on the geodesic from A^{-1} to B, with A (B) the scatter of
    the similar (dissimilar) pairs, each regularised by reg * I (Zadeh et al. 2016, eq. 11 and 15)."""
    same = (y[:, None] == y[None, :]).astype(float)
    eye = reg * np.eye(x.shape[1])
    a = pair_gradient(x, same) + eye  # sum over ordered pairs of (x_i - x_j)(x_i - x_j)^T
    b = pair_gradient(x, 1 - same) + eye
    a_half, a_inv_half = np.real(sqrtm(a)), np.real(fractional_matrix_power(a, -0.5))
    middle = np.real(fractional_matrix_power(a_half @ b @ a_half, t))
    m = a_inv_half @ middle @ a_inv_half
    return (m + m.T) / 2


WARM_STARTED = ("lanml_minus",)  # convex methods that accept m0 (protocol.py warm-starts them along the grid)
METHODS: dict[str, Callable] = {
    "euclidean": fit_euclidean,
    "lanml_minus": fit_lanml_minus,
    "lanml_plus": fit_lanml_plus,
    "pnca": fit_pnca,
    "nca": fit_nca,
    "lmnn": fit_lmnn,
    "itml": fit_itml,
    "scml": fit_scml,
    "gmml": fit_gmml,
}


def transform(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """x L^T with M = L^T L, so Euclidean distances of the result are Mahalanobis distances under M."""
    vals, vecs = np.linalg.eigh((m + m.T) / 2)
    return x @ (vecs * np.sqrt(np.maximum(vals, 0.0)))
