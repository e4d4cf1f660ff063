"""The decode-once pixel store of finetune mode: every manifest row's image decoded once, by the embed stage, as
uint8 pixels (transparency composited over ``data.background`` and converted to the backbone's mode, exactly as the
image transforms do it: pipeline/data/decode.py), in one flat file read through a memory map.

Training then decodes nothing: a loader process copies the region its random crop needs out of the map (microseconds)
and the per-pixel work runs on whole batches on the training device (pipeline/models/device_augment.py). The store
costs height x width x channels bytes an image on disk (the emoji default 0.2 GB, CUB-200 about 6.6 GB);
``train.augment_on: loader`` does without it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tqdm import tqdm

from pipeline.data.decode import opened_image, without_alpha
from pipeline.data.manifest import DataError, Manifest

PIXELS = "pixels.u8"
INDEX = "pixels_index.npy"  # one row per manifest row: byte offset, height, width, channels


def write_pixel_store(manifest: Manifest, mode: str, background: str, folder: Path) -> None:
    """Decode every manifest row's image once (PIL mode `mode`, transparency over `background`) into `folder`."""
    index = np.zeros((len(manifest.table), 4), dtype=np.int64)
    offset = 0
    with open(folder / PIXELS, "wb") as out:
        for row in tqdm(range(len(index)), desc="decode", unit="image", mininterval=1.0, disable=None):
            with opened_image(manifest.image_path(row), "; prepare it again") as image:
                pixels = np.asarray(without_alpha(image, background).convert(mode), dtype=np.uint8)
            pixels = pixels.reshape(pixels.shape[0], pixels.shape[1], -1)
            index[row] = (offset, *pixels.shape)
            out.write(pixels.tobytes())
            offset += pixels.size
    np.save(folder / INDEX, index)


class PixelStore:
    """A written store, read through a memory map opened lazily in each process (the store pickles as its folder,
    so DataLoader workers map the file themselves; the page cache is shared among them)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        if not (self.folder / INDEX).is_file() or not (self.folder / PIXELS).is_file():
            raise DataError(f"{self.folder}: no pixel store (run the embed stage with train.augment_on=device)")
        self.index = np.load(self.folder / INDEX)
        self._map = None

    @staticmethod
    def exists(folder: str | Path) -> bool:
        return (Path(folder) / INDEX).is_file()

    def __getstate__(self) -> dict:
        return {"folder": self.folder, "index": self.index, "_map": None}

    def size(self, row: int) -> tuple[int, int, int]:
        """(channels, height, width) of row `row`'s image."""
        _, height, width, channels = (int(v) for v in self.index[row])
        return channels, height, width

    def image(self, row: int) -> np.ndarray:
        """Row `row`'s pixels, height x width x channels uint8 (a view into the map)."""
        if self._map is None:
            self._map = np.memmap(self.folder / PIXELS, dtype=np.uint8, mode="r")
        offset, height, width, channels = (int(v) for v in self.index[row])
        return self._map[offset : offset + height * width * channels].reshape(height, width, channels)
