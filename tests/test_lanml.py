"""LANML eq. 19 and PNCA eq. 21: values, gradients, the two convex solvers agree, NCA as a special case."""

import math

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler

from pipeline.linear.lanml import (
    LANMLError,
    LANMLProblem,
    ScreenedObjective,
    log_exp_mean,
    mahalanobis_sq,
    neighbourhoods,
    pair_gradient,
    pnca_value_and_gradient,
    rows_pair_gradient,
    solve_cvxpy,
    solve_factored,
    solve_projected_gradient,
    solve_quasi_newton,
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
    numeric = (
        problem.value_and_gradient(m + eps * direction, mu)[0] - problem.value_and_gradient(m - eps * direction, mu)[0]
    ) / (2 * eps)
    assert np.sum(grad * direction) == pytest.approx(numeric, rel=1e-4, abs=1e-8)


def test_similar_sets_are_the_nearest_same_class_samples():
    x = np.array([[0.0], [1.0], [5.0], [2.0], [10.0], [11.0]])
    y = np.array([0, 0, 0, 0, 1, 1])
    sets = neighbourhoods(x, y, 2)
    assert np.flatnonzero(sets.similar[0]).tolist() == [1, 3]
    assert np.flatnonzero(sets.similar[4]).tolist() == [5]  # class 1 has one other sample
    assert np.flatnonzero(sets.dissimilar[0]).tolist() == [4, 5]


@pytest.mark.parametrize(
    "y,message",
    [
        (np.zeros(6, dtype=int), "at least two classes"),
        (np.array([0, 0, 0, 1, 1, 2]), "a class has a single sample"),
    ],
)
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
    p = [
        sum(math.exp(-d[i, k]) for k in range(12) if k != i and Y_TINY[k] == Y_TINY[i])
        / sum(math.exp(-d[i, k]) for k in range(12) if k != i)
        for i in range(12)
    ]
    value, grad = pnca_value_and_gradient(X_TINY, sets, 1.0, m)
    assert value == pytest.approx(-np.mean(p))
    direction = np.eye(3)
    eps = 1e-6
    numeric = (
        pnca_value_and_gradient(X_TINY, sets, 1.0, m + eps * direction)[0]
        - pnca_value_and_gradient(X_TINY, sets, 1.0, m - eps * direction)[0]
    ) / (2 * eps)
    assert np.trace(grad) == pytest.approx(numeric, rel=1e-5)


def uci(loader, per_class=None):
    """z-scored features; with per_class, the first per_class samples of each class."""
    x, y = loader(return_X_y=True)
    if per_class:
        keep = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in np.unique(y)])
        x, y = x[keep], y[keep]
    return StandardScaler().fit_transform(x), y


@pytest.mark.parametrize("loader", [load_iris, load_wine], ids=["iris", "wine"])
def test_cvxpy_and_both_solvers_reach_the_same_objective(loader):
    """20 samples per class keep Clarabel fast and stable here; the full sets: benchmarks/bench_lanml.py --cvxpy.
    The quasi-Newton solver at a strict tolerance within 1e-4 of cvxpy, the projected gradient within 1e-3."""
    x, y = uci(loader, per_class=20)
    problem = LANMLProblem(x, neighbourhoods(x, y, 10), gamma1=-1.0, gamma2=2.0, lam=0.5)
    exact = problem.objective(solve_cvxpy(problem, solvers=("CLARABEL",)))
    start = np.eye(x.shape[1]) / math.sqrt(len(x))
    quasi_newton, work = solve_quasi_newton(problem, start, tol=1e-12, mu_min=1e-7)
    projected = solve_projected_gradient(problem)
    assert abs(problem.objective(quasi_newton) - exact) / abs(exact) < 1e-4
    assert abs(problem.objective(projected) - exact) / abs(exact) < 1e-3
    assert np.linalg.eigvalsh(quasi_newton).min() >= -1e-9 and np.linalg.eigvalsh(projected).min() >= -1e-9
    assert work["evaluations"] > 0 and 0 < work["pairs"] <= work["evaluations"] * len(x) ** 2


def test_log_exp_mean_matches_scipy_logsumexp():
    d = RNG.uniform(0, 30, size=(7, 9))
    mask = RNG.uniform(size=(7, 9)) < 0.6
    mask[:, 0] = True
    for gamma in (-3.0, 0.5, 40.0):  # large gamma: exp(-gamma d) underflows without the max shift
        value, weights = log_exp_mean(d, mask, gamma)
        a = np.where(mask, -gamma * d, -np.inf)
        expected = -(logsumexp(a, axis=1) - np.log(mask.sum(axis=1))) / gamma
        assert value == pytest.approx(expected, rel=1e-12)
        assert weights == pytest.approx(np.exp(a - logsumexp(a, axis=1, keepdims=True)), rel=1e-12, abs=1e-300)


def test_rows_pair_gradient_is_pair_gradient_of_those_rows():
    rows = np.array([1, 4, 5, 10])
    coef = RNG.normal(size=(len(rows), 12))
    full = np.zeros((12, 12))
    full[rows] = coef
    assert rows_pair_gradient(X_TINY, rows, coef) == pytest.approx(pair_gradient(X_TINY, full), rel=1e-12)


@pytest.mark.parametrize("gamma1", [-1.0, 1.5])
def test_screening_is_exact_and_skips_inactive_hinges(gamma1):
    """The screened value and gradient equal the full ones at any M; near the reference M most samples are
    skipped (here the margin is small, so most hinges are inactive)."""
    x, y = uci(load_iris)
    problem = LANMLProblem(x, neighbourhoods(x, y, 10 if gamma1 < 0 else None), gamma1, 2.0, lam=0.3, margin=0.2)
    m = solve_quasi_newton(problem, np.eye(4))[0]
    screened = ScreenedObjective(problem)
    screened(m, 1e-3)  # the reference
    assert screened.pairs == len(x) ** 2
    for scale in (1e-4, 1e-2, 1.0):
        step = random_psd(4, RNG) * scale
        value, gradient = screened(m + step, 1e-3)
        full_value, full_gradient = problem.value_and_gradient(m + step, 1e-3)
        assert value == pytest.approx(full_value, rel=1e-10)
        assert gradient == pytest.approx(full_gradient, rel=1e-8, abs=1e-12)
    near = ScreenedObjective(problem)
    near(m, 1e-3)
    near(m + 1e-4 * random_psd(4, RNG), 1e-3)
    assert near.pairs < 1.5 * len(x) ** 2  # the second evaluation computed under half of the distances


def test_screening_refuses_the_linear_loss():
    problem = LANMLProblem(X_TINY, neighbourhoods(X_TINY, Y_TINY, None), 1.0, 1.0, lam=0.0, loss="linear")
    with pytest.raises(LANMLError, match="screening needs the hinge loss"):
        ScreenedObjective(problem)


def test_warm_start_reaches_the_cold_start_optimum():
    """LANML- is convex: started from another grid point's solution it reaches the same objective."""
    from pipeline.linear.methods import fit_lanml_minus

    x, y = uci(load_wine, per_class=30)
    neighbour = fit_lanml_minus(x, y, lam=0.9, gamma1=-2.0, gamma2=2.0)
    cold = fit_lanml_minus(x, y, lam=0.1, gamma1=-0.5, gamma2=2.0, tol=1e-10, smoothing_min=1e-6)
    warm = fit_lanml_minus(x, y, lam=0.1, gamma1=-0.5, gamma2=2.0, tol=1e-10, smoothing_min=1e-6, m0=neighbour)
    problem = LANMLProblem(x, neighbourhoods(x, y, 10), -0.5, 2.0, 0.1)
    assert problem.objective(warm) == pytest.approx(problem.objective(cold), rel=1e-4)


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


@pytest.mark.parametrize(
    "name", ["euclidean", "lanml_minus", "lanml_plus", "pnca", "nca", "lmnn", "itml", "scml", "gmml"]
)
def test_every_linear_method_gives_a_psd_metric(name):
    from pipeline.linear.methods import METHODS, transform

    x, y = uci(load_iris, per_class=15)
    hp = {
        "lanml_minus": {"lam": 0.5, "gamma1": -1.0, "gamma2": 2.0},
        "lanml_plus": {"lam": 0.5, "gamma1": 1.0, "gamma2": 2.0},
        "pnca": {"alpha": 1.0},
    }.get(name, {})
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
    from pipeline.config.lanml import LanmlConfig
    from pipeline.linear.protocol import compare_methods

    x, y = load_iris(return_X_y=True)
    cfg = LanmlConfig(
        methods=["lanml_minus"],
        repeats=1,
        test_fraction=0.3,
        max_k=10,
        cv_folds=3,
        pca_dims=150,
        grids={"lanml_minus": {"lam": [0.5], "gamma1": [-1.0], "gamma2": [1.0, 2.0]}},
    )
    out = compare_methods(x, y, cfg, seed=0)["lanml_minus"]["splits"][0]
    assert out["setting"]["gamma2"] in (1.0, 2.0) and 1 <= out["k"] <= 10
    assert out["accuracy"] > 0.85 and out["accuracy_best_k_on_test"] >= out["accuracy"]


def test_timing_table_on_a_small_set():
    from pipeline.config.lanml import LanmlConfig
    from pipeline.linear.timing import LMNN_TARGETS, time_fits
    from pipeline.reporting.lanml_table import timing_markdown

    x, y = uci(load_iris, per_class=20)
    result = time_fits(x, y, LanmlConfig(max_k=5), seed=0, repeats=1)
    methods = result["methods"]
    assert set(methods) == {"lanml_minus", "lanml_plus", *(f"lmnn_{t}" for t in LMNN_TARGETS)}
    for name in ("lanml_minus", "lanml_plus"):
        m = methods[name]
        assert m["strict_objective"] <= m["objective"] + 1e-9 and m["pairs"] <= m["pairs_unscreened"]
        assert 0 <= m["accuracy"] <= 100 and m["cpu_seconds"] > 0
    assert len(result["ratios"]) == 8 and all(r > 0 for r in result["ratios"].values())
    text = timing_markdown([{"dataset": "iris", **result}], 2)
    assert "| iris (42 x 4) | LANML- |" in text and "LMNN-7 / LANML+" in text


def test_lanml_table_names_methods_as_the_paper_does():
    """Rows read 'LANML- (`lanml_minus`)' (ANML Table 2's name, our id beside it); the paper's value sits in the
    row of its own method only, and the Euclidean baseline, which the paper does not list, shows none."""
    import pandas as pd

    from pipeline.reporting.lanml_table import lanml_markdown

    stats = {"mean": 95.0, "std": 1.0}
    result = {
        "dataset": "iris",
        "samples": 150,
        "features": 4,
        "classes": 3,
        "methods": {
            m: {"accuracy": stats, "accuracy_best_k_on_test": stats} for m in ("euclidean", "lanml_minus", "itml")
        },
    }
    reference = pd.DataFrame({"dataset": ["iris"], "method": ["LANML-"], "accuracy": [99.79], "std": [2.09]})
    rows = [
        line for line in lanml_markdown([result], reference, 2).splitlines() if line.startswith("| ") and "±" in line
    ]
    assert rows == [
        "| Euclidean (`euclidean`) | 95.00 ± 1.00 | 95.00 ± 1.00 | - | - |",
        "| LANML- (`lanml_minus`) | 95.00 ± 1.00 | 95.00 ± 1.00 | 99.79 ± 2.09 | -4.79 |",
        "| ITML (`itml`) | 95.00 ± 1.00 | 95.00 ± 1.00 | - | - |",
    ]


def test_the_grid_keys_params_accept_are_the_fit_functions_keywords():
    """pipeline/config declares what lanml.grids may search (so that loading params imports no solver); it must
    be every fit function's keyword arguments less the data, the seed and what the protocol sets."""
    import inspect

    from pipeline.config.lanml import LANML_GRID_KEYS, LANML_METHODS
    from pipeline.linear.methods import METHODS

    assert list(LANML_GRID_KEYS) == list(METHODS) == LANML_METHODS
    for method, fit in METHODS.items():
        keywords = set(inspect.signature(fit).parameters) - {"x", "y", "random_state", "k_similar", "m0"}
        assert tuple(sorted(keywords)) == LANML_GRID_KEYS[method], method


def test_table2_claims_pair_the_methods_by_split():
    """LANML- vs LMNN: 10, 9, 9 points over three splits -> mean 9.33, sd 0.577, half-width t(0.975, 2) 0.577 / sqrt 3
    = 1.434: reproduced. PNCA equals NCA on every split: no spread, no difference, inconclusive. A data set without
    NCA has no PNCA claim. Holm over the three tested claims: the first keeps its verdict (p = 0.0038 x 2 < 0.05)."""
    from scipy import stats

    from pipeline.reporting.lanml_table import table2_claims, table2_claims_markdown

    def method(accuracies):
        return {"splits": [{"accuracy": a} for a in accuracies]}

    results = [
        {
            "dataset": "one",
            "methods": {
                "lanml_minus": method([0.90, 0.92, 0.94]),
                "lmnn": method([0.80, 0.83, 0.85]),
                "pnca": method([0.7, 0.7, 0.8]),
                "nca": method([0.7, 0.7, 0.8]),
            },
        },
        {"dataset": "two", "methods": {"lanml_minus": method([0.5, 0.5, 0.5]), "lmnn": method([0.5, 0.6, 0.4])}},
    ]
    table = table2_claims(results)
    assert table[["dataset", "claim"]].values.tolist() == [
        ["one", "LANML- beats LMNN"],
        ["one", "PNCA beats NCA"],
        ["two", "LANML- beats LMNN"],
    ]
    first = table.iloc[0]
    half = stats.t.ppf(0.975, 2) * np.std([10, 9, 9], ddof=1) / np.sqrt(3)
    assert first["diff"] == pytest.approx(28 / 3) and first.t_high - first["diff"] == pytest.approx(half)
    assert first.p == pytest.approx(stats.ttest_1samp([10, 9, 9], 0).pvalue)
    assert table.verdict.tolist() == ["reproduced", "inconclusive", "inconclusive"]
    assert table.verdict_holm.tolist() == ["reproduced", "inconclusive", "inconclusive"]
    text = table2_claims_markdown(table, 2)
    assert "| one | LANML- beats LMNN | +9.33 [+7.90, +10.77] | **reproduced** | reproduced |" in text
