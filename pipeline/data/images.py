"""Image loading for the embed stage and finetune mode."""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError
from torch.utils.data import Dataset

from pipeline.data.manifest import DataError, Manifest


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
        try:
            with Image.open(path) as im:
                x = self.transform(im)
        except (UnidentifiedImageError, OSError, SyntaxError) as err:  # one line naming the file, not a traceback
            raise DataError(f"{path}: not a readable image ({type(err).__name__}: {err}); prepare it again") from None
        return x, torch.as_tensor(self.labels[i])
