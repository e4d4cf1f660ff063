"""The backbone embedding cache: features of every manifest row, computed once."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm

from pipeline.config import BackboneConfig
from pipeline.data.images import ManifestImages
from pipeline.data.manifest import Manifest
from pipeline.infra.console import in_worker
from pipeline.infra.io import read_npz, write_npz
from pipeline.models.backbones import build_backbone
from pipeline.models.transforms import eval_transform

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FeatureCache:
    """Features aligned row by row with the manifest."""

    features: np.ndarray  # (N, D) float32
    labels: np.ndarray  # (N,) int64
    split: np.ndarray  # (N,) str
    fold: np.ndarray  # (N,) int64

    def save(self, path: Path) -> None:
        write_npz(path, features=self.features, labels=self.labels, split=self.split, fold=self.fold)

    @classmethod
    def load(cls, path: str | Path) -> FeatureCache:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: feature cache not found (run the embed stage)")
        z = read_npz(path, ("features", "labels", "split", "fold"), "run the embed stage again (dvc repro -f embed)")
        return cls(z["features"], z["labels"], z["split"], z["fold"])


@torch.no_grad()
def extract_features(
    manifest: Manifest,
    cfg: BackboneConfig,
    background: str,
    device: torch.device,
    num_workers: int = 0,
    download_dir: str = "data/downloads",
    workers: int = 1,
) -> FeatureCache:
    """Run the backbone (eval mode, eval transform; transparent images over `background`) over every manifest
    row, in batches on `device`.

    On the CPU with `workers` > 1 the batches are shared round-robin among that many spawned processes of one
    thread each, every one with the parent's weights: a batch holds the same rows and meets the same kernels
    on the same thread count as in the one-process run, so the features are identical to it, bit for bit
    (tests/test_data.py); only the wall time changes."""
    backbone = build_backbone(cfg, download_dir)
    if backbone is not None:
        backbone.eval().to(device)
    rows = np.arange(len(manifest.table))
    batches = [rows[s : s + cfg.embed_batch_size] for s in range(0, len(rows), cfg.embed_batch_size)]
    start = time.perf_counter()
    if device.type == "cpu" and workers > 1 and len(batches) > 1:
        from pipeline.infra.parallel import run_jobs

        weights = None if backbone is None else backbone.state_dict()
        jobs = [(manifest, cfg, background, weights, batches[w::workers], download_dir) for w in range(workers)]
        parts = run_jobs(_embed_batches, jobs, workers, 1, desc=f"embed ({cfg.name}, {workers} processes)")
        chunks = [parts[b % workers][b // workers] for b in range(len(batches))]
    else:
        chunks = _embed(backbone, manifest, cfg, background, batches, device, num_workers)
    feats = np.concatenate(chunks).astype(np.float32)
    # the rate goes to the log only: a clock reading in the cache would make it differ on every run
    log.info(
        "features: %d x %d from %s, %.1f images/s on %s (%d process%s)",
        *feats.shape,
        cfg.name,
        len(rows) / (time.perf_counter() - start),
        device,
        workers if device.type == "cpu" else 1,
        "es" if workers > 1 and device.type == "cpu" else "",
    )
    t = manifest.table
    return FeatureCache(feats, t["label"].to_numpy(np.int64), t["split"].to_numpy(str), t["fold"].to_numpy(np.int64))


def _embed(
    backbone,
    manifest: Manifest,
    cfg: BackboneConfig,
    background: str,
    batches: list[np.ndarray],
    device: torch.device,
    num_workers: int = 0,
) -> list[np.ndarray]:
    """The features of each batch of manifest rows, in order."""
    images = ManifestImages(manifest, np.concatenate(batches), eval_transform(cfg, background))
    sizes = [len(b) for b in batches]
    loader = DataLoader(
        images, batch_sampler=_consecutive(sizes), num_workers=num_workers, pin_memory=device.type == "cuda"
    )
    chunks = []
    with tqdm(total=sum(sizes), desc=f"embed ({cfg.name})", unit="img", disable=in_worker() or None) as progress:
        for x, _ in loader:
            x = x.to(device, non_blocking=True)
            out = x.flatten(1) if backbone is None else backbone(x)
            chunks.append(out.flatten(1).float().cpu().numpy())
            progress.update(len(x))
    return chunks


def _consecutive(sizes: list[int]) -> list[list[int]]:
    """Batches of dataset positions: the first sizes[0] positions, then the next sizes[1], ..."""
    ends = np.cumsum(sizes)
    return [list(range(e - n, e)) for n, e in zip(sizes, ends)]


@torch.no_grad()
def _embed_batches(job) -> list[np.ndarray]:
    """A worker of extract_features: the backbone with the parent's weights over its share of the batches."""
    manifest, cfg, background, weights, batches, download_dir = job
    backbone = build_backbone(cfg, download_dir)
    if backbone is not None:
        backbone.load_state_dict(weights)
        backbone.eval()
    return _embed(backbone, manifest, cfg, background, batches, torch.device("cpu"))
