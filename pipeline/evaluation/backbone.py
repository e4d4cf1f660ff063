"""The reference every trained run has to beat: the backbone's cached features themselves, no head trained.

The embed stage's features (pixels for the digit default, the pretrained network's for images), L2-normalised
(the trained runs' embeddings are compared on the unit sphere too), go through the same test-set metrics as a
trained model (protocol.evaluate_embeddings) and the same validation MAP@R that selects a model (each MLRC fold's
validation classes, mean over the folds). One embedding, so there is no interval: a trained run whose interval
lies above it gained from training.
"""

from __future__ import annotations

import numpy as np

from pipeline.data.manifest import DataError, read_manifest
from pipeline.evaluation.protocol import evaluate_embeddings, l2_normalize
from pipeline.evaluation.retrieval import map_at_r
from pipeline.models.features import FeatureCache

NAME = "backbone"  # its key in reports/headline_metrics.json (its metrics: data/evaluation/backbone.json)


def evaluate_backbone(job: tuple) -> dict:
    """Test metrics and validation MAP@R of the features in `features_file` = job[1] for the manifest in
    `data` = job[0], over `folds` = job[2] (EvalConfig job[3], k-means seed job[4])."""
    data, features_file, folds, cfg, seed = job
    manifest = read_manifest(data)
    cache = FeatureCache.load(features_file)
    if len(cache.labels) != len(manifest.labels) or not np.array_equal(cache.labels, manifest.labels):
        raise DataError(f"{features_file}: rows differ from {data}'s manifest (run the embed stage again)")
    x = l2_normalize(cache.features.astype(np.float32))
    test = manifest.rows("test")
    validation = [map_at_r(x[rows], cache.labels[rows]) for rows in (manifest.rows("train", f, True) for f in folds)]
    return {
        "test": evaluate_embeddings(x[test], cache.labels[test], cfg, seed, manifest.is_query(test)),
        "validation": {"map_at_r": float(np.mean(validation))},
        "folds": list(folds),
        "dim": int(x.shape[1]),
    }
