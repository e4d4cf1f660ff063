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
        with open(path, "wb") as fh:
            np.savez(fh, features=self.features, labels=self.labels, split=self.split, fold=self.fold)

    @classmethod
    def load(cls, path: str | Path) -> "FeatureCache":
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: feature cache not found (run the embed stage)")
        with np.load(path, allow_pickle=False) as z:
            return cls(z["features"], z["labels"], z["split"], z["fold"])


@torch.no_grad()
def extract_features(manifest: Manifest, cfg: BackboneConfig, device: torch.device, num_workers: int = 0,
                     download_dir: str = "data/downloads") -> FeatureCache:
    """Run the backbone (eval mode, eval transform) over every manifest row, in batches on `device`."""
    backbone = build_backbone(cfg, download_dir)
    if backbone is not None:
        backbone.eval().to(device)
    rows = np.arange(len(manifest.table))
    loader = DataLoader(ManifestImages(manifest, rows, eval_transform(cfg)), batch_size=cfg.embed_batch_size,
                        shuffle=False, num_workers=num_workers, pin_memory=device.type == "cuda")
    chunks = []
    start = time.perf_counter()
    with tqdm(total=len(rows), desc=f"embed ({cfg.name})", unit="img") as progress:
        for x, _ in loader:
            x = x.to(device, non_blocking=True)
            out = x.flatten(1) if backbone is None else backbone(x)
            chunks.append(out.flatten(1).float().cpu().numpy())
            progress.update(len(x))
    feats = np.concatenate(chunks).astype(np.float32)
    # the rate goes to the log only: a clock reading in the cache would make it differ on every run
    log.info("features: %d x %d from %s, %.1f images/s on %s", *feats.shape, cfg.name,
             len(rows) / (time.perf_counter() - start), device)
    t = manifest.table
    return FeatureCache(feats, t["label"].to_numpy(np.int64), t["split"].to_numpy(str), t["fold"].to_numpy(np.int64))
