"""The ANML section 7.1.2 protocol: repeated 70/30 splits, hyperparameters and K by 5-fold CV, kNN accuracy.

Per split: preprocessing (z-score, then PCA to ``pca_dims`` when there are more features) is fitted
on the training part only (choice: the paper normalises the whole set; fitting on the training part
keeps the test part unseen). Every hyperparameter setting of a method's grid is scored by 5-fold
stratified cross-validation on the training part, for every K in 1..max_k at once; the best
(setting, K) pair is refitted on the whole training part (timed) and scored on the test part. The
paper's own reading, the best K on the test part, is kept beside it in a separate, labelled field.
kNN votes break ties towards the smaller class label (scikit-learn's mode).
"""

from __future__ import annotations

import itertools
import time

import numpy as np
from sklearn.decomposition import PCA
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.neighbors import NearestNeighbors
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from pipeline.linear.methods import METHODS, transform
from pipeline.parallel import run_jobs


def knn_accuracies(train_z, train_y, test_z, test_y, max_k: int) -> np.ndarray:
    """Accuracy of the K-nearest-neighbour vote for K = 1..max_k (index K - 1)."""
    k = min(max_k, len(train_z))
    neighbours = NearestNeighbors(n_neighbors=k).fit(train_z).kneighbors(test_z, return_distance=False)
    classes, codes = np.unique(train_y, return_inverse=True)
    votes = np.cumsum(np.eye(len(classes))[codes[neighbours]], axis=1)  # (queries, K, classes)
    predicted = classes[np.argmax(votes, axis=2)]  # argmax: the first (smallest) label among ties
    acc = (predicted == np.asarray(test_y)[:, None]).mean(axis=0)
    return np.pad(acc, (0, max_k - k), mode="edge")


def preprocessor(dims: int, pca_dims: int):
    steps = [StandardScaler()] + ([PCA(n_components=pca_dims, random_state=0)] if dims > pca_dims else [])
    return make_pipeline(*steps)


def grid_settings(grid: dict[str, list]) -> list[dict]:
    """Every combination of a {name: values} grid ([{}] for a method without hyperparameters)."""
    names = sorted(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]


def cross_validate(x, y, method: str, grid: dict[str, list], max_k: int, folds: int, seed: int):
    """(best setting, best K, its mean validation accuracy) over the grid and K = 1..max_k."""
    best = (None, 1, -1.0)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for setting in grid_settings(grid):
        acc = np.zeros(max_k)
        for fit_rows, val_rows in splitter.split(x, y):
            m = METHODS[method](x[fit_rows], y[fit_rows], random_state=seed, **setting)
            acc += knn_accuracies(transform(x[fit_rows], m), y[fit_rows], transform(x[val_rows], m), y[val_rows],
                                  max_k)
        acc /= folds
        k = int(np.argmax(acc))
        if acc[k] > best[2]:
            best = (setting, k + 1, float(acc[k]))
    return best


def evaluate_split(x, y, method: str, grid: dict[str, list], split_seed: int, test_fraction: float,
                   max_k: int, folds: int, pca_dims: int) -> dict:
    """One 70/30 split: CV-selected setting and K, test accuracy, best-K-on-test accuracy, fit time."""
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=test_fraction, stratify=y,
                                                        random_state=split_seed)
    prep = preprocessor(x.shape[1], pca_dims).fit(x_train)
    x_train, x_test = prep.transform(x_train), prep.transform(x_test)
    setting, k, cv_acc = cross_validate(x_train, y_train, method, grid, max_k, folds, split_seed)
    start = time.perf_counter()
    m = METHODS[method](x_train, y_train, random_state=split_seed, **setting)
    fit_seconds = time.perf_counter() - start
    acc = knn_accuracies(transform(x_train, m), y_train, transform(x_test, m), y_test, max_k)
    return {"setting": setting, "k": k, "cv_accuracy": cv_acc, "accuracy": float(acc[k - 1]),
            "best_k_on_test": int(np.argmax(acc)) + 1, "accuracy_best_k_on_test": float(acc.max()),
            "fit_seconds": fit_seconds}


def _evaluate_split_job(job: tuple) -> dict:
    return evaluate_split(*job)


def compare_methods(x, y, cfg, seed: int) -> dict:
    """Every method of `cfg` (the lanml params section) over cfg.repeats splits: per-split results and
    mean / sample std of the accuracies (in %) and of the fit time. Split r uses the same seed for every
    method, so all methods see the same splits."""
    out = {}
    jobs = []
    for method in cfg.methods:
        grid = dict(cfg.grids.get(method, {}))
        if method == "lanml_minus":
            grid.update(k_similar=[cfg.k_similar], tol=[cfg.solver_tol], smoothing_min=[cfg.smoothing_min])
        jobs += [(x, y, method, grid, seed + r, cfg.test_fraction, cfg.max_k, cfg.cv_folds, cfg.pca_dims)
                 for r in range(cfg.repeats)]
    for job, split in zip(jobs, run_jobs(_evaluate_split_job, jobs, cfg.workers, threads=1, desc="lanml")):
        out.setdefault(job[2], {"splits": []})["splits"].append(split)
    for method, result in out.items():
        for key in ("accuracy", "accuracy_best_k_on_test", "fit_seconds"):
            values = np.array([s[key] for s in result["splits"]]) * (100 if key != "fit_seconds" else 1)
            result[key] = {"mean": float(values.mean()),
                           "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0}
    return out
