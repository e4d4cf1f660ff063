"""The ANML UCI / LibSVM data sets (Table 1): offline ones from scikit-learn, the rest downloaded.

``load_dataset(name, cache)`` returns (features, labels). Iris and Wine ship with scikit-learn, and so do Breast
Cancer (Wisconsin diagnostic) and Digits (UCI optical digits, 8 x 8), which are not in Table 1. Glass, Vehicle and
Letter come from the Debian package r-cran-mlbench (GPL-2; R copies of the UCI files, the same rows and attributes
as Table 1 lists), fetched from Debian's registry with ``apt-get download`` (no other host) and verified against its
recorded SHA-256; on a machine without apt-get, put the .deb file in the cache folder. The others are downloaded
from their official UCI / LibSVM locations into ``cache`` (written under a temporary name, checked, then renamed by
pipeline/infra/download.py; a checksum mismatch deletes the download and stops with the file named). Checksums: the
project records none yet, because the development machines have no network; the first download prints each file's
SHA-256 for the ``SOURCES`` table, and a file whose sum is recorded is verified on every use. Each parser reads the
file format of its source and is tested on files the tests write.
"""

from __future__ import annotations

import bz2
import io
import logging
import shutil
import subprocess
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.infra.download import download, fetch_with_client
from pipeline.infra.errors import PipelineError

log = logging.getLogger(__name__)
UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass"


class DatasetError(PipelineError, ValueError):
    """A data set cannot be read or downloaded; the message names the file."""


@dataclass
class Source:
    """Files to download (url, sha256 or None) and the parser that turns their bytes into (x, y)."""

    files: list[tuple[str, str | None]]
    parse: Callable[[list[bytes]], tuple[np.ndarray, np.ndarray]]


def _rows(data: bytes, sep: str | None = None, skip: int = 0) -> list[list[str]]:
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()[skip:]]
    return [line.split(sep) if sep else line.split() for line in lines if line]


def _numeric(rows: list[list[str]], name: str) -> np.ndarray:
    try:
        return np.array(rows, dtype=np.float64)
    except ValueError as err:
        raise DatasetError(f"{name}: non-numeric feature value ({str(err).split(': ')[-1]})") from err


def _table(data: bytes, name: str, label: int, drop: tuple[int, ...] = (), sep=None):
    """Whitespace or `sep` separated rows; column `label` is the class, columns in `drop` are ignored."""
    rows = _rows(data, sep)
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise DatasetError(f"{name}: rows of different lengths")
    label = label % width
    keep = [c for c in range(width) if c != label and c % width not in {d % width for d in drop}]
    return _numeric([[r[c] for c in keep] for r in rows], name), np.array([r[label] for r in rows])


def parse_tables(name: str, label: int, drop: tuple[int, ...] = (), sep=None):
    """A parser of one or more files of the same table layout (see _table), stacked in file order."""

    def parse(files):
        parts = [_table(f, name, label, drop, sep) for f in files]
        return np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    return parse


def parse_german(files):
    """german.data: 20 attributes, categorical ones coded 'A<attribute><level>': the level becomes the value."""
    rows = _rows(files[0])
    feats = [[c[len(f"A{i + 1}") :] if c.startswith(f"A{i + 1}") else c for i, c in enumerate(r[:-1])] for r in rows]
    return _numeric(feats, "german.data"), np.array([r[-1] for r in rows])


def parse_flare(files):
    """flare.data1: header line; modified Zurich class (the label, 6 values) + 12 attributes, the
    two other letter-coded attributes mapped to their rank in the alphabet."""
    rows = _rows(files[0], skip=1)
    feats = [[str(ord(c) - ord("A")) if c.isalpha() else c for c in r[1:]] for r in rows]
    return _numeric(feats, "flare.data1"), np.array([r[0] for r in rows])


def parse_libsvm(name, dims):
    """LibSVM sparse format, bz2-compressed: 'label index:value ...' with 1-based indices."""

    def parse(files):
        xs, ys = [], []
        for data in files:
            for row in _rows(bz2.decompress(data)):
                x = np.zeros(dims)
                for item in row[1:]:
                    i, v = item.split(":")
                    x[int(i) - 1] = float(v)
                xs.append(x)
                ys.append(row[0])
        return np.array(xs), np.array(ys)

    return parse


def parse_auto_mpg(files):
    """auto-mpg.data -> "cars": the 392 cars with horsepower, label = mpg >= 23 (about the median),
    features = cylinders, displacement, horsepower, weight, acceleration, model year, origin.
    Choice: the paper's Table 1 lists 392 x 8 without saying how the two classes are formed."""
    rows = [r for r in _rows(files[0]) if "?" not in r[:8]]
    values = _numeric([r[:8] for r in rows], "auto-mpg.data")
    return values[:, 1:], np.where(values[:, 0] >= 23, "high_mpg", "low_mpg")


def parse_coil20(files):
    """coil-20-proc.zip: 1,440 grey 128 x 128 images obj<k>__<i>.png, downsampled to 32 x 32 = 1,024 features."""
    from PIL import Image

    xs, ys = [], []
    with zipfile.ZipFile(io.BytesIO(files[0])) as archive:
        for member in sorted(n for n in archive.namelist() if n.endswith(".png")):
            stem = Path(member).name
            image = Image.open(io.BytesIO(archive.read(member))).convert("L").resize((32, 32))
            xs.append(np.asarray(image, dtype=np.float64).ravel())
            ys.append(stem.split("__")[0])
    return np.array(xs), np.array(ys)


# layouts: ecoli = sequence name, features, class; monk = class, attributes, id; the others: features, then class
SOURCES: dict[str, Source] = {
    "australian": Source(
        [(f"{UCI}/statlog/australian/australian.dat", None)], parse_tables("australian.dat", label=-1)
    ),
    "cars": Source([(f"{UCI}/auto-mpg/auto-mpg.data", None)], parse_auto_mpg),
    "ecoli": Source([(f"{UCI}/ecoli/ecoli.data", None)], parse_tables("ecoli.data", label=-1, drop=(0,))),
    "german": Source([(f"{UCI}/statlog/german/german.data", None)], parse_german),
    "isolet": Source([(f"{UCI}/isolet/isolet5.data.Z", None)], parse_tables("isolet5.data", label=-1, sep=",")),
    "monk1": Source([(f"{UCI}/monks-problems/monks-1.test", None)], parse_tables("monks-1.test", label=0, drop=(-1,))),
    "solar": Source([(f"{UCI}/solar-flare/flare.data1", None)], parse_flare),
    "pendigits": Source(
        [(f"{UCI}/pendigits/pendigits.tra", None), (f"{UCI}/pendigits/pendigits.tes", None)],
        parse_tables("pendigits", label=-1, sep=","),
    ),
    "usps": Source([(f"{LIBSVM}/usps.bz2", None), (f"{LIBSVM}/usps.t.bz2", None)], parse_libsvm("usps", 256)),
    "coil20": Source(
        [("https://www.cs.columbia.edu/CAVE/databases/SLAM_coil-20_coil-100/coil-20/coil-20-proc.zip", None)],
        parse_coil20,
    ),
}
SKLEARN = ("iris", "wine", "breast_cancer", "digits")


@dataclass
class DebianPackage:
    """A Debian package (name, version, architecture) whose .deb has this SHA-256."""

    name: str
    version: str
    arch: str
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.name}_{self.version}_{self.arch}.deb"


MLBENCH = DebianPackage(
    "r-cran-mlbench", "2.1-3-1", "amd64", "2f1127f7b5e7d08703b13b52ef1976a0c355a7660d6ac575e29b87b13921bc06"
)
MLBENCH_DATA = "./usr/lib/R/site-library/mlbench/data"
# data set -> the R data frame of mlbench holding it (features, and one factor column: the class)
MLBENCH_SETS = {"glass": "Glass", "vehicle": "Vehicle", "letter": "LetterRecognition"}
DATASETS = SKLEARN + tuple(MLBENCH_SETS) + tuple(SOURCES)


def fetch_debian(package: DebianPackage, cache: Path) -> Path:
    """The package's .deb in `cache`: fetched with ``apt-get download`` when missing, checked against its SHA-256
    (a mismatch deletes it and stops with the file named)."""
    return fetch_with_client(
        Path(cache) / package.filename,
        ["apt-get", "download", f"{package.name}:{package.arch}={package.version}"],
        f"sha256:{package.sha256}",
        f"apt's package lists come from `apt-get update`; or put {package.filename} into {cache}",
    )


def deb_member(deb: Path, member: str) -> bytes:
    """One file of a .deb's data archive (dpkg-deb --fsys-tarfile)."""
    if shutil.which("dpkg-deb") is None:
        raise DatasetError(f"{deb}: dpkg-deb is needed to read it")
    done = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True)
    if done.returncode:
        raise DatasetError(f"{deb}: not a readable .deb ({done.stderr.decode().strip()})")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        try:
            return archive.extractfile(member).read()
        except KeyError:
            raise DatasetError(f"{deb}: has no {member}") from None


def parse_rda(data: bytes, frame: str) -> tuple[np.ndarray, np.ndarray]:
    """An R data file holding data frame `frame`: its numeric columns are the features, its one factor the class."""
    import warnings

    import rdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Unknown encoding. Assumed ASCII." (old R files)
        frames = rdata.read_rda(io.BytesIO(data))
    if frame not in frames:
        raise DatasetError(f"{frame}.rda: no data frame {frame!r} (found {', '.join(frames)})")
    df = frames[frame]
    labels = [c for c in df.columns if df[c].dtype == "category"]
    if len(labels) != 1:
        raise DatasetError(f"{frame}.rda: expected one factor column (the class), found {len(labels)}")
    return _numeric(df.drop(columns=labels).to_numpy(), f"{frame}.rda"), df[labels[0]].astype(str).to_numpy()


def fetch(url: str, expected: str | None, cache: Path) -> Path:
    """The file at `url` in `cache`, downloaded if missing (resumed after a cut), verified against `expected`."""
    return download(url, Path(cache) / url.rsplit("/", 1)[-1], expected)


def _read(path: Path) -> bytes:
    """A file's bytes; Unix-compress (.Z) files through `gzip -dc`, which reads that format."""
    if path.suffix != ".Z":
        return path.read_bytes()
    done = subprocess.run(["gzip", "-dc", str(path)], capture_output=True)
    if done.returncode:
        raise DatasetError(f"{path}: cannot decompress ({done.stderr.decode().strip()})")
    return done.stdout


def load_dataset(name: str, cache: Path) -> tuple[np.ndarray, np.ndarray]:
    """(features, integer labels 0..C-1) of data set `name`."""
    if name in SKLEARN:
        import sklearn.datasets

        x, y = getattr(sklearn.datasets, f"load_{name}")(return_X_y=True)
    elif name in MLBENCH_SETS:
        frame = MLBENCH_SETS[name]
        x, y = parse_rda(deb_member(fetch_debian(MLBENCH, Path(cache)), f"{MLBENCH_DATA}/{frame}.rda"), frame)
    elif name in SOURCES:
        source = SOURCES[name]
        x, y = source.parse([_read(fetch(url, sha, Path(cache))) for url, sha in source.files])
    else:
        raise DatasetError(f"unknown data set {name!r} (valid: {', '.join(DATASETS)})")
    classes, y = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise DatasetError(f"{name}: a single class ({classes[0]!r}); metric learning needs two or more")
    if not np.isfinite(x).all():
        raise DatasetError(f"{name}: non-finite feature values")
    return x.astype(np.float64), y
