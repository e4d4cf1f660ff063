"""Your own images (pipeline/datasets/folder.py): a folder of class folders or a CSV manifest, the MLRC split and folds,
and one line naming the file or class for bad input, with nothing written."""

import os
import re
import struct
import subprocess
import sys
import zlib

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from pipeline.data.manifest import DataError, read_manifest
from pipeline.datasets.folder import write_folder
from tests.conftest import ROOT, merge, write_params


def make_folder(root, classes: int = 8, per_class: int = 3, size=(12, 10), seed: int = 0):
    """`classes` class folders of `per_class` PNGs each (a distinct colour per class), one in a sub-folder."""
    rng = np.random.default_rng(seed)
    for c in range(classes):
        for i in range(per_class):
            where = root / f"class_{c:02d}" / ("nested" if i == 0 else "")
            where.mkdir(parents=True, exist_ok=True)
            pixels = np.clip(rng.normal(30 * c, 5, (*size[::-1], 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(where / f"img{i}.png")
    return root


def break_data_stream(png) -> None:
    """Scramble the compressed pixels of a PNG and write the chunk's checksum anew (a damaged file a viewer rejects)."""
    data = bytearray(png.read_bytes())
    at = data.find(b"IDAT")
    size = struct.unpack(">I", data[at - 4 : at])[0]
    scrambled = data[at + 4 : at + 6] + bytes(b ^ 0x5A for b in data[at + 6 : at + 4 + size])
    data[at + 4 : at + 4 + size] = scrambled
    data[at + 4 + size : at + 8 + size] = struct.pack(">I", zlib.crc32(b"IDAT" + scrambled))
    png.write_bytes(bytes(data))
    with Image.open(png) as image:
        image.verify()  # still passes the header check


def test_a_folder_of_class_folders_is_split_and_folded_like_every_data_set(tmp_path):
    source, out = make_folder(tmp_path / "images"), tmp_path / "prepared"
    out.mkdir()
    write_folder(out, str(source), 2)
    manifest = read_manifest(out)
    table = manifest.table
    assert len(table) == 24 and sorted(table.label.unique()) == list(range(8))
    assert set(table[table.label < 4].split) == {"train"} and set(table[table.label >= 4].split) == {"test"}
    assert table[table.split == "train"].groupby("label").fold.nunique().eq(1).all()  # a class in one fold
    assert sorted(table[table.split == "train"].fold.unique()) == [0, 1]
    names = pd.read_csv(out / "classes.csv")
    assert names.name.tolist() == [f"class_{c:02d}" for c in range(8)]
    first = Image.open(manifest.image_path(0))
    assert first.size == (12, 10) and (out / table.path[0]).read_bytes() == (source / "class_00/img1.png").read_bytes()


def test_a_csv_manifest_with_relative_paths(tmp_path):
    source = make_folder(tmp_path / "images", classes=4, per_class=2)
    files = sorted(source.rglob("*.png"))
    rows = pd.DataFrame(
        {
            "path": [str(f.relative_to(tmp_path)) for f in files],
            "label": [f.parts[-2] if f.parent.name != "nested" else f.parts[-3] for f in files],
        }
    )
    rows.to_csv(tmp_path / "list.csv", index=False)
    out = tmp_path / "prepared"
    out.mkdir()
    write_folder(out, str(tmp_path / "list.csv"), 1)
    assert len(read_manifest(out).table) == 8


@pytest.mark.parametrize(
    "damage,message",
    [
        (lambda src: None, None),
        (
            lambda src: (src / "class_03" / "nested" / "img0.png").unlink() or (src / "class_03" / "img1.png").unlink(),
            "class 'class_03': 1 image (every class needs at least 2)",
        ),
        (  # an empty class folder is named like a class of one image, not silently left out
            lambda src: [f.unlink() for f in (src / "class_02").rglob("*.png")],
            "class 'class_02': 0 images in ",
        ),
        (
            lambda src: (src / "class_05" / "img2.png").write_bytes(b"not a png"),
            "class_05/img2.png: not a readable image",
        ),
        (  # header and checksums intact, the pixel data not: Image.verify() passes it
            lambda src: break_data_stream(src / "class_06" / "img1.png"),
            "class_06/img1.png: not a readable image (OSError: broken data stream",
        ),
    ],
)
def test_bad_images_and_classes_are_named_and_nothing_is_written(tmp_path, damage, message):
    source = make_folder(tmp_path / "images")
    damage(source)
    out = tmp_path / "prepared"
    out.mkdir()
    if message is None:
        write_folder(out, str(source), 2)
        return
    with pytest.raises(DataError, match=re.escape(message)):
        write_folder(out, str(source), 2)
    assert list(out.iterdir()) == []


def test_missing_source_duplicate_paths_and_too_few_classes(tmp_path):
    out = tmp_path / "prepared"
    out.mkdir()
    with pytest.raises(DataError, match=r"data.source: .*nowhere: not found"):
        write_folder(out, str(tmp_path / "nowhere"), 2)
    with pytest.raises(DataError, match=r"data.source: empty"):
        write_folder(out, "", 2)
    source = make_folder(tmp_path / "images", classes=4, per_class=2)
    files = sorted(source.glob("*/img1.png"))
    pd.DataFrame({"path": [str(f) for f in [*files, files[0]]], "label": list("abcda")}).to_csv(
        tmp_path / "l.csv", index=False
    )
    with pytest.raises(DataError, match=r"l.csv: path '.*class_00/img1.png' listed twice \(lines 2 and 6\)"):
        write_folder(out, str(tmp_path / "l.csv"), 2)
    with pytest.raises(DataError, match="2 training classes cannot make 4 folds"):
        write_folder(out, str(source), 4)
    assert list(out.iterdir()) == []


def test_a_bad_folder_keeps_the_last_good_runs_folder_and_log(tmp_path, tiny_dict):
    """The prepare stage run good -> bad (an empty class) -> good, as DVC runs it (DVC_STAGE set): the bad run stops
    with the class named on the first line, leaves the good run's data/prepared and data/logs/prepare.log as they
    were and its own log in prepare.failed.log; the next good run clears that."""
    good, bad = make_folder(tmp_path / "good"), make_folder(tmp_path / "bad")
    for f in (bad / "class_04").rglob("*.png"):
        f.unlink()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DVC_STAGE": "prepare", "DVC_ROOT": str(tmp_path)}
    env.pop("DML_LOG_FILE", None)
    logs = tmp_path / "data" / "logs"

    def prepare(source):
        params = merge(tiny_dict, {"data": {"name": "folder", "source": str(source), "setting": "none"}})
        write_params(tmp_path / "params.yaml", params)
        command = [sys.executable, "-m", "stages.prepare", "--params", "params.yaml", "--out", "data/prepared"]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)

    assert prepare(good).returncode == 0
    prepared = sorted(p.relative_to(tmp_path) for p in (tmp_path / "data" / "prepared").rglob("*"))
    good_log = (logs / "prepare.log").read_text()
    assert str(good) in good_log
    failed = prepare(bad)
    assert failed.returncode == 2
    errors = [line for line in failed.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: class 'class_04': 0 images in {bad / 'class_04'} (every class needs at least 2)"]
    assert f"this run's log: {logs / 'prepare.failed.log'} (prepare.log: the last successful run's)" in failed.stderr
    assert "git checkout HEAD -- params.yaml" in failed.stderr  # no experiment in this folder: the last commit
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "data" / "prepared").rglob("*")) == prepared
    assert (logs / "prepare.log").read_text() == good_log
    assert "class_04" in (logs / "prepare.failed.log").read_text()
    assert prepare(good).returncode == 0
    assert sorted(p.name for p in logs.iterdir()) == [".gitignore", "prepare.log"]


def test_a_prepare_that_replaces_your_folder_with_another_data_set_says_so(tmp_path, tiny_dict):
    """After a folder experiment, a run composed without `-S dataset=folder` (the digit default) replaces
    data/prepared: the stage names what the folder held and what replaces it; the same data set again says nothing."""
    source = make_folder(tmp_path / "glyphs")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def prepare(params):
        write_params(tmp_path / "params.yaml", params)
        command = [sys.executable, "-m", "stages.prepare", "--params", "params.yaml", "--out", "data/prepared"]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stderr

    folder = merge(tiny_dict, {"data": {"name": "folder", "source": str(source), "setting": "none"}})
    assert "replaces it" not in prepare(folder)
    assert "replaces it" not in prepare(folder)
    switched = [line for line in prepare(tiny_dict).splitlines() if "replaces it" in line]
    assert len(switched) == 1
    assert (
        f"data/prepared held folder from {source}; params.yaml asks for digit_pairs, which replaces it" in switched[0]
    )
    assert "-S dataset=folder" in switched[0]
