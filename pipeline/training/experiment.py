"""One training run: a method on one MLRC fold, in frozen or finetune mode, and the job that trains,
saves and evaluates it (pipeline/training/worker.py runs it in a worker process)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import TensorDataset

from pipeline.config import Params, to_dict
from pipeline.data.images import ManifestImages
from pipeline.data.manifest import Manifest, read_manifest
from pipeline.infra.download import download_folder
from pipeline.infra.io import write_json
from pipeline.infra.runtime import choose_device, derive_seed, seed_everything
from pipeline.methods import build_objective
from pipeline.models.backbones import build_backbone
from pipeline.models.embedder import Embedder, build_head
from pipeline.models.features import FeatureCache
from pipeline.models.transforms import eval_transform, train_transform
from pipeline.training.jobs import FoldJob, FoldOutcome
from pipeline.training.loop import FitResult, FoldData, embed, fit
from pipeline.training.runs import run_config, run_record, run_train_config


@dataclass
class RunResult:
    model: Embedder
    fit: FitResult
    diagnostics: list[dict]
    test_embeddings: np.ndarray | None
    test_labels: np.ndarray
    test_query: np.ndarray  # which test rows are queries (query/gallery data sets; else all False)


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
        TensorDataset(x[train], torch.from_numpy(remapped)),
        remapped,
        TensorDataset(x[val], torch.from_numpy(labels[val])),
        labels[val],
        TensorDataset(x[test], torch.from_numpy(labels[test])),
        labels[test],
    )


def image_data(manifest: Manifest, params: Params, rows) -> FoldData:
    """Images as inputs (finetune mode): augmented for training, plain for validation and test."""
    train, val, test = rows
    labels = manifest.labels
    remapped = np.unique(labels[train], return_inverse=True)[1]
    plain = eval_transform(params.backbone, params.data.background)
    augmented = train_transform(params.backbone, params.train.augment_pad, params.data.background)
    return FoldData(
        ManifestImages(manifest, train, augmented, remapped),
        remapped,
        ManifestImages(manifest, val, plain),
        labels[val],
        ManifestImages(manifest, test, plain),
        labels[test],
    )


def train_fold(
    params: Params,
    method: str,
    fold: int,
    manifest: Manifest,
    features: FeatureCache | None,
    device: torch.device,
    seed: int = 0,
    test: bool = True,
) -> RunResult:
    """Build inputs, model and objective, train with early stopping, embed the test set with the best weights
    (with `test` False, as in tuning, no test row is selected or read and test_embeddings is None).

    Common random numbers: the initial network and the batches follow (params.seed, fold, replicate seed),
    not the method, so the runs a claim compares start from the same weights and see the same batches until
    their methods make them differ (CCP and Loss-Proxy are one computation up to CCP's first re-initialisation)."""
    seed_everything(derive_seed(params.seed, "init", fold, seed), device)
    rows = fold_rows(manifest, fold)
    if not test:
        rows = (rows[0], rows[1], rows[2][:0])
    cfg = run_config(params, method)
    if params.train.mode == "frozen":
        if features is None:
            raise FileNotFoundError("train.mode=frozen needs the feature cache (run the embed stage)")
        data, backbone = frozen_data(features, rows), None
    else:
        data = image_data(manifest, params, rows)
        backbone = build_backbone(params.backbone, download_folder(params.data.download_dir))
    with torch.no_grad():
        probe = data.train[0][0].unsqueeze(0)
        in_dim = (probe if backbone is None else backbone.eval()(probe)).flatten(1).shape[1]
    model = Embedder(
        backbone,
        build_head(in_dim, params.train.embedding_dim, params.train.head_hidden),
        cfg.embedding_norm,
        params.backbone.freeze_bn,
        getattr(cfg, "eval_norm", "same"),  # a baseline's own choice; CCP and PROFS read what they train on
    )
    objective = build_objective(params, method, len(np.unique(data.train_labels)), params.train.embedding_dim)
    result = fit(
        model,
        objective,
        data,
        run_train_config(params, method),
        device,
        desc=f"{method}-{fold}",
        batch_seed=derive_seed(params.seed, "batches", fold, seed),
    )
    model.load_state_dict(result.best_state["model"])
    test_embeddings = embed(model, data.test, device, params.train.num_workers, params.train.amp) if test else None
    return RunResult(
        model, result, objective.diagnostics, test_embeddings, data.test_labels, manifest.is_query(rows[2])
    )


@functools.lru_cache(maxsize=1)
def _load_features(path: str, mtime_ns: int, size: int) -> FeatureCache:
    """The feature cache, read once per worker process for the jobs it runs (keyed by the file's stat)."""
    return FeatureCache.load(path)


def load_features(folder: str) -> FeatureCache:
    path = Path(folder) / "features.npz"
    if not path.is_file():
        return FeatureCache.load(path)  # its one-line error
    stat = path.stat()
    return _load_features(str(path), stat.st_mtime_ns, stat.st_size)


def train_and_save(job: FoldJob) -> FoldOutcome:
    """Run one FoldJob: train, save its files, evaluate on the test classes if asked."""
    params = job.params
    features = load_features(job.features) if params.train.mode == "frozen" else None
    if not job.test and (job.out is not None or job.evaluate):
        raise ValueError("a FoldJob without test classes (tuning) can neither save a model nor evaluate it")
    result = train_fold(
        params,
        job.method,
        job.fold,
        read_manifest(job.data),
        features,
        choose_device(params.train.device, params.train.mode),
        job.seed,
        job.test,
    )
    if job.out is not None:
        out = Path(job.out)
        out.mkdir()  # not parents=True: a stage's temporary folder that was cleaned up must stay gone
        torch.save(result.model.state_dict(), out / "model.pt")
        with open(out / "test_embeddings.npz", "wb") as fh:
            np.savez(fh, embeddings=result.test_embeddings, labels=result.test_labels, query=result.test_query)
        write_json(
            out / "summary.json",
            {
                "method": job.method,
                "fold": job.fold,
                "seed": job.seed,
                "best_epoch": result.fit.best_epoch,
                "epochs_run": len(result.fit.history) - 1,
                "stop_reason": result.fit.stop_reason,
                "best_val_map_at_r": result.fit.best_val_map_at_r,
                "params": run_record(params, job.method),
                "train": to_dict(run_train_config(params, job.method)),
            },
        )
    metrics = None
    if job.evaluate:  # imported here: the evaluation's scikit-learn is a third of a train worker's imports
        from pipeline.evaluation.protocol import evaluate_embeddings

        metrics = evaluate_embeddings(
            result.test_embeddings, result.test_labels, params.eval, params.seed, result.test_query
        )
    return FoldOutcome(
        result.fit.history,
        result.diagnostics,
        result.fit.best_epoch,
        result.fit.best_val_map_at_r,
        metrics,
        result.fit.stop_reason,
    )
