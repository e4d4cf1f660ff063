"""One training run: a method on one MLRC fold, in frozen or finetune mode."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import TensorDataset

from pipeline.config import Params
from pipeline.data.images import ManifestImages
from pipeline.data.manifest import Manifest
from pipeline.features import FeatureCache
from pipeline.methods import build_objective, run_config
from pipeline.models.backbones import build_backbone, eval_transform, train_transform
from pipeline.models.embedder import Embedder, build_head
from pipeline.runtime import derive_seed, seed_everything
from pipeline.training import FitResult, FoldData, embed, fit


@dataclass
class RunResult:
    model: Embedder
    fit: FitResult
    diagnostics: list[dict]
    test_embeddings: np.ndarray
    test_labels: np.ndarray


def fold_rows(manifest: Manifest, fold: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row indices of (training part, validation fold, test split)."""
    return manifest.rows("train", fold), manifest.rows("train", fold, validation=True), manifest.rows("test")


def frozen_data(features: FeatureCache, rows) -> FoldData:
    """Cached features as inputs (frozen mode)."""
    train, val, test = rows
    labels = features.labels
    x = torch.from_numpy(features.features)
    remapped = np.unique(labels[train], return_inverse=True)[1]
    return FoldData(
        TensorDataset(x[train], torch.from_numpy(remapped)), remapped,
        TensorDataset(x[val], torch.from_numpy(labels[val])), labels[val],
        TensorDataset(x[test], torch.from_numpy(labels[test])), labels[test],
    )


def image_data(manifest: Manifest, params: Params, rows) -> FoldData:
    """Images as inputs (finetune mode): augmented for training, plain for validation and test."""
    train, val, test = rows
    labels = manifest.labels
    remapped = np.unique(labels[train], return_inverse=True)[1]
    plain = eval_transform(params.backbone)
    return FoldData(
        ManifestImages(manifest, train, train_transform(params.backbone, params.train.augment_pad), remapped), remapped,
        ManifestImages(manifest, val, plain), labels[val],
        ManifestImages(manifest, test, plain), labels[test],
    )


def train_fold(params: Params, method: str, fold: int, manifest: Manifest, features: FeatureCache | None,
               device: torch.device) -> RunResult:
    """Build inputs, model and objective, train with early stopping, embed the test set with the best weights."""
    seed_everything(derive_seed(params.seed, method, fold))
    rows = fold_rows(manifest, fold)
    cfg = run_config(params, method)
    if params.train.mode == "frozen":
        if features is None:
            raise FileNotFoundError("train.mode=frozen needs the feature cache (run the embed stage)")
        data, backbone = frozen_data(features, rows), None
    else:
        data, backbone = image_data(manifest, params, rows), build_backbone(params.backbone)
    with torch.no_grad():
        probe = data.train[0][0].unsqueeze(0)
        in_dim = (probe if backbone is None else backbone.eval()(probe)).flatten(1).shape[1]
    model = Embedder(backbone, build_head(in_dim, params.train.embedding_dim, params.train.head_hidden),
                     cfg.embedding_norm)
    objective = build_objective(params, method, len(np.unique(data.train_labels)), params.train.embedding_dim)
    result = fit(model, objective, data, params.train, device, desc=f"{method}-{fold}")
    model.load_state_dict(result.best_state["model"])
    return RunResult(model, result, objective.diagnostics, embed(model, data.test, device), data.test_labels)
