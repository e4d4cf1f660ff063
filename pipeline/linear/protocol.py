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

from pipeline.infra.parallel import run_jobs
from pipeline.linear.methods import METHODS, WARM_STARTED, transform


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


def split_parts(x, y, split_seed: int, test_fraction: float, pca_dims: int):
    """(x_train, x_test, y_train, y_test) of one stratified split, preprocessing fitted on the training part."""
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_fraction, stratify=y, random_state=split_seed
    )
    prep = preprocessor(x.shape[1], pca_dims).fit(x_train)
    return prep.transform(x_train), prep.transform(x_test), y_train, y_test


def cv_folds(y_train, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(fit rows, validation rows) of every fold of the stratified k-fold CV on a training part."""
    return list(StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(np.zeros(len(y_train)), y_train))


def fold_accuracies(
    x_train, y_train, fit_rows, val_rows, method: str, settings: list[dict], max_k: int, seed: int
) -> list[np.ndarray]:
    """Validation accuracy of every hyperparameter setting on one CV fold, for K = 1..max_k. A convex
    method (methods.WARM_STARTED) starts each setting from the previous setting's solution on the same
    fold (a warm start along the grid; the optimum does not depend on the start)."""
    acc, m = [], None
    for setting in settings:
        warm = {"m0": m} if method in WARM_STARTED and m is not None else {}
        m = METHODS[method](x_train[fit_rows], y_train[fit_rows], random_state=seed, **setting, **warm)
        fit_z, val_z = transform(x_train[fit_rows], m), transform(x_train[val_rows], m)
        acc.append(knn_accuracies(fit_z, y_train[fit_rows], val_z, y_train[val_rows], max_k))
    return acc


def mean_over_folds(per_fold: list[list[np.ndarray]], max_k: int) -> list[np.ndarray]:
    """Per setting, the mean over folds of `fold_accuracies` (summed in fold order from zero)."""
    totals = [np.zeros(max_k) for _ in per_fold[0]]
    for fold in per_fold:
        for total, acc in zip(totals, fold):
            total += acc
    return [t / len(per_fold) for t in totals]


def choose(settings: list[dict], accuracies: list[np.ndarray]) -> tuple[dict, int, float]:
    """(setting, K, accuracy) with the best mean validation accuracy; the first setting and smallest K win ties."""
    best = (None, 1, -1.0)
    for setting, acc in zip(settings, accuracies):
        k = int(np.argmax(acc))
        if acc[k] > best[2]:
            best = (setting, k + 1, float(acc[k]))
    return best


def test_fit(x_train, x_test, y_train, y_test, method: str, setting: dict, k: int, max_k: int, seed: int) -> dict:
    """Refit `setting` on the whole training part (timed) and score kNN on the test part."""
    start = time.perf_counter()
    m = METHODS[method](x_train, y_train, random_state=seed, **setting)
    fit_seconds = time.perf_counter() - start
    acc = knn_accuracies(transform(x_train, m), y_train, transform(x_test, m), y_test, max_k)
    return {
        "setting": setting,
        "k": k,
        "accuracy": float(acc[k - 1]),
        "best_k_on_test": int(np.argmax(acc)) + 1,
        "accuracy_best_k_on_test": float(acc.max()),
        "fit_seconds": fit_seconds,
    }


def _cv_fold_job(job: tuple) -> list[np.ndarray]:
    x, y, method, settings, split_seed, fold, cfg = job
    x_train, _, y_train, _ = split_parts(x, y, split_seed, cfg.test_fraction, cfg.pca_dims)
    fit_rows, val_rows = cv_folds(y_train, cfg.cv_folds, split_seed)[fold]
    return fold_accuracies(x_train, y_train, fit_rows, val_rows, method, settings, cfg.max_k, split_seed)


def _test_job(job: tuple) -> dict:
    x, y, method, setting, k, split_seed, cfg = job
    parts = split_parts(x, y, split_seed, cfg.test_fraction, cfg.pca_dims)
    return test_fit(*parts, method, setting, k, cfg.max_k, split_seed)


def compare_methods(x, y, cfg, seed: int) -> dict:
    """Every method of `cfg` (the lanml params section) over cfg.repeats splits: per-split results and
    mean / sample std of the accuracies (in %) and of the fit time. Split r uses the same seed for every
    method, so all methods see the same splits. The cross-validation of every (method, split) (all
    settings of the grid in one job, so that convex methods warm-start along it) and then the refit of
    every chosen setting run as jobs on ``cfg.workers`` processes. A cross-validation job is one fold of one
    (method, split) with its whole grid (so that convex methods warm-start along it, as in `fold_accuracies`):
    a job per fold rather than per split keeps the two processes busy to the end (on Vehicle a split's LMNN or
    LANML+ grid is several minutes of work, a fold a fifth of it), and gives the same numbers."""
    splits = []  # (method, split seed, settings)
    for method in cfg.methods:
        grid = dict(cfg.grids.get(method, {}))
        if method in ("lanml_minus", "lanml_plus"):
            grid.update(tol=[cfg.solver_tol], smoothing_min=[cfg.smoothing_min])
        if method == "lanml_minus":
            grid.update(k_similar=[cfg.k_similar])
        splits += [(method, seed + r, grid_settings(grid)) for r in range(cfg.repeats)]
    cv_jobs = [
        (x, y, method, settings, split_seed, fold, cfg)
        for method, split_seed, settings in splits
        for fold in range(cfg.cv_folds)
    ]
    per_fold = run_jobs(_cv_fold_job, cv_jobs, cfg.workers, threads=1, desc="lanml cross-validation")
    accuracies = [
        mean_over_folds(per_fold[i * cfg.cv_folds : (i + 1) * cfg.cv_folds], cfg.max_k) for i in range(len(splits))
    ]
    chosen = [choose(settings, acc) for (_, _, settings), acc in zip(splits, accuracies)]
    test_jobs = [
        (x, y, method, setting, k, split_seed, cfg) for (method, split_seed, _), (setting, k, _) in zip(splits, chosen)
    ]
    out = {}
    for (method, _, _), (_, _, cv_acc), result in zip(
        splits, chosen, run_jobs(_test_job, test_jobs, cfg.workers, threads=1, desc="lanml test")
    ):
        out.setdefault(method, {"splits": []})["splits"].append({**result, "cv_accuracy": cv_acc})
    for result in out.values():
        for key in ("accuracy", "accuracy_best_k_on_test", "fit_seconds"):
            values = np.array([s[key] for s in result["splits"]]) * (100 if key != "fit_seconds" else 1)
            result[key] = {"mean": float(values.mean()), "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0}
    return out
