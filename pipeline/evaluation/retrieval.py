"""Retrieval metrics from the ranked neighbour lists.

Definitions (MLRC section 3.2; Revisiting supplement A.3; docs/evaluation.md):
with the query excluded, R = number of other items of the query's class and
rel_i = 1 when the i-th neighbour shares the query's class.

- R@K (Revisiting eq. 26): 1 if a same-class item is among the K nearest.
- P@1: rel_1 (equal to R@1).
- R-precision: (1/R) sum_{i<=R} rel_i.
- MAP@R (MLRC eq. 2): (1/R) sum_{i<=R} P@i * rel_i, with P@i = (1/i) sum_{j<=i} rel_j.
- mAP@C (Revisiting eq. 29 and the authors' code): average precision over the
  k_c nearest, k_c = number of items of class c (query included), normalised by
  k_c: (1/k_c) sum_{i<=k_c} P@i * rel_i. Because the window counts the query,
  which is not in its own ranking, a perfect embedding scores (k_c - 1)/k_c,
  not 1; kept as the authors computed it so numbers compare with Revisiting
  Tables 4-9.

Query/gallery data sets (In-shop): the queries are ranked against the gallery only, R = number of
gallery items of the query's class, and mAP@C's window is that same count (no query in the gallery).

Queries whose class has no other member (R = 0) have no defined R-precision or
MAP@R; as in pytorch-metric-learning's AccuracyCalculator they are left out of
every retrieval metric (``num_queries`` in the result says how many were used).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.evaluation.knn import nearest_neighbours


def neighbour_depth(labels: np.ndarray, recall_at: list[int], gallery_labels: np.ndarray | None = None) -> int:
    """How many neighbours the metrics need: max K, and the largest class size (for mAP@C)."""
    searched = labels if gallery_labels is None else gallery_labels
    _, counts = np.unique(searched, return_counts=True)
    available = len(searched) - (1 if gallery_labels is None else 0)
    return int(min(available, max(max(recall_at), counts.max())))


def _relevance(neighbours: np.ndarray, labels: np.ndarray, gallery_labels: np.ndarray | None):
    """(rel, R, class size, valid query mask): rel[q, i] = 1 when the i-th neighbour of valid query q shares
    its class; R = the other items (gallery items) of its class; queries with R = 0 are not valid."""
    labels = np.asarray(labels)
    if gallery_labels is None:
        gallery = labels
        _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
        class_size = counts[inverse]
        r = class_size - 1
    else:
        gallery = np.asarray(gallery_labels)
        classes, counts = np.unique(gallery, return_counts=True)
        at = np.clip(np.searchsorted(classes, labels), 0, len(classes) - 1)
        r = np.where(classes[at] == labels, counts[at], 0)
        class_size = r
    valid = r > 0
    if not valid.any():
        raise ValueError("no query has another item of its class: retrieval metrics are undefined")
    rel = (gallery[neighbours] == labels[:, None])[valid]
    r, class_size = r[valid], class_size[valid]
    if r.max() > rel.shape[1]:
        raise ValueError(f"{rel.shape[1]} neighbours cannot cover the largest class (R = {r.max()})")
    return rel, r, class_size, valid


def _average_precision(rel: np.ndarray, window: np.ndarray) -> np.ndarray:
    """(1/w) sum_{i<=w} P@i rel_i per query, w its window (MLRC eq. 2 with w = R)."""
    rank = np.arange(1, rel.shape[1] + 1)
    precision_at_i = np.cumsum(rel, axis=1) / rank
    inside = rank[None, :] <= window[:, None]
    return (precision_at_i * rel * inside).sum(axis=1) / window


def retrieval_metrics(
    neighbours: np.ndarray, labels: np.ndarray, recall_at: list[int], gallery_labels: np.ndarray | None = None
) -> dict[str, float]:
    """All retrieval metrics from a (N, k) neighbour index matrix sorted by distance: neighbours among
    the other items of `labels`, or, with `gallery_labels`, among the gallery (query/gallery protocol)."""
    rel, r, class_size, valid = _relevance(neighbours, labels, gallery_labels)
    k = rel.shape[1]
    inside_r = np.arange(1, k + 1)[None, :] <= r[:, None]
    out = {
        "precision_at_1": float(rel[:, 0].mean()),
        "r_precision": float(((rel & inside_r).sum(axis=1) / r).mean()),
        "map_at_r": float(_average_precision(rel, r).mean()),
        "num_queries": int(valid.sum()),
    }
    if class_size.max() <= k:
        out["map_at_c"] = float(_average_precision(rel, class_size).mean())
    for kk in recall_at:
        out[f"recall_at_{kk}"] = float(rel[:, : min(kk, k)].any(axis=1).mean())
    return out


def class_scores(neighbours: np.ndarray, labels: np.ndarray, gallery_labels: np.ndarray | None = None) -> pd.DataFrame:
    """Per test class (index): its valid queries and their mean MAP@R and P@1, so that a metric over a
    resample of classes is the query-weighted mean of these rows (the bootstrap over test classes)."""
    rel, r, _, valid = _relevance(neighbours, labels, gallery_labels)
    scores = pd.DataFrame(
        {
            "label": np.asarray(labels)[valid],
            "map_at_r": _average_precision(rel, r),
            "precision_at_1": rel[:, 0].astype(np.float64),
        }
    )
    grouped = scores.groupby("label", sort=True)
    return grouped.mean().assign(queries=grouped.size()).rename_axis("class")[["queries", "map_at_r", "precision_at_1"]]


def retrieval_scores(embeddings: np.ndarray, labels: np.ndarray, chunk: int = 4096) -> dict[str, float]:
    """MAP@R, R-precision and P@1 of `embeddings` among themselves (neighbours up to the largest class)."""
    _, counts = np.unique(labels, return_counts=True)
    k = int(min(len(labels) - 1, counts.max() - 1))
    neighbours, _ = nearest_neighbours(embeddings, max(k, 1), chunk)
    return retrieval_metrics(neighbours, labels, [1])


def map_at_r(embeddings: np.ndarray, labels: np.ndarray, chunk: int = 4096) -> float:
    """MAP@R alone (the validation score used for early stopping)."""
    return retrieval_scores(embeddings, labels, chunk)["map_at_r"]
