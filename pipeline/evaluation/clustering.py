"""Clustering metrics: NMI and pair-counting F1 of seeded, CPU-independent k-means clusters.

Revisiting supplement A.3. k-means with k = number of classes. NMI is
scikit-learn's ``normalized_mutual_info_score`` (arithmetic normalisation,
2 I / (H(clusters) + H(classes)); the supplement's eq. 27 prints the factor 2
in the denominator, a typo). F1 is the pair-counting F1 used by the DML
literature (Song et al. 2016, Sohn 2016): over all unordered pairs of items,
precision = pairs in the same cluster and class / pairs in the same cluster,
recall = pairs in the same cluster and class / pairs in the same class.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix

from pipeline.evaluation.knn import nearest_neighbours


def initial_rows(n: int, k: int, seed: int, restart: int = 0) -> np.ndarray:
    """The k distinct rows (in row order) that restart `restart` starts its centroids from."""
    return np.sort(np.random.default_rng([seed, restart]).choice(n, size=k, replace=False))


def kmeans_labels(
    x: np.ndarray, k: int, seed: int, niter: int = 20, restarts: int = 1, threads: int | None = None
) -> np.ndarray:
    """Cluster index of every row: Lloyd's k-means, the same clusters on every CPU.

    Each restart starts from k distinct rows drawn with `seed` (+ restart); an iteration assigns every row
    to its nearest centroid with the exact search of knn.py (float64 distances, ties to the lower centroid
    index) and moves each centroid to the float64 mean of its rows, summed in row order; a centroid left
    without rows takes the row farthest from its own centroid (ties: the lowest row index). `niter`
    iterations or until no assignment changes; the restart with the lowest float64 inertia wins (ties: the
    first). Centroids are searched as float32 (their float64 means rounded once). faiss's k-means (Revisiting's
    choice) sums in its threads' order and splits empty clusters at random, so its clusters depend on the CPU: the NMI
    / F1 here are of this deterministic formulation.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    if not 1 <= k <= len(x):
        raise ValueError(f"k={k} clusters must be in 1..{len(x)} for {len(x)} rows")
    x64 = x.astype(np.float64)
    best, best_inertia = None, np.inf
    for restart in range(restarts):
        centroids = x64[initial_rows(len(x), k, seed, restart)]
        assign = None
        for _ in range(niter):
            nearest, dist = nearest_neighbours(centroids.astype(np.float32), 1, queries=x, threads=threads)
            new, dist = nearest[:, 0], dist[:, 0]
            if assign is not None and np.array_equal(new, assign):
                break
            assign = new
            centroids = _centroids(x64, assign, dist, k)
        inertia = float(np.add.reduce(dist))  # fixed order
        if inertia < best_inertia:
            best, best_inertia = assign, inertia
    return best


def _centroids(x64: np.ndarray, assign: np.ndarray, dist: np.ndarray, k: int) -> np.ndarray:
    """Float64 means of each cluster's rows in row order; an empty cluster takes the farthest row."""
    order = np.argsort(assign, kind="stable")
    counts = np.bincount(assign, minlength=k)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    sums = np.zeros((k, x64.shape[1]))
    filled = counts > 0
    sums[filled] = np.add.reduceat(x64[order], starts[filled], axis=0)
    centroids = sums / np.maximum(counts, 1)[:, None]
    far = np.lexsort((np.arange(len(dist)), -dist))  # farthest first, ties by row index
    for c, row in zip(np.flatnonzero(~filled), far):
        centroids[c] = x64[row]
    return centroids


def _pairs(n: np.ndarray) -> float:
    n = np.asarray(n, dtype=np.float64)
    return float((n * (n - 1) / 2).sum())


def pair_f1(clusters: np.ndarray, labels: np.ndarray) -> float:
    """Pair-counting F1 between a clustering and the classes (0 when no pair is predicted)."""
    table = contingency_matrix(labels, clusters, sparse=True)
    together = _pairs(table.data)
    predicted = _pairs(np.asarray(table.sum(axis=0)).ravel())
    actual = _pairs(np.asarray(table.sum(axis=1)).ravel())
    if together == 0:
        return 0.0
    precision, recall = together / predicted, together / actual
    return 2 * precision * recall / (precision + recall)


def clustering_metrics(
    x: np.ndarray, labels: np.ndarray, seed: int, niter: int = 20, restarts: int = 1
) -> dict[str, float]:
    clusters = kmeans_labels(x, len(np.unique(labels)), seed, niter, restarts)
    return {"nmi": float(normalized_mutual_info_score(labels, clusters)), "f1": pair_f1(clusters, labels)}
