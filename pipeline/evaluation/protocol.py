"""Evaluation of one embedding, and the MLRC Separated / Concatenated protocol.

MLRC (CCP section 5.1): Separated = each fold's model evaluated alone, mean
and std over the folds (sample std, ddof = 1); Concatenated = the folds'
L2-normalised embeddings concatenated into one (e.g. 4 x 128 = 512-D).
"""

from __future__ import annotations

import numpy as np

from pipeline.config import EvalConfig
from pipeline.evaluation.clustering import clustering_metrics
from pipeline.evaluation.knn import nearest_neighbours
from pipeline.evaluation.retrieval import neighbour_depth, retrieval_metrics
from pipeline.evaluation.spectrum import spectral_decay


def evaluate_embeddings(x: np.ndarray, labels: np.ndarray, cfg: EvalConfig, seed: int,
                        query: np.ndarray | None = None) -> dict[str, float]:
    """Every metric of one embedding of the test set. With a `query` mask (In-shop), the queries are
    ranked against the other rows, the gallery; the clustering metrics use every row."""
    if query is not None and query.any():
        g = ~query
        depth = neighbour_depth(labels[query], cfg.recall_at, labels[g])
        neighbours, _ = nearest_neighbours(x[g], depth, cfg.query_chunk, progress=True, queries=x[query])
        out = retrieval_metrics(neighbours, labels[query], cfg.recall_at, gallery_labels=labels[g])
    else:
        neighbours, _ = nearest_neighbours(x, neighbour_depth(labels, cfg.recall_at), cfg.query_chunk, progress=True)
        out = retrieval_metrics(neighbours, labels, cfg.recall_at)
    out.update(clustering_metrics(x, labels, seed, cfg.kmeans_niter, cfg.kmeans_restarts))
    out["spectral_decay"] = spectral_decay(x)
    return out


def l2_normalize(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


def mlrc_protocol(fold_embeddings: list[np.ndarray], labels: np.ndarray, cfg: EvalConfig, seed: int,
                  query: np.ndarray | None = None) -> dict:
    """Separated (per fold, mean, std) and Concatenated metrics."""
    per_fold = [evaluate_embeddings(x, labels, cfg, seed, query) for x in fold_embeddings]
    keys = [k for k in per_fold[0] if k != "num_queries"]
    separated = {
        "mean": {k: float(np.mean([m[k] for m in per_fold])) for k in keys},
        "std": {k: float(np.std([m[k] for m in per_fold], ddof=1)) if len(per_fold) > 1 else 0.0 for k in keys},
        "folds": {f"fold_{k}": m for k, m in enumerate(per_fold)},
    }
    concatenated = evaluate_embeddings(np.hstack([l2_normalize(x) for x in fold_embeddings]), labels, cfg, seed, query)
    return {"separated": separated, "concatenated": concatenated}
