"""One training run: a method on one MLRC fold, in frozen or finetune mode, and the job that trains,
saves and evaluates it (pipeline/training/worker.py runs it in a worker process)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import TensorDataset

from pipeline.config import to_dict
from pipeline.data.images import ManifestImages
from pipeline.data.manifest import Manifest, read_manifest
from pipeline.data.pixels import PixelStore
from pipeline.infra.download import download_folder
from pipeline.infra.io import write_json, write_npz
from pipeline.infra.runtime import choose_device, derive_seed, seed_everything
from pipeline.methods import build_objective
from pipeline.models.backbones import build_backbone
from pipeline.models.device_augment import DeviceAugment, StoredImages
from pipeline.models.embedder import Embedder, run_embedder
from pipeline.models.features import FeatureCache
from pipeline.models.transforms import eval_transform, train_transform
from pipeline.runs import RunSetup
from pipeline.training.inference import embed
from pipeline.training.jobs import FoldJob, FoldOutcome
from pipeline.training.loop import FitResult, FoldData, fit
from pipeline.training.pruning import Floor


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


def image_data(manifest: Manifest, setup: RunSetup, rows, store: PixelStore | None = None) -> FoldData:
    """Images as inputs (finetune mode): augmented for training, from the pixel `store` on the training device
    (train.augment_on=device) or by PIL in the loader; plain for validation and test."""
    train, val, test = rows
    labels = manifest.labels
    remapped = np.unique(labels[train], return_inverse=True)[1]
    plain = eval_transform(setup.backbone, setup.data.background)
    pad = setup.train.augment_pad
    if store is not None:
        training = StoredImages(store, train, remapped, setup.backbone, pad)
        on_device = DeviceAugment(setup.backbone, pad)
    else:
        augmented = train_transform(setup.backbone, pad, setup.data.background)
        training, on_device = ManifestImages(manifest, train, augmented, remapped), None
    return FoldData(
        training,
        remapped,
        ManifestImages(manifest, val, plain),
        labels[val],
        ManifestImages(manifest, test, plain),
        labels[test],
        on_device,
    )


def train_fold(
    setup: RunSetup,
    fold: int,
    manifest: Manifest,
    cached: FeatureCache | PixelStore | None,
    device: torch.device,
    seed: int = 0,
    test: bool = True,
    prune: Floor | None = None,
) -> RunResult:
    """Build inputs, model and objective, train with early stopping, embed the test set with the best weights
    (with `test` False, as in tuning, no test row is selected or read and test_embeddings is None).

    Common random numbers: the initial network and the batches follow (setup.seed, fold, replicate seed),
    not the method, so the runs a claim compares start from the same weights and see the same batches until
    their methods make them differ (CCP and Loss-Proxy are one computation up to CCP's first re-initialisation).
    A tuning trial's `prune` floor may stop training early (pipeline/training/pruning.py)."""
    train = setup.train
    seed_everything(derive_seed(setup.seed, "init", fold, seed), device)
    rows = fold_rows(manifest, fold)
    if not test:
        rows = (rows[0], rows[1], rows[2][:0])
    if train.mode == "frozen":
        if not isinstance(cached, FeatureCache):
            raise FileNotFoundError("train.mode=frozen needs the feature cache (run the embed stage)")
        data, backbone = frozen_data(cached, rows), None
    else:
        data = image_data(manifest, setup, rows, cached if isinstance(cached, PixelStore) else None)
        backbone = build_backbone(setup.backbone, download_folder(setup.data.download_dir))
    with torch.no_grad():
        probe = data.row_inputs([0], torch.device("cpu"))
        in_dim = (probe if backbone is None else backbone.eval()(probe)).flatten(1).shape[1]
    model = run_embedder(setup, backbone, in_dim)
    objective = build_objective(setup, len(np.unique(data.train_labels)))
    result = fit(
        model,
        objective,
        data,
        train,
        device,
        desc=f"{setup.name}-{fold}",
        batch_seed=derive_seed(setup.seed, "batches", fold, seed),
        cut=None if prune is None else prune.cuts,
    )
    model.load_state_dict(result.best_state["model"])
    test_embeddings = embed(model, data.test, device, train.num_workers, train.amp) if test else None
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
    setup = job.setup
    if setup.train.mode == "frozen":
        cached = load_features(job.features)
    else:
        cached = PixelStore(job.features) if setup.train.augment_on == "device" else None
    if not job.test and (job.out is not None or job.evaluate):
        raise ValueError("a FoldJob without test classes (tuning) can neither save a model nor evaluate it")
    result = train_fold(
        setup,
        job.fold,
        read_manifest(job.data),
        cached,
        choose_device(setup.train.device, setup.train.mode),
        job.seed,
        job.test,
        job.prune,
    )
    if job.out is not None:
        out = Path(job.out)
        out.mkdir()  # not parents=True: a stage's temporary folder that was cleaned up must stay gone
        torch.save(result.model.state_dict(), out / "model.pt")
        write_npz(
            out / "test_embeddings.npz",
            embeddings=result.test_embeddings,
            labels=result.test_labels,
            query=result.test_query,
        )
        write_json(
            out / "summary.json",
            {
                "method": setup.name,
                "fold": job.fold,
                "seed": job.seed,
                "best_epoch": result.fit.best_epoch,
                "epochs_run": len(result.fit.history) - 1,
                "stop_reason": result.fit.stop_reason,
                "best_val_map_at_r": result.fit.best_val_map_at_r,
                "params": setup.record(),
                "train": to_dict(setup.train),
            },
        )
    metrics = None
    if job.evaluate:  # imported here: the evaluation's scikit-learn is a third of a train worker's imports
        from pipeline.evaluation.protocol import evaluate_embeddings

        metrics = evaluate_embeddings(
            result.test_embeddings, result.test_labels, setup.eval, setup.seed, result.test_query
        )
    return FoldOutcome(
        result.fit.history,
        result.diagnostics,
        result.fit.best_epoch,
        result.fit.best_val_map_at_r,
        metrics,
        result.fit.stop_reason,
    )
