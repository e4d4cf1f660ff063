"""Clustering metrics: NMI and pair-counting F1 of seeded faiss k-means clusters.

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

from pipeline.numerics import faiss


def kmeans_labels(x: np.ndarray, k: int, seed: int, niter: int = 20, restarts: int = 1) -> np.ndarray:
    """Cluster index of every row from seeded faiss k-means."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    km = faiss().Kmeans(x.shape[1], k, niter=niter, nredo=restarts, seed=seed, verbose=False,
                      max_points_per_centroid=max(256, -(-len(x) // k)))
    km.train(x)
    _, idx = km.index.search(x, 1)
    return idx[:, 0].astype(np.int64)


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


def clustering_metrics(x: np.ndarray, labels: np.ndarray, seed: int, niter: int = 20,
                       restarts: int = 1) -> dict[str, float]:
    clusters = kmeans_labels(x, len(np.unique(labels)), seed, niter, restarts)
    return {"nmi": float(normalized_mutual_info_score(labels, clusters)), "f1": pair_f1(clusters, labels)}
