"""LANML (ANML section 5, eq. 19) and PNCA (eq. 21): Mahalanobis metrics from log-exp-mean radii.

For each sample x_i with similar set S_i and dissimilar set D_i, and the squared
Mahalanobis distance d_M(x, y) = (x - y)^T M (x - y):

    s_i(M) = -1/gamma1 log( 1/|S_i| sum_{j in S_i} exp(-gamma1 d_M(x_i, x_j)) )   (eq. 15)
    t_i(M) = -1/gamma2 log( 1/|D_i| sum_{l in D_i} exp(-gamma2 d_M(x_i, x_l)) )   (eq. 16)
    f(M)   = 1/N sum_i hinge(margin + s_i - t_i) + lambda Omega(M),   M PSD         (eq. 19)
    Omega(M) = 1/N sum_i 1/|S_i| sum_{j in S_i} d_M(x_i, x_j)                        (section 7.1.1)

gamma1 < 0 makes s_i a soft maximum of the similar distances and gamma2 > 0 makes
t_i a soft minimum of the dissimilar ones; then f is convex (Lemma 3): LANML-.
gamma1 > 0 (LANML+) is not convex. Choices where the paper is silent: the hinge
has margin 1 (``margin``; without one M = 0 is optimal) and the losses are
averaged over the N samples, like Omega, so lambda keeps its meaning across data
set sizes.

Solvers: ``solve_cvxpy`` (the exact reference for small d: the problem is built
in disciplined convex form, so cvxpy's DCP check certifies Lemma 3, and refused
for gamma1 >= 0); ``solve_projected_gradient`` (accelerated projected gradient,
FISTA with backtracking, on a Huber-smoothed hinge with continuation, projection
onto the PSD cone by eigenvalue clipping) for scale; ``solve_factored`` (L-BFGS
on a factor L, M = L^T L, from M0 = I / sqrt(N) as in section 7.1.2) for the
non-convex LANML+ and for PNCA.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from pipeline.infra.errors import PipelineError


class LANMLError(PipelineError, ValueError):
    """A LANML problem that cannot be set up or solved as asked; the message says why."""


@dataclass
class Neighbourhoods:
    """similar[i, j]: j in S_i; dissimilar[i, l]: l in D_i (boolean N x N masks)."""

    similar: np.ndarray
    dissimilar: np.ndarray


def neighbourhoods(x: np.ndarray, y: np.ndarray, k_similar: int | None) -> Neighbourhoods:
    """S_i: the k_similar nearest same-class samples under the Euclidean metric (LANML-, section 7.1.2),
    or every other same-class sample (k_similar None: LANML+ and PNCA); D_i: every other-class sample."""
    y = np.asarray(y)
    if len(np.unique(y)) < 2:
        raise LANMLError(f"metric learning needs at least two classes, got {len(np.unique(y))}")
    same = (y[:, None] == y[None, :]) & ~np.eye(len(y), dtype=bool)
    if not same.any(axis=1).all():
        raise LANMLError("every sample needs another sample of its class (a class has a single sample)")
    similar = same
    if k_similar is not None:
        d = np.where(same, mahalanobis_sq(x, np.eye(x.shape[1])), np.inf)  # squared Euclidean
        nearest = np.argsort(d, axis=1, kind="stable")[:, :k_similar]
        similar = np.zeros_like(same)
        np.put_along_axis(similar, nearest, True, axis=1)
        similar &= same  # classes smaller than k_similar + 1 give fewer neighbours
    return Neighbourhoods(similar, y[:, None] != y[None, :])


def mahalanobis_sq(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """All pairwise d_M(x_i, x_j) = (x_i - x_j)^T M (x_i - x_j), N x N."""
    return distances_to(x, x, m)


def distances_to(a: np.ndarray, x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """d_M(a_i, x_j) for every row a_i of `a` and x_j of `x`, len(a) x len(x)."""
    am, xm = a @ m, x @ m
    qa, qx = np.einsum("ij,ij->i", am, a), np.einsum("ij,ij->i", xm, x)
    return np.maximum(qa[:, None] + qx[None, :] - 2 * am @ x.T, 0.0)


def pair_gradient(x: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """sum_ij coef_ij (x_i - x_j)(x_i - x_j)^T, the gradient in M of sum_ij coef_ij d_M(x_i, x_j)."""
    weights = np.diag(coef.sum(axis=1) + coef.sum(axis=0)) - coef - coef.T
    return x.T @ weights @ x


def rows_pair_gradient(x: np.ndarray, rows: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """pair_gradient of an N x N coefficient matrix that is zero outside `rows` (given as its
    len(rows) x N part): sum_{i in rows, j} coef_ij (x_i - x_j)(x_i - x_j)^T, in O(len(rows) N d)."""
    a = x[rows]
    cross = a.T @ coef @ x
    return a.T @ (coef.sum(axis=1)[:, None] * a) + x.T @ (coef.sum(axis=0)[:, None] * x) - cross - cross.T


def log_exp_mean(d: np.ndarray, mask: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row -1/gamma log(mean_{mask} exp(-gamma d)) (eqs. 15-16) and its gradient in d (a softmax),
    by the max-shifted log-sum-exp (scipy.special.logsumexp's; written out here, at a third of its
    time on these small rows; the tests compare the two)."""
    a = np.where(mask, -gamma * d, -np.inf)
    top = a.max(axis=1, keepdims=True)
    e = np.exp(a - top)
    total = e.sum(axis=1)
    value = -(top[:, 0] + np.log(total / mask.sum(axis=1))) / gamma
    return value, e / total[:, None]


def huber_hinge(z: np.ndarray, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """max(0, z) smoothed on [0, mu] (mu = 0: the hinge itself); value and derivative."""
    if mu <= 0:
        return np.maximum(z, 0.0), (z > 0).astype(float)
    value = np.where(z <= 0, 0.0, np.where(z < mu, z * z / (2 * mu), z - mu / 2))
    return value, np.clip(z / mu, 0.0, 1.0)


@dataclass
class LANMLProblem:
    """Eq. 19 on one training set."""

    x: np.ndarray
    sets: Neighbourhoods
    gamma1: float
    gamma2: float
    lam: float
    margin: float = 1.0
    loss: str = "hinge"  # or "linear": l(x) = x, the setting of Proposition 4 (NCA)

    def __post_init__(self):
        if self.loss not in ("hinge", "linear"):
            raise LANMLError(f"unknown LANML loss {self.loss!r} (valid: hinge, linear)")
        if self.gamma1 == 0 or self.gamma2 == 0:
            raise LANMLError("gamma1 and gamma2 must be non-zero (eqs. 15-16 divide by them)")
        s = self.sets.similar
        self.reg_coef = s / (len(s) * s.sum(axis=1, keepdims=True))  # Omega(M) = sum reg_coef_ij d_ij
        self.reg_matrix = pair_gradient(self.x, self.reg_coef)  # Omega(M) = <M, reg_matrix>

    def pair_terms(self, m: np.ndarray, mu: float, rows: np.ndarray | None = None):
        """For samples `rows` (all when None): the margins z_i = margin + s_i - t_i (eq. 19; s_i - t_i for
        the linear loss), their losses h_i (hinge smoothed on [0, mu]) and the weight of every pair (i, j)
        in the gradient of sum_i h_i / N, dh_i/dz_i (w_ij - v_ij) / N, as a len(rows) x N matrix."""
        x = self.x if rows is None else self.x[rows]
        similar = self.sets.similar if rows is None else self.sets.similar[rows]
        dissimilar = self.sets.dissimilar if rows is None else self.sets.dissimilar[rows]
        d = distances_to(x, self.x, m)
        s, w = log_exp_mean(d, similar, self.gamma1)
        t, v = log_exp_mean(d, dissimilar, self.gamma2)
        if self.loss == "linear":
            z = s - t
            h, dh = z, np.ones_like(z)
        else:
            z = self.margin + s - t
            h, dh = huber_hinge(z, mu)
        return z, h, dh[:, None] * (w - v) / len(self.x)

    def value(self, m: np.ndarray, mu: float = 0.0) -> float:
        """f(M), the hinge smoothed on [0, mu] (mu = 0: the exact objective)."""
        return float(self.pair_terms(m, mu)[1].mean()) + self.lam * float(np.sum(m * self.reg_matrix))

    def value_and_gradient(self, m: np.ndarray, mu: float = 0.0) -> tuple[float, np.ndarray]:
        """f(M) (hinge smoothed on [0, mu]) and its gradient in M."""
        _, h, coef = self.pair_terms(m, mu)
        return (
            float(h.mean()) + self.lam * float(np.sum(m * self.reg_matrix)),
            pair_gradient(self.x, coef) + self.lam * self.reg_matrix,
        )

    def objective(self, m: np.ndarray) -> float:
        """f(M) with the exact hinge."""
        return self.value(m)


class ScreenedObjective:
    """f(M) of a hinge LANML problem and its gradient, evaluating only the samples whose hinge may be
    active (ANML section 7.1.3: a hinge that is not triggered removes its N distance computations).

    Safe rule: every d_M(x_i, x_j) differs from its value at a reference M_ref by at most
    ||M - M_ref||_2 ||x_i - x_j||^2, and a log-exp-mean (eqs. 15-16) moves by at most as much as the
    most moved of its members, so z_i(M) <= z_i(M_ref) + ||M - M_ref||_2 (r_i^S + r_i^D), with r_i^S
    (r_i^D) the largest squared Euclidean distance from x_i to a member of S_i (D_i). A sample whose
    bound is <= 0 adds exactly 0 to the value and the gradient (the hinge and its smoothing vanish
    there), so skipping it is exact. Every sample is evaluated, and the reference moved to M, when the
    screened-in samples outnumber twice the active ones at the reference plus N / 10.
    ``pairs`` counts the distances computed (a machine-independent measure of the work)."""

    def __init__(self, problem: LANMLProblem):
        if problem.loss != "hinge":
            raise LANMLError("screening needs the hinge loss (the linear loss is never inactive)")
        self.problem = problem
        sq = mahalanobis_sq(problem.x, np.eye(problem.x.shape[1]))
        self.reach = np.where(problem.sets.similar, sq, 0).max(axis=1) + np.where(problem.sets.dissimilar, sq, 0).max(
            axis=1
        )
        self.reference, self.margins, self.pairs = None, None, 0

    def __call__(self, m: np.ndarray, mu: float) -> tuple[float, np.ndarray]:
        p, n = self.problem, len(self.problem.x)
        rows = None
        if self.reference is not None:
            bound = self.margins + np.linalg.norm(m - self.reference, 2) * self.reach
            rows = np.flatnonzero(bound > 0)
            if len(rows) > 2 * np.count_nonzero(self.margins > 0) + n / 10:
                rows = None
        if rows is None:  # every sample: the new reference
            z, h, coef = p.pair_terms(m, mu)
            self.reference, self.margins = m.copy(), z
            gradient = pair_gradient(p.x, coef)
            self.pairs += n * n
        else:
            _, h, coef = p.pair_terms(m, mu, rows)
            gradient = rows_pair_gradient(p.x, rows, coef)
            self.pairs += len(rows) * n
        regulariser = p.lam * float(np.sum(m * p.reg_matrix))
        return float(h.sum()) / n + regulariser, gradient + p.lam * p.reg_matrix


def project_psd(m: np.ndarray) -> np.ndarray:
    """The nearest PSD matrix in Frobenius norm: eigenvalues clipped at 0."""
    vals, vecs = np.linalg.eigh((m + m.T) / 2)
    return (vecs * np.maximum(vals, 0.0)) @ vecs.T


def solve_cvxpy(problem: LANMLProblem, solvers: tuple[str, ...] = ("CLARABEL", "SCS")) -> np.ndarray:
    """The exact LANML- solution with cvxpy; refuses a problem that is not convex (gamma1 >= 0 or gamma2 <= 0).

    Solvers are tried in order: Clarabel (interior point), then SCS (first order, about 1e-4 relative
    accuracy). Clarabel runs with max_step_fraction 0.9 (its default 0.99): the exponential cones of
    far dissimilar pairs hold values like exp(-gamma2 d) ~ e^-100, and steps to 99% of the way to the
    cone boundary made its Newton systems so ill-conditioned on all of Iris or Wine that it stopped with
    InsufficientProgress at a duality gap near 1e-3; at 0.9 it solves them to optimality in seconds."""
    import cvxpy as cp

    if problem.gamma1 >= 0 or problem.gamma2 <= 0:
        raise LANMLError(
            f"eq. 19 is convex (Lemma 3) only for gamma1 < 0 < gamma2, got gamma1={problem.gamma1}, "
            f"gamma2={problem.gamma2}; use solve_factored for LANML+"
        )
    x, sets = problem.x, problem.sets
    n, dim = x.shape
    m = cp.Variable((dim, dim), PSD=True)

    def radii(rows: np.ndarray, mask: np.ndarray, gamma: float):
        """eqs. 15-16 for samples `rows`, which all have the same number of members in `mask`."""
        size = int(mask[rows[0]].sum())
        partners = np.array([np.flatnonzero(mask[i]) for i in rows])  # (len(rows), size)
        delta = (x[rows][:, None, :] - x[partners]).reshape(-1, dim)
        dist = cp.reshape(cp.sum(cp.multiply(delta @ m, delta), axis=1), (len(rows), size), order="C")
        return -(cp.log_sum_exp(-gamma * dist, axis=1) - math.log(size)) / gamma

    losses = []
    # samples with equally large S_i and D_i (a class's samples) share one log-sum-exp atom
    sizes = np.stack([sets.similar.sum(axis=1), sets.dissimilar.sum(axis=1)], axis=1)
    for size in np.unique(sizes, axis=0):
        rows = np.flatnonzero((sizes == size).all(axis=1))
        s_i = radii(rows, sets.similar, problem.gamma1)
        t_i = radii(rows, sets.dissimilar, problem.gamma2)
        losses.append(cp.sum(cp.pos(problem.margin + s_i - t_i)))
    objective = cp.sum(cp.hstack(losses)) / n + problem.lam * cp.trace(m @ problem.reg_matrix)
    cvx = cp.Problem(cp.Minimize(objective))
    if not cvx.is_dcp():
        raise LANMLError("the LANML problem failed cvxpy's DCP check")
    for solver in solvers:
        try:
            cvx.solve(solver=solver, **({"max_step_fraction": 0.9} if solver == "CLARABEL" else {}))
        except cp.error.SolverError:
            continue
        if m.value is not None and cvx.status in ("optimal", "optimal_inaccurate"):
            return project_psd(m.value)
    raise LANMLError(f"cvxpy could not solve the LANML problem with {', '.join(solvers)} (status {cvx.status})")


def solve_projected_gradient(
    problem: LANMLProblem,
    m0: np.ndarray | None = None,
    mu0: float = 0.1,
    mu_min: float = 1e-6,
    max_iter: int = 3000,
    tol: float = 1e-9,
) -> np.ndarray:
    """FISTA with backtracking on the Huber-smoothed objective, projecting onto the PSD cone; mu is
    divided by 10 whenever the relative decrease stalls, down to mu_min (continuation)."""
    dim = problem.x.shape[1]
    m = np.eye(dim) if m0 is None else project_psd(m0)
    y, t, step, mu = m.copy(), 1.0, 1.0, mu0
    f_prev = problem.value(m, mu)
    for _ in range(max_iter):
        f_y, g_y = problem.value_and_gradient(y, mu)
        while True:  # backtracking on the quadratic upper bound
            m_new = project_psd(y - step * g_y)
            diff = m_new - y
            f_new = problem.value(m_new, mu)
            if f_new <= f_y + np.sum(g_y * diff) + np.sum(diff**2) / (2 * step):
                break
            step /= 2
        t_new = (1 + math.sqrt(1 + 4 * t * t)) / 2
        y = m_new + (t - 1) / t_new * (m_new - m)
        m, t = m_new, t_new
        if f_new > f_prev:  # restart the momentum when the objective goes up
            y, t = m.copy(), 1.0
        if abs(f_prev - f_new) <= tol * max(1.0, abs(f_new)):
            if mu <= mu_min:
                break
            mu, t, y = max(mu / 10, mu_min), 1.0, m.copy()
            f_new = problem.value(m, mu)
        f_prev = f_new
        step *= 2  # let the step grow again
    return m


def solve_quasi_newton(
    problem: LANMLProblem,
    m0: np.ndarray,
    mu0: float = 0.1,
    mu_min: float = 1e-4,
    tol: float = 1e-7,
    max_iter: int = 1000,
    screen: bool = True,
) -> tuple[np.ndarray, dict]:
    """Minimise eq. 19 over M = L^T L with L-BFGS on the factor L (M stays PSD without projections),
    on the hinge smoothed on [0, mu]: mu goes from mu0 down to mu_min by factors of 10, each round warm
    started from the last (continuation), a round ending when the relative decrease of f is below `tol`.
    With `screen` (hinge loss only) each evaluation skips the samples whose hinge a safe bound proves
    inactive (ScreenedObjective). Returns M and {"evaluations", "pairs"}: objective evaluations and
    distances computed (without screening: N^2 per evaluation)."""
    dim, n = problem.x.shape[1], len(problem.x)
    screened = ScreenedObjective(problem) if screen else None
    evaluate = screened if screened is not None else problem.value_and_gradient
    factor = np.linalg.cholesky(project_psd(m0) + 1e-12 * np.eye(dim)).T  # m0 = L^T L
    evaluations, mu = 0, mu0
    while True:

        def fun(flat, mu=mu):
            nonlocal evaluations
            evaluations += 1
            low = flat.reshape(dim, dim)
            value, grad_m = evaluate(low.T @ low, mu)
            return value, (2 * low @ grad_m).ravel()

        result = minimize(
            fun, factor.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-9}
        )
        factor = result.x.reshape(dim, dim)
        if mu <= mu_min:
            break
        mu = max(mu / 10, mu_min)
    pairs = screened.pairs if screened is not None else evaluations * n * n
    return factor.T @ factor, {"evaluations": evaluations, "pairs": pairs}


def pnca_value_and_gradient(
    x: np.ndarray, sets: Neighbourhoods, alpha: float, m: np.ndarray
) -> tuple[float, np.ndarray]:
    """PNCA (eq. 21), minimised: -1/N sum_i p_i, p_i = sum_{j in S_i} e^{-alpha d_ij} / sum_{k != i} e^{-alpha d_ik}
    (alpha = 1: NCA's probability of x_i being classified correctly)."""
    d = mahalanobis_sq(x, m)
    others = sets.similar | sets.dissimilar
    a = np.where(others, -alpha * d, -np.inf)
    p_ik = np.exp(a - logsumexp(a, axis=1, keepdims=True))
    p = (p_ik * sets.similar).sum(axis=1)
    n = len(x)
    coef = alpha * p_ik * (sets.similar - p[:, None]) / n  # d(-p_i/N)/d d_ik
    return -p.mean(), pair_gradient(x, coef)


def solve_factored(value_and_gradient, dim: int, n: int, max_iter: int = 500) -> np.ndarray:
    """Minimise f(M) over M = L^T L with L-BFGS on L, from M0 = I / sqrt(N) (section 7.1.2).
    `value_and_gradient(M)` returns f and its gradient G in M; the gradient in L is 2 L G."""

    def fun(flat):
        factor = flat.reshape(dim, dim)
        value, grad_m = value_and_gradient(factor.T @ factor)
        return value, (2 * factor @ grad_m).ravel()

    start = np.eye(dim) * n**-0.25  # L0^T L0 = I / sqrt(N)
    result = minimize(fun, start.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    factor = result.x.reshape(dim, dim)
    return factor.T @ factor
