"""Image loading for the embed stage and finetune mode."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from pipeline.data.decode import opened_image
from pipeline.data.manifest import Manifest


class ManifestImages(Dataset):
    """Images of selected manifest rows, transformed, with their labels."""

    def __init__(self, manifest: Manifest, rows: np.ndarray, transform, labels: np.ndarray | None = None):
        self.manifest = manifest
        self.rows = np.asarray(rows)
        self.transform = transform
        self.labels = manifest.labels[self.rows] if labels is None else np.asarray(labels)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int):
        path = self.manifest.image_path(int(self.rows[i]))
        with opened_image(path, "; prepare it again") as image:
            x = self.transform(image)
        return x, torch.as_tensor(self.labels[i])
