"""Metrics: hand-computed cases, and agreement with independent implementations."""

import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

from pipeline.config import EvalConfig
from pipeline.evaluation.clustering import clustering_metrics, initial_rows, kmeans_labels, pair_f1
from pipeline.evaluation.knn import exact_sq_distances, float32_error_bound, nearest_neighbours
from pipeline.evaluation.protocol import evaluate_embeddings, l2_normalize, mlrc_protocol
from pipeline.evaluation.retrieval import map_at_r, neighbour_depth, retrieval_metrics

# 1-D points; worked out by hand in the comments of test_hand_computed_retrieval
X = np.array([[0.0], [1.0], [3.0], [6.0], [10.0]])
Y = np.array([0, 0, 1, 0, 1])


def metrics_of(x, y, recall_at=(1, 2, 4)):
    nn, _ = nearest_neighbours(x, neighbour_depth(y, list(recall_at)))
    return retrieval_metrics(nn, y, list(recall_at))


def test_knn_excludes_query_and_orders_ties_by_index():
    nn, d = nearest_neighbours(X, 4)
    assert nn.tolist() == [[1, 2, 3, 4], [0, 2, 3, 4], [1, 0, 3, 4], [2, 4, 1, 0], [3, 2, 1, 0]]
    assert d[2].tolist() == [4.0, 9.0, 9.0, 49.0]  # squared distances, tie 0/3 ordered by index
    # exact duplicates: the query is still removed, not its twin
    dup = np.array([[0.0], [0.0], [0.0], [5.0]])
    nn, _ = nearest_neighbours(dup, 2)
    assert nn.tolist() == [[1, 2], [0, 2], [0, 1], [0, 1]]


def test_knn_chunking_does_not_change_results():
    x = np.random.default_rng(0).normal(size=(300, 8)).astype(np.float32)
    a, _ = nearest_neighbours(x, 10, chunk=7)
    b, _ = nearest_neighbours(x, 10, chunk=4096)
    assert np.array_equal(a, b)


def test_hand_computed_retrieval():
    # rel lists (query excluded, distance order, ties by index):
    # q0 [1,0,1,0] R=2; q1 [1,0,1,0] R=2; q2 [0,0,0,1] R=1 (class of size 2); q3 [0,0,1,1] R=2; q4 [0,1,0,0] R=1
    m = metrics_of(X, Y)
    assert m["precision_at_1"] == pytest.approx(2 / 5)
    assert m["recall_at_1"] == pytest.approx(2 / 5)
    assert m["recall_at_2"] == pytest.approx(3 / 5)
    assert m["recall_at_4"] == pytest.approx(1.0)
    assert m["r_precision"] == pytest.approx((1 / 2 + 1 / 2) / 5)
    assert m["map_at_r"] == pytest.approx((1 / 2 + 1 / 2) / 5)
    # mAP@C windows k_c = 3 (class 0) and 2 (class 1): q0,q1 (1 + 2/3)/3; q2 0; q3 (1/3)/3; q4 (1/2)/2
    assert m["map_at_c"] == pytest.approx((5 / 9 + 5 / 9 + 0 + 1 / 9 + 1 / 4) / 5)
    assert m["num_queries"] == 5


def test_perfect_embedding_scores_one():
    x = np.array([[0.0], [0.1], [0.2], [9.0], [9.1], [9.2]])
    m = metrics_of(x, np.array([0, 0, 0, 1, 1, 1]))
    for key in ("precision_at_1", "r_precision", "map_at_r", "recall_at_1"):
        assert m[key] == pytest.approx(1.0)
    # mAP@C (Revisiting's code): the window k_c = 3 counts the query, which is not in its own ranking
    assert m["map_at_c"] == pytest.approx(2 / 3)


def test_tie_at_rank_one_is_broken_by_index():
    # q0 is equally far from items 1 and 2; the lower index ranks first. Class 1 / class 1' are lone.
    hit = np.array([[0.0], [1.0], [-1.0]]), np.array([0, 0, 1])
    miss = np.array([[0.0], [-1.0], [1.0]]), np.array([0, 1, 0])
    assert nearest_neighbours(hit[0], 2)[0][0].tolist() == [1, 2]
    assert metrics_of(*hit, (1,))["precision_at_1"] == pytest.approx(1.0)  # q0 hit, q1 hit
    assert metrics_of(*miss, (1,))["precision_at_1"] == pytest.approx(0.5)  # q0 miss (tie), q2 hit


def test_lone_query_is_left_out():
    x = np.vstack([X, [[100.0]]])
    y = np.append(Y, 7)  # class 7 has one member: no R, no MAP@R
    m = metrics_of(x, y)
    assert m["num_queries"] == 5
    assert m["map_at_r"] == pytest.approx(metrics_of(X, Y)["map_at_r"])


def _random_set(seed, n=400, classes=40, dim=16, singletons=3):
    rng = np.random.default_rng(seed)
    y = np.concatenate([rng.integers(0, classes, n - singletons), classes + np.arange(singletons)])
    centres = rng.normal(size=(classes + singletons, dim))
    x = (centres[y] + rng.normal(scale=1.5, size=(n, dim))).astype(np.float32)
    return x, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_pytorch_metric_learning(seed):
    x, y = _random_set(seed)
    calc = AccuracyCalculator(
        include=("precision_at_1", "r_precision", "mean_average_precision_at_r"),
        k="max_bin_count",
        device=torch.device("cpu"),
    )
    ref = calc.get_accuracy(x, y)
    ours = metrics_of(x, y)
    assert ours["precision_at_1"] == pytest.approx(ref["precision_at_1"], abs=1e-6)
    assert ours["r_precision"] == pytest.approx(ref["r_precision"], abs=1e-6)
    assert ours["map_at_r"] == pytest.approx(ref["mean_average_precision_at_r"], abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kmeans_is_lloyds_algorithm_as_scikit_learn_runs_it(seed):
    """From the same initial rows, scikit-learn's Lloyd iterations end in the same clusters."""
    from sklearn.cluster import KMeans

    x, y = _random_set(seed, singletons=0)
    k = len(np.unique(y))
    ours = kmeans_labels(x, k, seed=seed, niter=50)
    init = x[initial_rows(len(x), k, seed)].astype(np.float64)
    ref = KMeans(k, init=init, n_init=1, max_iter=50, tol=0.0, algorithm="lloyd").fit(x.astype(np.float64))
    assert np.array_equal(ours, ref.labels_)


def test_kmeans_relocates_an_empty_cluster_to_the_farthest_row():
    from pipeline.evaluation.clustering import _centroids

    x = np.array([[0.0], [0.0], [1.0], [10.0], [11.0], [30.0]], dtype=np.float32)
    assign = np.array([0, 0, 0, 0, 0, 0])
    dist = np.array([1.0, 1.0, 0.0, 81.0, 100.0, 841.0])
    c = _centroids(x.astype(np.float64), assign, dist, 3)
    assert c[:, 0].tolist() == [pytest.approx(52 / 6), 30.0, 11.0]  # the farthest rows, farthest first


def test_nmi_on_separable_clusters_is_one_for_any_seed():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(5), 20)
    x = np.eye(5)[y] * 100 + rng.normal(scale=0.01, size=(100, 5))
    for seed in (0, 7):  # k-means can stop in a local minimum: restarts keep the best objective
        m = clustering_metrics(x, y, seed, restarts=10)
        assert m["nmi"] == pytest.approx(1.0) and m["f1"] == pytest.approx(1.0)


def test_pair_f1_hand_computed():
    # same-cluster pairs {01, 23}; same-class pairs {01, 02, 12}; both {01}: P = 1/2, R = 1/3
    assert pair_f1(np.array([0, 0, 1, 1]), np.array([0, 0, 0, 1])) == pytest.approx(0.4)
    assert pair_f1(np.array([0, 1, 2]), np.array([0, 0, 1])) == 0.0


def _brute_force_f1(clusters, labels):
    tp = fp = fn = 0
    for i, j in itertools.combinations(range(len(labels)), 2):
        same_cluster, same_class = clusters[i] == clusters[j], labels[i] == labels[j]
        tp += same_cluster and same_class
        fp += same_cluster and not same_class
        fn += same_class and not same_cluster
    if tp == 0:
        return 0.0
    p, r = tp / (tp + fp), tp / (tp + fn)
    return 2 * p * r / (p + r)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=2, max_size=30))
def test_pair_f1_equals_brute_force(pairs):
    clusters, labels = map(np.array, zip(*pairs))
    assert pair_f1(clusters, labels) == pytest.approx(_brute_force_f1(clusters, labels))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_metrics_in_unit_interval_and_invariant_to_scale(seed):
    x, y = _random_set(seed, n=60, classes=6, dim=4, singletons=1)
    a = metrics_of(x, y)
    b = metrics_of(x * 3.0 + 1.0, y)
    for key, value in a.items():
        if key != "num_queries":
            assert 0.0 <= value <= 1.0
            assert value == pytest.approx(b[key], abs=1e-9)
    assert a["r_precision"] >= a["map_at_r"] - 1e-12  # P@i <= 1 at every relevant rank


def test_map_at_r_helper_matches_full_metrics():
    x, y = _random_set(3, singletons=0)
    assert map_at_r(x, y) == pytest.approx(metrics_of(x, y)["map_at_r"])


def test_protocol_concatenates_normalised_folds_per_seed():
    x, y = _random_set(4, singletons=0)
    x2 = _random_set(5, singletons=0)[0]
    cfg = EvalConfig(kmeans_niter=5)
    # seed 0: same directions, so the normalised concatenation equals one fold's normalised embedding
    models = {(0, 0): x, (1, 0): x * 10.0, (0, 1): x2, (1, 1): x}
    out, per_class = mlrc_protocol(models, y, cfg, seed=0)
    single = evaluate_embeddings(l2_normalize(x), y, cfg, seed=0)
    con = out["concatenated"]
    assert con["seeds"]["seed_0"]["map_at_r"] == pytest.approx(single["map_at_r"])
    assert con["mean"]["map_at_r"] == pytest.approx(
        (con["seeds"]["seed_0"]["map_at_r"] + con["seeds"]["seed_1"]["map_at_r"]) / 2
    )
    sep = out["separated"]
    assert set(sep["models"]) == {"fold_0_seed_0", "fold_1_seed_0", "fold_0_seed_1", "fold_1_seed_1"}
    values = [m["map_at_r"] for m in sep["models"].values()]
    assert sep["mean"]["map_at_r"] == pytest.approx(np.mean(values))
    assert sep["std"]["map_at_r"] == pytest.approx(np.std(values, ddof=1))
    # 95% t interval with 3 degrees of freedom: t = 3.182446...
    assert sep["ci95"]["map_at_r"] == pytest.approx(3.1824463 * np.std(values, ddof=1) / 2, rel=1e-6)
    # per-class scores: one row per class; their query-weighted mean is each model's metric
    assert (
        list(per_class.index) == sorted(set(y))
        and per_class.queries.sum() == sep["models"]["fold_0_seed_0"]["num_queries"]
    )
    for key, m in sep["models"].items():
        for metric in ("map_at_r", "precision_at_1"):
            weighted = (per_class[f"{key}:{metric}"] * per_class.queries).sum() / per_class.queries.sum()
            assert weighted == pytest.approx(m[metric], abs=1e-12)


def test_class_scores_by_hand():
    from pipeline.evaluation.retrieval import class_scores

    # items on a line: a0 at 0, a1 at 1 (class 0), b0 at 2, b1 at 10 (class 1); class 2 a singleton (no query)
    x = np.array([[0.0], [1.0], [2.0], [10.0], [30.0]], dtype=np.float32)
    y = np.array([0, 0, 1, 1, 2])
    nn, _ = nearest_neighbours(x, 3)
    scores = class_scores(nn, y)
    # a0: a1 first (hit); a1: a0 (d 1) ties b0 (d 1), the lower index first: hit; b0: a1 first: miss, R = 1;
    # b1: b0 first (d 8): hit
    assert scores.index.tolist() == [0, 1] and scores.queries.tolist() == [2, 2]
    assert scores.precision_at_1.tolist() == [1.0, 0.5] and scores.map_at_r.tolist() == [1.0, 0.5]


def test_mean_interval_by_hand_and_against_scipy():
    from scipy import stats

    from pipeline.evaluation.intervals import mean_interval

    # values 1, 2, 3, 6: mean 3, s = sqrt(14/3), t(0.975, 3) = 3.182446
    mean, half = mean_interval([1, 2, 3, 6])
    assert mean == 3.0 and half == pytest.approx(3.182446 * np.sqrt(14 / 3) / 2, rel=1e-6)
    a, b = np.array([0.50, 0.52, 0.49, 0.55, 0.51]), np.array([0.53, 0.52, 0.52, 0.58, 0.55])
    mean, half = mean_interval(b - a)
    low, high = stats.ttest_rel(b, a).confidence_interval(0.95)
    assert (mean - half, mean + half) == pytest.approx((low, high), rel=1e-9)
    assert np.isnan(mean_interval([0.4])[1])
    with pytest.raises(ValueError):
        mean_interval([])


def test_evaluate_run_reads_the_models_and_writes_one_spectrum_per_model(tmp_path, tiny_params):
    from pipeline.data.manifest import DataError
    from pipeline.evaluation.runs import evaluate_run
    from pipeline.infra.io import write_json

    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 5)
    models = [(0, 0), (1, 0), (0, 3), (1, 3)]
    for i, (fold, seed) in enumerate(models):
        (tmp_path / f"fold-{fold}-seed-{seed}").mkdir()
        np.savez(
            tmp_path / f"fold-{fold}-seed-{seed}" / "test_embeddings.npz",
            embeddings=rng.normal(size=(20, 3)),
            labels=labels,
        )
        write_json(tmp_path / f"fold-{fold}-seed-{seed}" / "summary.json", {"best_val_map_at_r": 0.1 * (i + 1)})
    result, spectra, per_class = evaluate_run((str(tmp_path), "x", models, tiny_params.eval, 0))
    assert result["validation"]["map_at_r"] == pytest.approx(0.25)  # mean of the models' kept validation MAP@R
    assert per_class.shape == (4, 1 + 2 * len(models)) and (per_class.queries == 5).all()
    assert result["num_test_images"] == 20 and result["num_test_classes"] == 4
    assert result["folds"] == [0, 1] and result["seeds"] == [0, 3]
    assert set(result["separated"]["models"]) == {"fold_0_seed_0", "fold_1_seed_0", "fold_0_seed_3", "fold_1_seed_3"}
    assert set(result["concatenated"]["seeds"]) == {"seed_0", "seed_3"}
    assert spectra.groupby(["fold", "seed"]).singular_value.sum().round(12).tolist() == [1.0] * 4
    assert spectra["index"].tolist() == [1, 2, 3] * 4
    np.savez(
        tmp_path / "fold-1-seed-3" / "test_embeddings.npz", embeddings=rng.normal(size=(20, 3)), labels=labels[::-1]
    )
    with pytest.raises(DataError, match="test labels differ from fold-0-seed-0's"):
        evaluate_run((str(tmp_path), "x", models, tiny_params.eval, 0))


def test_a_test_set_smaller_than_the_embedding_has_as_many_singular_values_as_images(tmp_path, tiny_params):
    """Your own folder can have fewer test images than dimensions: the spectrum has min(images, D) values."""
    from pipeline.evaluation.runs import evaluate_run
    from pipeline.infra.io import write_json

    (tmp_path / "fold-0-seed-0").mkdir()
    x = np.random.default_rng(0).normal(size=(6, 8))
    np.savez(tmp_path / "fold-0-seed-0" / "test_embeddings.npz", embeddings=x, labels=np.repeat([0, 1], 3))
    write_json(tmp_path / "fold-0-seed-0" / "summary.json", {"best_val_map_at_r": 0.5})
    _, spectra, _ = evaluate_run((str(tmp_path), "x", [(0, 0)], tiny_params.eval, 0))
    assert spectra["index"].tolist() == [1, 2, 3, 4, 5, 6]
    np.testing.assert_allclose(
        spectra.singular_value, np.linalg.svd(x, compute_uv=False) / np.linalg.svd(x, compute_uv=False).sum()
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_query_gallery_agrees_with_pytorch_metric_learning(seed):
    """In-shop protocol: queries ranked against the gallery only (PML: reference set, ref_includes_query=False)."""
    x, y = _random_set(seed, singletons=0)
    query = np.random.default_rng(seed).random(len(y)) < 0.4
    calc = AccuracyCalculator(
        include=("precision_at_1", "r_precision", "mean_average_precision_at_r"),
        k="max_bin_count",
        device=torch.device("cpu"),
    )
    ref = calc.get_accuracy(x[query], y[query], x[~query], y[~query], ref_includes_query=False)
    ours = evaluate_embeddings(x, y, EvalConfig(kmeans_niter=5), seed=0, query=query)
    assert ours["num_queries"] == np.isin(y[query], y[~query]).sum()  # a query without gallery match is left out
    assert ours["precision_at_1"] == pytest.approx(ref["precision_at_1"], abs=1e-6)
    assert ours["r_precision"] == pytest.approx(ref["r_precision"], abs=1e-6)
    assert ours["map_at_r"] == pytest.approx(ref["mean_average_precision_at_r"], abs=1e-6)


def test_query_gallery_by_hand():
    # gallery on a line: g0 (class 0) at 0, g1 (class 1) at 1, g2 (class 0) at 3; query of class 0 at 0.9
    gallery = np.array([[0.0], [1.0], [3.0]], dtype=np.float32)
    nn, _ = nearest_neighbours(gallery, 3, queries=np.array([[0.9]], dtype=np.float32))
    assert nn.tolist() == [[1, 0, 2]]
    m = retrieval_metrics(nn, np.array([0]), [1, 2], gallery_labels=np.array([0, 1, 0]))
    # R = 2 gallery items of class 0; ranks: miss, hit, hit -> P@1 0, R-precision 1/2, MAP@R (1/2)(0 + 1/2) = 1/4
    assert (m["precision_at_1"], m["r_precision"], m["map_at_r"], m["recall_at_2"]) == (0.0, 0.5, 0.25, 1.0)


# ---- exact kNN: the same lists as a float64 brute force on adversarial inputs


def brute_force(x: np.ndarray, k: int, queries: np.ndarray | None = None):
    """Every distance in float64 (the same formula), ranked by (distance, index), self left out."""
    q = x if queries is None else queries
    everything = np.broadcast_to(np.arange(len(x)), (len(q), len(x)))
    d = exact_sq_distances(q.astype(np.float64), x.astype(np.float64), np.ascontiguousarray(everything))
    if queries is None:
        d[np.arange(len(x)), np.arange(len(x))] = np.inf
    order = np.lexsort((everything, d), axis=1)[:, :k]
    return order, np.take_along_axis(d, order, axis=1)


def adversarial(rng, n: int, dim: int, kind: str) -> np.ndarray:
    """Points built to make a float32 ranking disagree with the exact one (or to tie exactly)."""
    if kind == "duplicates":  # exact copies: ties at distance 0, the query's twins
        return np.repeat(rng.normal(size=(max(1, n // 4), dim)), 4, axis=0)[:n].astype(np.float32)
    if kind == "lattice":  # many exact ties at equal distances
        return rng.integers(-2, 3, size=(n, dim)).astype(np.float32)
    if kind == "near_ties":  # unit vectors 1-2 float32 ulps apart: ties at float32 resolution
        base = rng.normal(size=(max(1, n // 8), dim))
        base /= np.linalg.norm(base, axis=1, keepdims=True)
        x = np.repeat(base, 8, axis=0)[:n].astype(np.float32)
        step = rng.integers(-1, 2, size=x.shape)  # one ulp down, none, one ulp up, per coordinate
        moved = np.nextafter(x, np.where(step > 0, np.inf, -np.inf).astype(np.float32))
        return np.where(step == 0, x, moved).astype(np.float32)
    return (rng.normal(size=(n, dim)) * 10.0 ** rng.uniform(-3, 3)).astype(np.float32)  # any scale


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(3, 120),
    dim=st.sampled_from([1, 2, 7, 64, 128]),
    kind=st.sampled_from(["duplicates", "lattice", "near_ties", "scaled"]),
    data=st.data(),
)
def test_exact_knn_equals_a_float64_brute_force(seed, n, dim, kind, data):
    x = adversarial(np.random.default_rng(seed), n, dim, kind)
    k = data.draw(st.integers(1, len(x) - 1))
    chunk = data.draw(st.sampled_from([1, 5, 4096]))
    got_i, got_d = nearest_neighbours(x, k, chunk=chunk)
    want_i, want_d = brute_force(x, k)
    assert np.array_equal(got_i, want_i) and np.array_equal(got_d, want_d)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 80),
    dim=st.sampled_from([1, 3, 128]),
    kind=st.sampled_from(["duplicates", "lattice", "near_ties", "scaled"]),
    data=st.data(),
)
def test_exact_gallery_knn_equals_a_float64_brute_force(seed, n, dim, kind, data):
    rng = np.random.default_rng(seed)
    x = adversarial(rng, n, dim, kind)
    queries = np.concatenate([x[: max(1, n // 3)], adversarial(rng, 5, dim, kind)])  # some queries in the gallery
    k = data.draw(st.integers(1, len(x)))
    got_i, got_d = nearest_neighbours(x, k, queries=queries)
    want_i, want_d = brute_force(x, k, queries)
    assert np.array_equal(got_i, want_i) and np.array_equal(got_d, want_d)


def test_the_float32_bound_holds_for_faiss_distances():
    """faiss's float32 distances lie within the bound of the float64 ones (the premise of the candidate check)."""
    from pipeline.numerics import faiss

    rng = np.random.default_rng(3)
    for scale in (1e-3, 1.0, 1e3):
        x = (rng.normal(size=(500, 128)) * scale).astype(np.float32)
        index = faiss().IndexFlatL2(128)
        index.add(x)
        d32, i = index.search(x[:100], 500)
        d64 = exact_sq_distances(x[:100].astype(np.float64), x.astype(np.float64), i)
        norms = np.linalg.norm(x.astype(np.float64), axis=1)
        bound = float32_error_bound(norms[:100], norms.max(), 128)
        assert (np.abs(d32 - d64) <= bound[:, None] / 2).all()  # the half used as the proven bound
        assert (np.abs(d32 - d64) > 0).any()  # float32 is not exact here, so the check can fail


def test_a_float32_ranking_would_differ_on_near_ties():
    """The inputs above do reach the case the exact pass is for: faiss's own float32 order (ties by index)
    is not the exact one on near ties, so the brute-force comparisons can fail."""
    from pipeline.numerics import faiss

    x = adversarial(np.random.default_rng(1), 4000, 128, "near_ties")
    index = faiss().IndexFlatL2(128)
    index.add(x)
    d32, i32 = index.search(x, 9)
    order = np.lexsort((i32, d32), axis=1)
    float32_lists = np.take_along_axis(i32, order, axis=1)
    exact, _ = brute_force(x, 9)
    exact_with_self = np.concatenate([np.arange(len(x))[:, None], exact], axis=1)  # self at distance 0 first
    assert not np.array_equal(np.sort(float32_lists, axis=1), np.sort(exact_with_self, axis=1)) or not np.array_equal(
        float32_lists, exact_with_self
    )


def test_threads_do_not_change_the_lists():
    x = adversarial(np.random.default_rng(5), 2000, 32, "near_ties")
    one, _ = nearest_neighbours(x, 12, threads=1)
    two, _ = nearest_neighbours(x, 12, threads=2)
    assert np.array_equal(one, two)


def test_bad_k_names_the_sizes():
    x = np.zeros((4, 2), dtype=np.float32)
    with pytest.raises(ValueError, match=r"k=4 must be in 1..3 for 4 items"):
        nearest_neighbours(x, 4)
    with pytest.raises(ValueError, match=r"k=5 must be in 1..4 for a gallery of 4 items"):
        nearest_neighbours(x, 5, queries=x[:1])


def test_the_backbone_reference_is_its_features_on_the_unit_sphere(tmp_path):
    """evaluate_backbone (the results table's first row): test metrics of the L2-normalised features, validation
    MAP@R the mean over the folds' validation classes. Hand-made: two test classes that only the normalisation
    separates ([1, 0] is nearer [0, 1] than [10, 0.1] in raw L2), a validation fold retrieved perfectly (MAP@R 1)
    and one retrieved wrongly (0): mean 0.5."""
    from pipeline.evaluation.backbone import evaluate_backbone
    from pipeline.models.features import FeatureCache

    rows = [  # (feature, label, split, fold)
        ([1, 0], 0, "test", -1),
        ([10, 0.1], 0, "test", -1),
        ([0, 1], 1, "test", -1),
        ([0.1, 10], 1, "test", -1),
        ([1, 0], 2, "train", 0),
        ([2, 0], 2, "train", 0),
        ([0, 1], 3, "train", 0),
        ([0, 2], 3, "train", 0),
        ([1, 0], 4, "train", 1),
        ([0, 1], 4, "train", 1),
        ([1, 0.01], 5, "train", 1),
        ([0.01, 1], 5, "train", 1),
    ]
    features = np.array([r[0] for r in rows], dtype=np.float32)
    labels, split, fold = (np.array([r[i] for r in rows]) for i in (1, 2, 3))
    pd.DataFrame(
        {"path": [f"{i}.png" for i in range(len(rows))], "label": labels, "split": split, "fold": fold}
    ).to_csv(tmp_path / "manifest.csv", index=False)
    FeatureCache(features, labels, split, fold).save(tmp_path / "features.npz")
    out = evaluate_backbone((tmp_path, tmp_path / "features.npz", [0, 1], EvalConfig(kmeans_niter=5), 0))
    assert out["test"]["precision_at_1"] == 1.0 and out["test"]["map_at_r"] == 1.0
    assert out["validation"]["map_at_r"] == pytest.approx(0.5)
    assert out["dim"] == 2 and out["folds"] == [0, 1]
    raw = evaluate_embeddings(features[:4], labels[:4], EvalConfig(kmeans_niter=5), 0)
    assert raw["precision_at_1"] == 0.5  # without the normalisation: [1, 0] and [0, 1] are each other's nearest
