"""LANML eq. 19 and PNCA eq. 21: values, gradients, the two convex solvers agree, NCA as a special case."""

import math
import time

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler

from pipeline.linear.lanml import (
    LANMLError,
    LANMLProblem,
    log_exp_mean,
    mahalanobis_sq,
    neighbourhoods,
    pnca_value_and_gradient,
    solve_cvxpy,
    solve_factored,
    solve_projected_gradient,
)

RNG = np.random.default_rng(0)
X_TINY = RNG.normal(size=(12, 3))
Y_TINY = np.repeat([0, 1, 2], 4)


def random_psd(dim, rng):
    a = rng.normal(size=(dim, dim))
    return a @ a.T / dim + 0.1 * np.eye(dim)


def test_mahalanobis_and_log_exp_mean_by_loops():
    m = random_psd(3, RNG)
    d = mahalanobis_sq(X_TINY, m)
    i, j = 2, 7
    assert d[i, j] == pytest.approx((X_TINY[i] - X_TINY[j]) @ m @ (X_TINY[i] - X_TINY[j]))
    sets = neighbourhoods(X_TINY, Y_TINY, None)
    value, weights = log_exp_mean(d, sets.similar, -2.0)
    members = np.flatnonzero(sets.similar[i])
    assert value[i] == pytest.approx(math.log(np.mean(np.exp(2.0 * d[i, members]))) / 2.0)
    assert weights[i].sum() == pytest.approx(1.0) and (weights[i][~sets.similar[i]] == 0).all()
    # gamma1 < 0: a soft maximum, between the mean and the maximum
    assert d[i, members].mean() <= value[i] <= d[i, members].max()


@pytest.mark.parametrize("gamma1,gamma2,mu", [(-2.0, 3.0, 0.05), (1.5, 3.0, 0.05), (-1.0, 0.5, 0.0)])
def test_gradient_matches_finite_differences(gamma1, gamma2, mu):
    problem = LANMLProblem(X_TINY, neighbourhoods(X_TINY, Y_TINY, 2), gamma1, gamma2, lam=0.3, margin=4.0)
    m, direction = random_psd(3, RNG), RNG.normal(size=(3, 3))
    direction = (direction + direction.T) / 2
    _, grad = problem.value_and_gradient(m, mu)
    eps = 1e-6
    numeric = (problem.value_and_gradient(m + eps * direction, mu)[0]
               - problem.value_and_gradient(m - eps * direction, mu)[0]) / (2 * eps)
    assert np.sum(grad * direction) == pytest.approx(numeric, rel=1e-4, abs=1e-8)


def test_similar_sets_are_the_nearest_same_class_samples():
    x = np.array([[0.0], [1.0], [5.0], [2.0], [10.0], [11.0]])
    y = np.array([0, 0, 0, 0, 1, 1])
    sets = neighbourhoods(x, y, 2)
    assert np.flatnonzero(sets.similar[0]).tolist() == [1, 3]
    assert np.flatnonzero(sets.similar[4]).tolist() == [5]  # class 1 has one other sample
    assert np.flatnonzero(sets.dissimilar[0]).tolist() == [4, 5]


@pytest.mark.parametrize("y,message", [
    (np.zeros(6, dtype=int), "at least two classes"),
    (np.array([0, 0, 0, 1, 1, 2]), "a class has a single sample"),
])
def test_bad_labels(y, message):
    with pytest.raises(LANMLError, match=message):
        neighbourhoods(np.zeros((6, 2)), y, 3)


def test_nca_is_the_linear_loss_special_case():
    """Proposition 4: gamma1 = gamma2 = 1, l(x) = x: each sample's term is -logit(p_i) + log(|S_i|/|D_i|),
    p_i = NCA's probability that x_i is classified correctly, a monotone map of NCA's objective."""
    sets = neighbourhoods(X_TINY, Y_TINY, None)
    problem = LANMLProblem(X_TINY, sets, 1.0, 1.0, lam=0.0, loss="linear")
    m = random_psd(3, RNG)
    d = mahalanobis_sq(X_TINY, m)
    terms = []
    for i in range(len(X_TINY)):
        e = {k: math.exp(-d[i, k]) for k in range(len(X_TINY)) if k != i}
        p_i = sum(v for k, v in e.items() if Y_TINY[k] == Y_TINY[i]) / sum(e.values())  # NCA eq. 1-2
        terms.append(-math.log(p_i / (1 - p_i)) + math.log(sets.similar[i].sum() / sets.dissimilar[i].sum()))
    assert problem.objective(m) == pytest.approx(np.mean(terms), rel=1e-9)


def test_pnca_at_alpha_one_is_nca_and_its_gradient():
    sets = neighbourhoods(X_TINY, Y_TINY, None)
    m = random_psd(3, RNG)
    d = mahalanobis_sq(X_TINY, m)
    p = [sum(math.exp(-d[i, k]) for k in range(12) if k != i and Y_TINY[k] == Y_TINY[i])
         / sum(math.exp(-d[i, k]) for k in range(12) if k != i) for i in range(12)]
    value, grad = pnca_value_and_gradient(X_TINY, sets, 1.0, m)
    assert value == pytest.approx(-np.mean(p))
    direction = np.eye(3)
    eps = 1e-6
    numeric = (pnca_value_and_gradient(X_TINY, sets, 1.0, m + eps * direction)[0]
               - pnca_value_and_gradient(X_TINY, sets, 1.0, m - eps * direction)[0]) / (2 * eps)
    assert np.trace(grad) == pytest.approx(numeric, rel=1e-5)


def uci(loader, per_class=None):
    """z-scored features; with per_class, the first per_class samples of each class."""
    x, y = loader(return_X_y=True)
    if per_class:
        keep = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in np.unique(y)])
        x, y = x[keep], y[keep]
    return StandardScaler().fit_transform(x), y


@pytest.mark.parametrize("loader", [load_iris, load_wine], ids=["iris", "wine"])
def test_cvxpy_and_projected_gradient_reach_the_same_objective(loader):
    """20 samples per class keep Clarabel fast and stable here; the full sets are in the benchmark."""
    x, y = uci(loader, per_class=20)
    problem = LANMLProblem(x, neighbourhoods(x, y, 10), gamma1=-1.0, gamma2=2.0, lam=0.5)
    t = time.perf_counter()
    exact = solve_cvxpy(problem, solvers=("CLARABEL",))
    t_cvx = time.perf_counter() - t
    t = time.perf_counter()
    fast = solve_projected_gradient(problem)
    t_pg = time.perf_counter() - t
    f_exact, f_fast = problem.objective(exact), problem.objective(fast)
    print(f"{loader.__name__}: cvxpy {f_exact:.6f} in {t_cvx:.1f} s, projected gradient {f_fast:.6f} in {t_pg:.1f} s")
    assert abs(f_fast - f_exact) / abs(f_exact) < 1e-3
    assert np.linalg.eigvalsh(fast).min() >= -1e-9


@pytest.mark.parametrize("gamma1,gamma2", [(0.5, 2.0), (-1.0, -2.0)])
def test_cvxpy_refuses_the_non_convex_problem(gamma1, gamma2):
    problem = LANMLProblem(X_TINY, neighbourhoods(X_TINY, Y_TINY, 2), gamma1, gamma2, lam=0.5)
    with pytest.raises(LANMLError, match="convex \\(Lemma 3\\) only for gamma1 < 0 < gamma2"):
        solve_cvxpy(problem)


def test_factored_solver_lowers_lanml_plus_and_pnca():
    x, y = uci(load_iris)
    sets = neighbourhoods(x, y, None)
    plus = LANMLProblem(x, sets, gamma1=1.0, gamma2=2.0, lam=0.5)
    m0 = np.eye(4) / math.sqrt(len(x))
    m = solve_factored(lambda mm: plus.value_and_gradient(mm, 1e-3), 4, len(x))
    assert plus.objective(m) < plus.objective(m0)
    m = solve_factored(lambda mm: pnca_value_and_gradient(x, sets, 2.0, mm), 4, len(x))
    assert pnca_value_and_gradient(x, sets, 2.0, m)[0] < pnca_value_and_gradient(x, sets, 2.0, m0)[0]


def test_gmml_solves_its_riccati_equation():
    """At t = 1/2, GMML's M minimises tr(MA) + tr(M^-1 B): M A M = B (Zadeh et al. 2016)."""
    from pipeline.linear.methods import fit_gmml

    x, y = X_TINY, Y_TINY
    m = fit_gmml(x, y, t=0.5, reg=1e-2)
    same = y[:, None] == y[None, :]
    diff = x[:, None, :] - x[None, :, :]
    a = diff[same].T @ diff[same] + 1e-2 * np.eye(3)
    b = diff[~same].T @ diff[~same] + 1e-2 * np.eye(3)
    assert m @ a @ m == pytest.approx(b, rel=1e-6)


@pytest.mark.parametrize("name", ["euclidean", "lanml_minus", "lanml_plus", "pnca", "nca", "lmnn", "itml",
                                  "scml", "gmml"])
def test_every_linear_method_gives_a_psd_metric(name):
    from pipeline.linear.methods import METHODS, transform

    x, y = uci(load_iris, per_class=15)
    hp = {"lanml_minus": {"lam": 0.5, "gamma1": -1.0, "gamma2": 2.0},
          "lanml_plus": {"lam": 0.5, "gamma1": 1.0, "gamma2": 2.0}, "pnca": {"alpha": 1.0}}.get(name, {})
    m = METHODS[name](x, y, **hp)
    assert m.shape == (4, 4) and np.allclose(m, m.T, atol=1e-8) and np.linalg.eigvalsh(m).min() > -1e-8
    z = transform(x, m)
    assert np.sum((z[0] - z[1]) ** 2) == pytest.approx((x[0] - x[1]) @ m @ (x[0] - x[1]), rel=1e-6, abs=1e-9)


def test_knn_accuracies_hand_built():
    from pipeline.linear.protocol import knn_accuracies

    train = np.array([[0.0], [1.0], [2.0], [10.0], [11.0]])
    train_y = np.array([0, 0, 1, 1, 1])
    test, test_y = np.array([[0.4], [9.0]]), np.array([0, 1])
    acc = knn_accuracies(train, train_y, test, test_y, max_k=6)
    # query 0.4: neighbours 0 (0), 1 (0), 2 (1), 10, 11 -> K=1,2,3 right; K=4: 2 vs 2 tie -> label 0 right; K=5: 2 vs 3 wrong
    # query 9: neighbours 10, 11, 2, 1, 0 -> right for K = 1..5 (K=4: 3 vs 1, K=5: 3 vs 2)
    assert acc.tolist() == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5]  # K = 6 > 5 training samples: as K = 5


def test_one_split_of_the_protocol_on_iris():
    from pipeline.config import LanmlConfig
    from pipeline.linear.protocol import compare_methods

    x, y = load_iris(return_X_y=True)
    cfg = LanmlConfig(methods=["lanml_minus"], repeats=1, test_fraction=0.3, max_k=10, cv_folds=3, pca_dims=150,
                      grids={"lanml_minus": {"lam": [0.5], "gamma1": [-1.0], "gamma2": [1.0, 2.0]}})
    out = compare_methods(x, y, cfg, seed=0)["lanml_minus"]["splits"][0]
    assert out["setting"]["gamma2"] in (1.0, 2.0) and 1 <= out["k"] <= 10
    assert out["accuracy"] > 0.85 and out["accuracy_best_k_on_test"] >= out["accuracy"]
