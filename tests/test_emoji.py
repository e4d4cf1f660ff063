"""pipeline/datasets/emoji.py: name matching, rendering, and the prepared data set, on npm-style tarballs the tests write."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from pipeline.data.manifest import DataError, read_manifest
from pipeline.datasets import emoji
from pipeline.infra.download import DownloadError

SQUARE = '<rect x="0" y="0" width="8" height="16" fill="#ff0000"/>'  # left half of a 16 x 16 icon


def test_named_icons_plain_aliases_skin_tones_and_numbered_variants():
    icon_set = {
        "icons": {
            "dog": {"body": ""},
            "cat": {"body": ""},
            "waving-hand-light-skin-tone": {"body": ""},
            "baby-2": {"body": ""},
            "baby-1": {"body": ""},
            "keycap-10": {"body": ""},
        },
        "aliases": {
            "puppy": {"parent": "dog"},
            "left-cat": {"parent": "cat", "hFlip": True},
            "ghost": {"parent": "missing"},
        },
    }
    assert emoji.named_icons(icon_set) == {
        "dog": "dog",
        "cat": "cat",
        "baby-2": "baby-2",
        "baby-1": "baby-1",
        "keycap-10": "keycap-10",
        "puppy": "dog",
    }
    numbered = emoji.named_icons(icon_set, numbered_variants=True)
    assert numbered["baby"] == "baby-1" and "baby-1" not in numbered and numbered["keycap"] == "keycap-10"


def test_select_classes_counts_sets():
    sets = {"a": {"dog": "dog", "cat": "cat"}, "b": {"dog": "d"}, "c": {"dog": "x", "cat": "y", "owl": "z"}}
    assert emoji.select_classes(sets, 2) == ["cat", "dog"]
    assert emoji.select_classes(sets, 3) == ["dog"]


def test_render_draws_the_icon_over_white_at_the_requested_size():
    icon_set = {"width": 16, "height": 16, "icons": {"half": {"body": SQUARE}}}
    image = np.asarray(emoji.render_svg(emoji.icon_svg(icon_set, "half", 32), 32))
    assert image.shape == (32, 32, 3)
    assert (image[:, :14] == [255, 0, 0]).all()  # drawn: the left half, scaled 2x
    assert (image[:, 18:] == 255).all()  # transparent: white


def _tarball(icons: dict, aliases: dict | None = None) -> bytes:
    data = json.dumps({"prefix": "x", "width": 16, "height": 16, "icons": icons, "aliases": aliases or {}}).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        info = tarfile.TarInfo("package/icons.json")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def three_sets(tmp_path, monkeypatch):
    """Three emoji sets as npm tarballs in a source folder, registered with their SHA-256: 12 classes in all three,
    one in two sets (by an alias in one), one in one."""
    colours = [f"#{20 * i:02x}{255 - 20 * i:02x}{40:02x}" for i in range(12)]
    shared = {
        f"emoji-{i:02d}": {"body": f'<circle cx="8" cy="8" r="{2 + i % 6}" fill="{c}"/>'} for i, c in enumerate(colours)
    }
    contents = {
        "noto": _tarball({**shared, "only-two": {"body": SQUARE}, "lonely": {"body": SQUARE}}),
        "twemoji": _tarball(
            {k: v for k, v in shared.items() if k != "emoji-03"},
            {"emoji-03": {"parent": "emoji-04"}, "only-two": {"parent": "emoji-00"}},
        ),
        "openmoji": _tarball({**shared, "emoji-05-medium-skin-tone": {"body": SQUARE}}),
    }
    source = tmp_path / "source"
    source.mkdir()
    specs = {}
    for name, data in contents.items():
        spec = emoji.EmojiSet(name, "1.0.0", hashlib.sha256(data).hexdigest(), "MIT")
        (source / spec.filename).write_bytes(data)
        specs[name] = spec
    monkeypatch.setattr(emoji, "EMOJI_SETS", specs)
    return source


def test_prepared_emoji_data_set(three_sets, tmp_path):
    out = tmp_path / "prepared"
    out.mkdir()
    emoji.write_emoji(out, ["noto", "twemoji", "openmoji"], 2, 24, 2, 0, tmp_path / "cache", str(three_sets))
    manifest = read_manifest(out)
    classes = pd.read_csv(out / "classes.csv")
    assert len(classes) == 13 and "lonely" not in set(classes.name)  # 12 shared + only-two (noto, twemoji by alias)
    assert classes.set_index("name").loc["only-two", "sets"] == "noto twemoji"
    table = manifest.table
    assert len(table) == 12 * 3 + 2
    assert (table.groupby("label").size() >= 2).all()
    train, test = set(table.label[table.split == "train"]), set(table.label[table.split == "test"])
    assert not train & test and len(train) == 6 and len(test) == 7
    assert set(table.fold[table.split == "train"]) == {0, 1}
    first = np.asarray(Image.open(manifest.image_path(0)))
    assert first.shape == (24, 24, 3)
    again = tmp_path / "again"
    again.mkdir()
    emoji.write_emoji(again, ["noto", "twemoji", "openmoji"], 2, 24, 2, 0, tmp_path / "cache", str(three_sets))
    assert (out / "manifest.csv").read_bytes() == (again / "manifest.csv").read_bytes()  # seeded
    assert np.array_equal(first, np.asarray(Image.open(again / table.path[0])))


def test_bad_input_is_named(three_sets, tmp_path):
    out = tmp_path / "prepared"
    out.mkdir()
    with pytest.raises(DataError, match="data.emoji_sets: unknown set 'nope'"):
        emoji.write_emoji(out, ["noto", "nope"], 2, 24, 2, 0, tmp_path, str(three_sets))
    with pytest.raises(DataError, match="data.emoji_min_sets=4 exceeds the 3 sets"):
        emoji.write_emoji(out, ["noto", "twemoji", "openmoji"], 4, 24, 2, 0, tmp_path, str(three_sets))
    with pytest.raises(DataError, match="leaves 12 emoji classes, too few for 7 folds"):
        emoji.write_emoji(out, ["noto", "twemoji", "openmoji"], 3, 24, 7, 0, tmp_path, str(three_sets))
    (three_sets / emoji.EMOJI_SETS["twemoji"].filename).write_bytes(b"tampered")
    with pytest.raises(
        DownloadError, match=r"iconify-json-twemoji-1.0.0.tgz: SHA256 [0-9a-f]+ does not match the recorded"
    ):
        emoji.write_emoji(out, ["noto", "twemoji", "openmoji"], 2, 24, 2, 0, tmp_path, str(three_sets))
    with pytest.raises(DataError, match=r"not found \(data.source names a folder without @iconify-json/noto"):
        emoji.write_emoji(out, ["noto", "twemoji"], 2, 24, 2, 0, tmp_path, str(tmp_path / "empty"))


def test_dataset_emoji_composes_its_settings_and_the_stages_run(three_sets, tmp_path):
    """One choice (-S dataset=emoji) composes conf/dataset/emoji.yaml alone (not the papers' finetune protocol);
    prepare and embed then give the packaged EfficientNet-Lite0's 1280-D ImageNet features of the rendered emoji."""
    import argparse

    from pipeline.compose import composed
    from pipeline.infra.io import read_json
    from pipeline.params.root import params_from_dict
    from stages import embed, prepare
    from tests.conftest import TINY_OVERRIDES, merge

    emoji = composed(["dataset=emoji"])
    assert emoji["tune"]["trials"] == 30  # emoji's own count (conf/dataset/emoji.yaml)
    raw = merge(
        merge(emoji, TINY_OVERRIDES),
        {
            "data": {
                "emoji_sets": ["noto", "twemoji", "openmoji"],
                "emoji_min_sets": 2,
                "render_size": 32,
                "source": str(three_sets),
            },
            "backbone": {"input_size": 32},
        },
    )
    raw["experiment"]["folds"] = [0, 1]
    del raw["experiment"]["runs"]  # composed for the emoji lists, not the tiny ones
    params = params_from_dict(raw)
    assert (params.backbone.name, params.backbone.weights, params.train.mode) == (
        "efficientnet_lite0",
        "imagenet",
        "frozen",
    )
    assert params.backbone.input_size == 32 and params.tune.trials == 0  # the tiny values over the emoji ones
    prepare.main(params, argparse.Namespace(out=str(tmp_path / "prepared")))
    embed.main(params, argparse.Namespace(data=str(tmp_path / "prepared"), out=str(tmp_path / "features")))
    with np.load(tmp_path / "features" / "features.npz") as z:
        assert z["features"].shape == (38, 1280) and np.isfinite(z["features"]).all()
        assert (z["features"] >= 0).all()  # after ReLU6 and average pooling
    info = read_json(tmp_path / "features" / "info.json")
    assert info["description"].startswith("efficientnet_lite0 (ImageNet weights, avg pooling, 32 px input)")


def test_npm_pack_keeps_its_cache_in_the_projects_cache_folder(tmp_path, monkeypatch):
    """A set missing from the download folder is fetched with `npm pack`, whose own cache goes into the project's
    cache folder (pipeline/infra/userdirs.py), not into a $HOME that may be missing or read-only."""
    data = _tarball({"emoji-00": {"body": SQUARE}})
    spec = emoji.EmojiSet("noto", "1.0.0", hashlib.sha256(data).hexdigest(), "MIT")
    bin_dir, payload = tmp_path / "bin", tmp_path / "payload.tgz"
    bin_dir.mkdir()
    payload.write_bytes(data)
    npm = bin_dir / "npm"  # a stand-in for npm: logs its arguments, writes the tarball into its working folder
    npm.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/args\ncp {payload} {spec.filename}\n')
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("DML_CACHE_DIR", str(tmp_path / "dml-cache"))
    path = emoji.fetch_emoji_set(spec, tmp_path / "downloads")
    assert path.read_bytes() == data
    args = (tmp_path / "args").read_text().split()
    assert args[:4] == ["pack", "--silent", "--cache", str(tmp_path / "dml-cache" / "npm")]
