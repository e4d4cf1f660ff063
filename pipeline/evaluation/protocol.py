"""Evaluation of one embedding, and the MLRC Separated / Concatenated protocol over replicate seeds.

MLRC (CCP section 5.1): Separated = each fold's model evaluated alone; Concatenated = the folds'
L2-normalised embeddings concatenated into one (e.g. 4 x 128 = 512-D). With several replicate seeds
(experiment.seeds) a run has folds x seeds models: Separated summarises every model (mean, sample std
with ddof = 1, half-width of the 95% t interval), and Concatenated is measured once per seed (that
seed's folds concatenated) and summarised over the seeds the same way.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.config import EvalConfig
from pipeline.evaluation.clustering import clustering_metrics
from pipeline.evaluation.intervals import mean_interval
from pipeline.evaluation.knn import nearest_neighbours
from pipeline.evaluation.retrieval import class_scores, neighbour_depth, retrieval_metrics
from pipeline.evaluation.spectrum import spectral_decay


def evaluate_model(
    x: np.ndarray, labels: np.ndarray, cfg: EvalConfig, seed: int, query: np.ndarray | None = None
) -> tuple[dict[str, float], pd.DataFrame]:
    """Every metric of one embedding of the test set, and its per-class MAP@R and P@1
    (retrieval.class_scores). With a `query` mask (In-shop), the queries are ranked against the other
    rows, the gallery; the clustering metrics use every row."""
    if query is not None and query.any():
        g = ~query
        depth = neighbour_depth(labels[query], cfg.recall_at, labels[g])
        neighbours, _ = nearest_neighbours(x[g], depth, cfg.query_chunk, queries=x[query])
        out = retrieval_metrics(neighbours, labels[query], cfg.recall_at, gallery_labels=labels[g])
        per_class = class_scores(neighbours, labels[query], gallery_labels=labels[g])
    else:
        neighbours, _ = nearest_neighbours(x, neighbour_depth(labels, cfg.recall_at), cfg.query_chunk)
        out = retrieval_metrics(neighbours, labels, cfg.recall_at)
        per_class = class_scores(neighbours, labels)
    out.update(clustering_metrics(x, labels, seed, cfg.kmeans_niter, cfg.kmeans_restarts))
    out["spectral_decay"] = spectral_decay(x)
    return out, per_class


def evaluate_embeddings(
    x: np.ndarray, labels: np.ndarray, cfg: EvalConfig, seed: int, query: np.ndarray | None = None
) -> dict[str, float]:
    """Every metric of one embedding of the test set (evaluate_model without the per-class scores)."""
    return evaluate_model(x, labels, cfg, seed, query)[0]


def l2_normalize(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


def summarise(results: dict[str, dict]) -> dict:
    """mean, std (ddof = 1; 0 for one value) and ci95 (half-width; NaN for one value) of every metric."""
    values = list(results.values())
    keys = [k for k in values[0] if k != "num_queries"]
    out = {"mean": {}, "std": {}, "ci95": {}}
    for k in keys:
        column = [m[k] for m in values]
        out["mean"][k], out["ci95"][k] = mean_interval(column)
        out["std"][k] = float(np.std(column, ddof=1)) if len(column) > 1 else 0.0
    return out


def model_key(fold: int, seed: int) -> str:
    return f"fold_{fold}_seed_{seed}"


def mlrc_protocol(
    embeddings: dict[tuple[int, int], np.ndarray],
    labels: np.ndarray,
    cfg: EvalConfig,
    seed: int,
    query: np.ndarray | None = None,
) -> tuple[dict, pd.DataFrame]:
    """Separated (every (fold, seed) model, summarised) and Concatenated (per replicate seed, summarised)
    metrics of the test embeddings of a run's models, keyed by (fold, replicate seed); and the separated
    models' per-class scores, one row per test class: its queries, then ``<model>:map_at_r`` and
    ``<model>:precision_at_1`` per model."""
    per_model, classes = {}, []
    for (f, s), x in embeddings.items():
        per_model[model_key(f, s)], scores = evaluate_model(x, labels, cfg, seed, query)
        classes.append(scores.drop(columns="queries").add_prefix(f"{model_key(f, s)}:"))
    per_class = pd.concat([scores[["queries"]], *classes], axis=1)
    per_seed = {}
    for s in dict.fromkeys(s for _, s in embeddings):
        folds = [x for (_, s2), x in embeddings.items() if s2 == s]
        per_seed[f"seed_{s}"] = evaluate_embeddings(
            np.hstack([l2_normalize(x) for x in folds]), labels, cfg, seed, query
        )
    return (
        {
            "separated": {**summarise(per_model), "models": per_model},
            "concatenated": {**summarise(per_seed), "seeds": per_seed},
        },
        per_class,
    )
