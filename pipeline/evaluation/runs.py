"""Evaluation of one trained run: its fold models' test embeddings through the MLRC protocol."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.data.manifest import DataError
from pipeline.evaluation.protocol import mlrc_protocol
from pipeline.evaluation.spectrum import singular_value_spectrum
from pipeline.infra.io import read_json, read_npz
from pipeline.runs import model_name

HEADLINE = ("map_at_r", "precision_at_1")  # test: separated means, listed by dvc metrics / exp show


def embeddings_file(run_folder: str | Path, fold: int, seed: int) -> Path:
    """Where the train stage saves a model's test embeddings."""
    return Path(run_folder) / model_name(fold, seed) / "test_embeddings.npz"


def evaluate_run(job: tuple) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """(metrics, spectra, per-class scores) of run folder `path` = job[0] with models `models` = job[2],
    (fold, seed) pairs: MLRC Separated and Concatenated metrics with the test set's size, the normalised
    singular values of each model's test embeddings, and every model's MAP@R and P@1 per test class."""
    path, name, models, cfg, seed = job
    embeddings, labels, query = {}, None, None
    for fold, s in models:
        file = embeddings_file(path, fold, s)
        z = read_npz(file, ("embeddings", "labels"), f"run the train stage of {name} again")
        if labels is not None and not np.array_equal(labels, z["labels"]):
            raise DataError(f"{file}: test labels differ from {model_name(*models[0])}'s")
        embeddings[fold, s] = z["embeddings"]
        labels = z["labels"]
        query = z.get("query")
    result, per_class = mlrc_protocol(embeddings, labels, cfg, seed, query)
    # the number to select settings by: validation MAP@R at each model's kept epoch (train stage's summary.json),
    # mean over the fold x seed models; the test metrics above are for reading, not for choosing
    result["validation"] = {
        "map_at_r": float(
            np.mean(
                [
                    read_json(Path(path) / model_name(fold, s) / "summary.json")["best_val_map_at_r"]
                    for fold, s in models
                ]
            )
        )
    }
    result["folds"] = sorted({f for f, _ in models})
    result["seeds"] = list(dict.fromkeys(s for _, s in models))
    result["num_test_images"] = int(len(labels))
    result["num_test_classes"] = int(len(np.unique(labels)))
    if query is not None and query.any():
        result["num_query_images"] = int(query.sum())
    spectra = pd.concat(
        [
            pd.DataFrame({"fold": fold, "seed": s, "singular_value": singular_value_spectrum(x)}).assign(
                index=lambda t: np.arange(
                    1, len(t) + 1
                )  # min(images, dims) values: a test set smaller than D has fewer
            )[["fold", "seed", "index", "singular_value"]]
            for (fold, s), x in embeddings.items()
        ]
    )
    return result, spectra, per_class
