"""The manifest every preparer writes: one CSV row per image.

Columns: ``path`` (relative to the manifest's folder), ``label`` (integer class id),
``split`` (``train`` or ``test``; ``query`` / ``gallery`` for the test images of a data set
evaluated query against gallery, In-shop) and ``fold`` (for training images the MLRC fold
whose validation block holds the image's class; -1 for test images).

MLRC protocol (CCP section 5.1, MLRC section 4): classes sorted, first half
train, second half test; the training classes in label order are cut into
``k`` contiguous class-disjoint blocks at ``np.linspace(0, C_train, k + 1)``
(as in the CCP release); model k validates on block k and trains on the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pipeline.infra.errors import PipelineError

if TYPE_CHECKING:  # pandas is imported where it is used (every stage imports this module with params)
    import pandas as pd

MANIFEST_NAME = "manifest.csv"
COLUMNS = ["path", "label", "split", "fold"]
TEST_SPLITS = ("test", "query", "gallery")  # the unseen classes: one test set, or In-shop's query + gallery


class DataError(PipelineError, ValueError):
    """A data set problem; the message is one line naming the file or class."""


def class_disjoint_split(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted class ids cut in half: (train classes, test classes)."""
    classes = np.unique(labels)
    half = len(classes) // 2
    return classes[:half], classes[half:]


def fold_of_class(train_classes: np.ndarray, num_folds: int) -> dict[int, int]:
    """Contiguous class-disjoint folds of the training classes, in label order."""
    train_classes = np.sort(train_classes)
    if len(train_classes) < num_folds:
        raise DataError(f"{len(train_classes)} training classes cannot make {num_folds} folds")
    edges = np.linspace(0, len(train_classes), num_folds + 1).astype(int)
    return {int(c): k for k in range(num_folds) for c in train_classes[edges[k] : edges[k + 1]]}


def build_manifest(
    paths: list[str], labels: np.ndarray, num_folds: int, split: np.ndarray | None = None
) -> pd.DataFrame:
    """Assign split and fold to every image; refuse classes with fewer than 2 images.

    `split`: a data set's official split (SOP's Ebay_train/Ebay_test, In-shop's train/query/gallery);
    None: the sorted classes cut in half (MLRC; CUB 100/100 and Cars 98/98 are their official splits too).
    """
    import pandas as pd

    labels = np.asarray(labels, dtype=np.int64)
    classes, counts = np.unique(labels, return_counts=True)
    small = classes[counts < 2]
    if len(small):
        raise DataError(
            f"class {int(small[0])} has {int(counts[counts < 2][0])} image(s); every class needs at least 2"
        )
    if split is None:
        train_classes, _ = class_disjoint_split(labels)
        split = np.where(np.isin(labels, train_classes), "train", "test")
    else:
        split = np.asarray(split, dtype=object)
        unknown = sorted(set(split) - {"train", *TEST_SPLITS})
        if unknown:
            raise DataError(f"unknown split name {unknown[0]!r} (valid: train, {', '.join(TEST_SPLITS)})")
        train_classes = np.unique(labels[split == "train"])
        shared = np.intersect1d(train_classes, labels[split != "train"])
        if len(shared):
            raise DataError(f"class {int(shared[0])} is in both the training and the test split")
    folds = fold_of_class(train_classes, num_folds)
    fold = np.array([folds.get(int(y), -1) for y in labels], dtype=np.int64)
    return pd.DataFrame({"path": paths, "label": labels, "split": split, "fold": fold})[COLUMNS]


@dataclass(frozen=True)
class Manifest:
    """A loaded manifest with its root folder."""

    root: Path
    table: pd.DataFrame

    @property
    def labels(self) -> np.ndarray:
        return self.table["label"].to_numpy()

    def rows(self, split: str, fold: int | None = None, validation: bool = False) -> np.ndarray:
        """Row indices of a split; for ``train`` with a fold, its training or validation part."""
        t = self.table
        mask = t["split"].isin(TEST_SPLITS if split == "test" else [split]).to_numpy().copy()
        if fold is not None:
            in_fold = (t["fold"] == fold).to_numpy()
            mask &= in_fold if validation else ~in_fold
        return np.flatnonzero(mask)

    def num_classes(self, split: str, fold: int | None = None, validation: bool = False) -> int:
        """The number of classes among `rows(split, fold, validation)`: L of a fold's training part."""
        return len(np.unique(self.labels[self.rows(split, fold, validation)]))

    def is_query(self, rows: np.ndarray) -> np.ndarray:
        """Which of `rows` are queries of a query/gallery split (all False for a plain test split)."""
        return self.table["split"].to_numpy()[rows] == "query"

    def image_path(self, row: int) -> Path:
        return self.root / self.table["path"].iat[row]


def read_manifest(root: str | Path) -> Manifest:
    import pandas as pd

    path = Path(root) / MANIFEST_NAME
    if not path.is_file():
        raise DataError(f"{path}: manifest not found (run the prepare stage)")
    table = pd.read_csv(path)
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}")
    return Manifest(Path(root), table)
