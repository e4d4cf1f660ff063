"""Your own images (``-S dataset=folder -S data.source=<path>``): a folder with one sub-folder per class, or a CSV
manifest with ``path`` and ``label`` columns (paths relative to the CSV's folder, or absolute).

The images are checked and copied into the prepared folder (copies, not links: DVC may make its cached files
read-only, and a link would carry that to your originals), the classes
sorted by name and numbered, and the MLRC protocol applied as to every named data set (pipeline/data/manifest.py):
the first half of the sorted classes train, the second half test, the training classes cut into class-disjoint
folds. Bad input stops with one line naming the file or class, before anything is copied: a missing source, a
class with fewer than 2 images (an empty class folder too), an image that cannot be read or whose pixel data does
not decode whole, a path listed twice, too few classes for the folds. Transparent images are kept as they are and
composited over ``data.background`` when they become inputs (pipeline/models/transforms.py).
DVC does not see inside `data.source`: after changing its images, rerun ``dvc repro -f prepare``.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
from tqdm import tqdm

from pipeline.data.decode import opened_image
from pipeline.data.manifest import MANIFEST_NAME, DataError, build_manifest
from pipeline.datasets import Dataset, register_dataset

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")


def _from_folder(root: Path) -> tuple[list[Path], list[str]]:
    """Every image under each class sub-folder (any depth), classes in name order, files in path order."""
    classes = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not classes:
        raise DataError(f"data.source: {root}: no class sub-folders (one folder of images per class)")
    files, labels = [], []
    for folder in classes:
        found = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
        if not found:  # as a class of one image (write_folder), not a class silently left out
            raise DataError(f"class {folder.name!r}: 0 images in {folder} (every class needs at least 2)")
        files += found
        labels += [folder.name] * len(found)
    return files, labels


def _from_csv(path: Path) -> tuple[list[Path], list[str]]:
    """The rows of a CSV manifest (path, label), paths relative to its folder."""
    import pandas as pd

    try:
        table = pd.read_csv(path, dtype={"path": str, "label": str})
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable CSV ({str(err).splitlines()[0]})") from None
    missing = [c for c in ("path", "label") if c not in table.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)} (a CSV with path,label)")
    twice = table.path[table.path.duplicated()]
    if len(twice):
        rows = np.flatnonzero(table.path == twice.iloc[0]) + 2  # 1-based, after the header line
        raise DataError(f"{path}: path {twice.iloc[0]!r} listed twice (lines {rows[0]} and {rows[1]})")
    return [path.parent / p for p in table.path], list(table.label)


def _check_readable(files: list[Path], bar: tqdm) -> None:
    """Every file is an image whose pixel data decodes whole (verify() alone checks the header and checksums: a
    PNG with a broken data stream passes it and would fail only at the embed stage)."""
    for f in files:
        bar.update()
        if not f.is_file():
            raise DataError(f"{f}: image not found")
        with opened_image(f) as image:
            image.verify()
        with opened_image(f) as image:
            image.load()


def _place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def write_folder(out: Path, source: str, num_folds: int) -> None:
    """Check the images of `source` (module docstring), then place them and the manifest under `out`."""
    import pandas as pd

    if not source:
        raise DataError("data.source: empty (-S data.source=<a folder of class folders, or a CSV path,label>)")
    root = Path(source)
    if not root.exists():
        raise DataError(f"data.source: {root}: not found")
    files, names = _from_csv(root) if root.is_file() else _from_folder(root)
    classes, labels, counts = np.unique(names, return_inverse=True, return_counts=True)
    if (counts < 2).any():
        small = int(np.flatnonzero(counts < 2)[0])
        raise DataError(f"class {str(classes[small])!r}: {counts[small]} image (every class needs at least 2)")
    paths = [f"images/{label:05d}/{i:06d}{f.suffix.lower()}" for i, (f, label) in enumerate(zip(files, labels))]
    with tqdm(total=2 * len(files), desc="checking, then copying images", unit="img", disable=None) as bar:
        _check_readable(files, bar)  # every image before the first is copied
        manifest = build_manifest(paths, labels, num_folds)
        for f, p in zip(files, paths):
            _place(f, out / p)
            bar.update()
    manifest.to_csv(out / MANIFEST_NAME, index=False)
    pd.DataFrame({"label": range(len(classes)), "name": classes}).to_csv(out / "classes.csv", index=False)
    log.info(
        "folder %s: %d images, %d classes (%d train / %d test)",
        root,
        len(files),
        len(classes),
        (manifest.split == "train").sum(),
        (manifest.split == "test").sum(),
    )


def prepare(out: Path, data, folds: int, seed: int) -> None:
    write_folder(out, data.source, folds)


register_dataset(Dataset("folder", prepare, "your own images: `{data.source}`"))
