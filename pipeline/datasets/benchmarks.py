"""The four image benchmarks of the DML papers: CUB-200-2011, Cars196, Stanford Online Products, In-shop.

``prepare_benchmark`` gets a data set's files (downloaded with resume and checksum, or from a folder or
archive the user points at with ``data.source``), extracts them into ``<out>/raw`` refusing any member
that would land outside it, reads the data set's own annotation files and writes the manifest
(pipeline/data/manifest.py) with the papers' splits:

- CUB-200-2011 (``images.txt``, ``image_class_labels.txt``): classes 1-100 train, 101-200 test;
- Cars196 (``cars_annos.mat``: ``relative_im_path``, ``class``): classes 1-98 train, 99-196 test;
- SOP (``Ebay_train.txt`` / ``Ebay_test.txt``): the official files (11318 / 11316 classes);
- In-shop (``list_eval_partition.txt``): train items, test items split into query and gallery images,
  evaluated query against gallery (3997 train items; 14218 queries, 12612 gallery images).

For CUB and Cars the split is the sorted classes cut in half (MLRC), which is their official split.
MLRC folds: the training classes in label order cut into ``num_folds`` contiguous blocks.

Sources and sums: CUB's URL is Caltech's; the Cars196 and SOP URLs are the ones published with the data
sets (their hosts have been unreliable: a mirror folder URL goes in ``data.mirror``, or the files in a
folder named by ``data.source``). In-shop is distributed through Google Drive only: download ``img.zip``
and ``Eval/list_eval_partition.txt`` by hand and point ``data.source`` at their folder. The MD5 sums are
the ones public DML code records (../shared/reference/ccp_supplement_hparams.md); In-shop has none
recorded, so its files' SHA-256 is logged on first use.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pipeline.data.manifest import MANIFEST_NAME, DataError, build_manifest
from pipeline.datasets import Dataset, register_dataset
from pipeline.infra.download import DownloadError, download, download_folder, safe_extract, verify

if TYPE_CHECKING:  # pandas is imported where it is used (every stage imports this module with params)
    import pandas as pd

log = logging.getLogger(__name__)
RAW = "raw"  # the extracted data set inside the prepared folder


@dataclass(frozen=True)
class RemoteFile:
    """One file of a data set as distributed. `extracts_to`: the top-level folder an archive holds
    (a source folder that already has it is used as extracted); "" for a plain file."""

    name: str
    url: str
    checksum: str | None
    extracts_to: str = ""


@dataclass(frozen=True)
class Benchmark:
    name: str
    files: tuple[RemoteFile, ...]
    # reads the extracted folder: (image paths relative to it, integer labels, official split or None)
    read: Callable[[Path], tuple[list[str], np.ndarray, np.ndarray | None]]
    paper_name: str  # its name in the papers' tables (reference/published.csv)


def _read_table(path: Path, names: list[str], skip: int = 0) -> pd.DataFrame:
    import pandas as pd

    if not path.is_file():
        raise DataError(f"{path}: annotation file not found")
    table = pd.read_csv(path, sep=r"\s+", header=None, names=names, skiprows=skip, dtype=str)
    if table.isna().any().any():
        raise DataError(f"{path}: malformed line {int(table.isna().any(axis=1).to_numpy().argmax()) + skip + 1}")
    return table


def read_cub(root: Path):
    base = root / "CUB_200_2011"
    images = _read_table(base / "images.txt", ["id", "path"])
    labels = _read_table(base / "image_class_labels.txt", ["id", "label"])
    table = images.merge(labels, on="id", how="left", validate="one_to_one")
    if table.label.isna().any():
        raise DataError(
            f"{base / 'image_class_labels.txt'}: no class for image id {table.id[table.label.isna()].iat[0]}"
        )
    return [f"CUB_200_2011/images/{p}" for p in table.path], table.label.astype(np.int64).to_numpy(), None


def read_cars(root: Path):
    from scipy.io import loadmat

    path = root / "cars_annos.mat"
    if not path.is_file():
        raise DataError(f"{path}: annotation file not found")
    try:
        annotations = loadmat(path, squeeze_me=True)["annotations"]
        paths = [str(p) for p in annotations["relative_im_path"]]
        labels = np.asarray(annotations["class"], dtype=np.int64)
    except (KeyError, ValueError) as err:
        raise DataError(f"{path}: no annotations with relative_im_path and class ({err})") from err
    return paths, labels, None


def read_sop(root: Path):
    import pandas as pd

    base = root / "Stanford_Online_Products"
    names = ["image_id", "class_id", "super_class_id", "path"]
    parts = [_read_table(base / f"Ebay_{s}.txt", names, skip=1).assign(split=s) for s in ("train", "test")]
    table = pd.concat(parts, ignore_index=True)
    return (
        [f"Stanford_Online_Products/{p}" for p in table.path],
        table.class_id.astype(np.int64).to_numpy(),
        table.split.to_numpy(),
    )


def read_inshop(root: Path):
    path = root / "list_eval_partition.txt"
    table = _read_table(path, ["image_name", "item_id", "evaluation_status"], skip=2)
    if not table.item_id.str.fullmatch(r"id_\d+").all():
        raise DataError(f"{path}: item ids must look like id_00000001")
    return list(table.image_name), table.item_id.str[3:].astype(np.int64).to_numpy(), table.evaluation_status.to_numpy()


BENCHMARKS = {
    "cub": Benchmark(
        "CUB-200-2011",
        (
            RemoteFile(
                "CUB_200_2011.tgz",
                "https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz",
                "md5:97eceeb196236b17998738112f37df78",
                "CUB_200_2011",
            ),
        ),
        read_cub,
        "CUB",
    ),
    "cars196": Benchmark(
        "Cars196",
        (
            RemoteFile(
                "car_ims.tgz",
                "https://ai.stanford.edu/~jkrause/car196/car_ims.tgz",
                "md5:d5c8f0aa497503f355e17dc7886c3f14",
                "car_ims",
            ),
            RemoteFile(
                "cars_annos.mat",
                "https://ai.stanford.edu/~jkrause/car196/cars_annos.mat",
                "md5:b407c6086d669747186bd1d764ff9dbc",
            ),
        ),
        read_cars,
        "Cars196",
    ),
    "sop": Benchmark(
        "Stanford Online Products",
        (
            RemoteFile(
                "Stanford_Online_Products.zip",
                "ftp://cs.stanford.edu/cs/cvgl/Stanford_Online_Products.zip",
                "md5:7f73d41a2f44250d4779881525aea32e",
                "Stanford_Online_Products",
            ),
        ),
        read_sop,
        "SOP",
    ),
    "inshop": Benchmark(
        "In-shop Clothes Retrieval",
        (RemoteFile("img.zip", "", None, "img"), RemoteFile("list_eval_partition.txt", "", None)),
        read_inshop,
        "In-shop",
    ),
}


def _find(folder: Path, name: str) -> Path | None:
    """`folder/name`, or the first file of that name below `folder` (e.g. In-shop's Eval/...)."""
    direct = folder / name
    if direct.exists():
        return direct
    return next(iter(sorted(folder.rglob(name))), None)


def _fetch(f: RemoteFile, data_set: str, download_dir: Path, mirror: str) -> Path:
    url = f"{mirror.rstrip('/')}/{f.name}" if mirror else f.url
    if not url:
        raise DownloadError(
            f"data.source: {data_set} has no direct download for {f.name} (it is distributed "
            f"through Google Drive); download it by hand and set data.source to its folder"
        )
    return download(url, download_dir / f.name, f.checksum)


def _place(f: RemoteFile, path: Path, raw: Path, user_file: bool) -> None:
    """Extract an archive into `raw` (checked member by member), or copy a plain file there."""
    if user_file and f.checksum:
        verify(path, f.checksum, remove=False)
    if f.extracts_to:
        tmp = raw / f".{f.name}.extract"
        safe_extract(path, tmp)
        if not (tmp / f.extracts_to).is_dir():
            raise DataError(f"{path}: the archive has no top-level folder {f.extracts_to}/")
        for entry in tmp.iterdir():
            entry.rename(raw / entry.name)
        tmp.rmdir()
    else:
        shutil.copy2(path, raw / f.name)


def gather_files(key: str, raw: Path, source: str, download_dir: Path, mirror: str) -> None:
    """Fill `raw` with data set `key`'s extracted files from `source` (a folder with the files or their
    extracted form, or a single archive), else by download into `download_dir`."""
    bench = BENCHMARKS[key]
    raw.mkdir(parents=True)
    src = Path(source) if source else None
    if src is not None and not src.exists():
        raise DataError(f"data.source: {source} does not exist")
    if src is not None and src.is_file():
        if len(bench.files) != 1:
            raise DataError(
                f"data.source: {bench.name} has {len(bench.files)} files "
                f"({', '.join(f.name for f in bench.files)}); point data.source at their folder"
            )
        _place(bench.files[0], src, raw, user_file=True)
        return
    for f in bench.files:
        if src is not None and f.extracts_to and (src / f.extracts_to).is_dir():
            log.info("%s: using the extracted %s", src, f.extracts_to)
            shutil.copytree(src / f.extracts_to, raw / f.extracts_to, symlinks=False)
            continue
        found = _find(src, f.name) if src is not None else None
        if src is not None and found is None:
            raise DataError(f"data.source: {source} has neither {f.name} nor {f.extracts_to or f.name}/")
        _place(f, found or _fetch(f, bench.name, download_dir, mirror), raw, user_file=found is not None)


def prepare_benchmark(
    key: str, out: Path, source: str, download_dir: Path, mirror: str, num_folds: int
) -> pd.DataFrame:
    """Write `out`/raw (the data set) and `out`/manifest.csv; return the manifest."""
    if key not in BENCHMARKS:
        raise DataError(f"data.name: unknown data set {key!r} (valid: digit_pairs, {', '.join(BENCHMARKS)})")
    raw = Path(out) / RAW
    gather_files(key, raw, source, Path(download_dir), mirror)
    paths, labels, split = BENCHMARKS[key].read(raw)
    missing = next((p for p in paths if not (raw / p).is_file()), None)
    if missing is not None:
        raise DataError(f"{raw / missing}: image listed in the annotations but not in the data set")
    manifest = build_manifest([f"{RAW}/{p}" for p in paths], labels, num_folds, split)
    manifest.to_csv(Path(out) / MANIFEST_NAME, index=False)
    counts = manifest.groupby("split").agg(images=("label", "size"), classes=("label", "nunique"))
    log.info(
        "%s: %s",
        BENCHMARKS[key].name,
        "; ".join(f"{s} {r.images} images / {r.classes} classes" for s, r in counts.iterrows()),
    )
    return manifest


def prepare(key: str, out: Path, data, folds: int, seed: int) -> None:
    prepare_benchmark(key, out, data.source, download_folder(data.download_dir), data.mirror, folds)


for _key, _bench in BENCHMARKS.items():
    register_dataset(
        Dataset(_key, partial(prepare, _key), f"the {_bench.paper_name} benchmark", paper_name=_bench.paper_name)
    )
