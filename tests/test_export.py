"""Exported models (pipeline/models/export.py, stage export): one file, loaded with torch alone, the same embeddings
as the network it came from, its preprocessing inside; the best fold x seed model of a run is the one exported."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from PIL import Image

from pipeline.models.export import best_model, export_model, load_model, preprocess, rebuild, recipe
from pipeline.runs import run_setup
from pipeline.training.experiment import train_fold

CPU = torch.device("cpu")


def test_an_exported_run_embeds_images_as_the_pipeline_does_and_loads_with_torch_alone(
    tiny_params, tiny_data, tmp_path
):
    manifest, features = tiny_data
    result = train_fold(run_setup(tiny_params, "ms"), 0, manifest, features, CPU)
    weights = tmp_path / "model.pt"
    torch.save(result.model.state_dict(), weights)
    model = rebuild(run_setup(tiny_params, "ms"), weights, str(tmp_path))
    rows = manifest.rows("test")[:10]
    size = np.asarray(Image.open(manifest.image_path(int(rows[0])))).shape[:2]  # pixels: the image is the input
    about = recipe(tiny_params.backbone, "white", size, run="ms", model="fold-0-seed-0", best_val_map_at_r=0.5)
    batch = torch.stack([preprocess(about)(Image.open(manifest.image_path(int(r)))) for r in rows])
    assert torch.equal(batch.flatten(1), torch.from_numpy(features.features[rows]))  # the embed stage's features
    export_model(model, batch, about, tmp_path / "ms.pt2")
    loaded, recorded = load_model(tmp_path / "ms.pt2")
    assert recorded == json.loads(json.dumps(about)) and recorded["preprocessing"]["mode"].startswith("pixels")
    with torch.no_grad():
        assert torch.equal(loaded(batch), model(batch))  # the same network, bit for bit
        assert torch.equal(loaded(batch[:3]), model(batch[:3]))  # any batch size
    assert np.array_equal(model(batch).detach().numpy(), result.model.eval()(batch).detach().numpy())
    code = (  # a process that imports nothing of this package: torch alone
        "import json, sys, torch; extra = {'dml.json': ''}; "
        "p = torch.export.load(sys.argv[1], extra_files=extra); x = torch.load(sys.argv[2]); "
        "assert 'pipeline' not in sys.modules; print(json.loads(extra['dml.json'])['run'], tuple(p.module()(x).shape))"
    )
    torch.save(batch, tmp_path / "batch.pt")
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "ms.pt2"), str(tmp_path / "batch.pt")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0 and done.stdout.split() == ["ms", "(10,", f"{tiny_params.train.embedding_dim})"], (
        done.stderr
    )
    # any size and colour mode: the pixels model's recipe resizes (the README's `dml embed` on a 128 px PNG)
    rng = np.random.default_rng(0)
    others = [
        Image.fromarray(rng.integers(0, 256, (128, 128, 4), dtype=np.uint8), "RGBA"),
        Image.fromarray(rng.integers(0, 256, (40, 90, 3), dtype=np.uint8), "RGB"),
        Image.fromarray(rng.integers(0, 256, (7, 5), dtype=np.uint8), "L"),
    ]
    inputs = torch.stack([preprocess(recorded)(image) for image in others])
    assert inputs.shape == (3, *batch.shape[1:])
    with torch.no_grad():
        assert loaded(inputs).shape == (3, tiny_params.train.embedding_dim)


def test_the_best_model_is_the_best_validation_map_at_r_first_of_equals(tmp_path):
    for name, value in (("fold-0-seed-0", 0.5), ("fold-1-seed-0", 0.7), ("fold-2-seed-0", 0.7)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps({"best_val_map_at_r": value}))
    assert best_model(tmp_path, ["fold-0-seed-0", "fold-1-seed-0", "fold-2-seed-0"])[0] == "fold-1-seed-0"


def test_an_export_holds_no_path_of_the_checkout_so_the_same_model_gives_the_same_bytes(tmp_path):
    """torch.export records each node's source file; left in, a clone elsewhere would write other bytes."""
    import zipfile
    from pathlib import Path

    import pipeline

    checkout = str(Path(pipeline.__file__).resolve().parent.parent)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    written = []
    for where in ("a", "b"):
        (tmp_path / where).mkdir()
        export_model(model, torch.zeros(2, 4), {"run": "x"}, tmp_path / where / "m.pt2")
        written.append((tmp_path / where / "m.pt2").read_bytes())
    assert written[0] == written[1]
    with zipfile.ZipFile(tmp_path / "a" / "m.pt2") as archive:
        assert not any(checkout.encode() in archive.read(name) for name in archive.namelist())


def test_the_command_line_reads_class_folders_as_the_folder_data_set_does(tmp_path):
    """A folder of class folders: each image's class is its first folder (nested ones included); a folder that holds
    images itself is one class; a lone file: its own folder."""
    from pipeline.cli import UsageError, image_files

    for name in ("root/a/1.png", "root/a/deep/2.png", "root/b/3.jpg", "root/b/notes.txt", "c/4.png", "c/sub/5.png"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    files, classes = image_files([str(tmp_path / "root"), str(tmp_path / "c"), str(tmp_path / "root/b/3.jpg")])
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "root/a/1.png",
        "root/a/deep/2.png",
        "root/b/3.jpg",
        "c/4.png",
        "c/sub/5.png",
        "root/b/3.jpg",
    ]
    assert classes == ["a", "a", "b", "c", "c", "b"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no image files in .*empty"):
        image_files([str(tmp_path / "empty")])
    with pytest.raises(UsageError, match="missing: not found"):
        image_files([str(tmp_path / "missing")])


def test_search_refuses_a_k_larger_than_the_gallery_before_embedding_anything(tmp_path, monkeypatch, capsys):
    """`dml search -k 5` on a gallery of 3 images: one line and exit code 2, and no image embedded (the gallery's
    size is known from its files)."""
    from pipeline import cli

    for name in ("g/a/1.png", "g/a/2.png", "g/b/3.png", "q/a/4.png"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setattr("pipeline.models.export.load_model", lambda path: (None, {"run": "ms", "model": "m"}))

    def no_embedding(*args, **kw):
        raise AssertionError("embedded before the check")

    monkeypatch.setattr(cli, "embed_images", no_embedding)
    with pytest.raises(SystemExit) as stop:
        cli.main(["search", "m.pt2", "--gallery", str(tmp_path / "g"), "--queries", str(tmp_path / "q"), "-k", "5"])
    assert stop.value.code == 2 and capsys.readouterr().err.strip() == "error: -k 5: the gallery holds 3 images"


def test_the_search_picture_counts_its_misses_in_words():
    from pipeline.cli import misses_first

    assert [misses_first(n) for n in (0, 1, 2)] == ["no miss", "the miss first", "the 2 misses first"]


def test_a_recipe_resizes_any_image_to_the_models_input_and_square_images_as_the_pipeline_does():
    """An exported program takes its traced input size only; with resize 0 (the emoji default) the recipe resizes
    every image to it, which for a square image is exactly the pipeline's shorter-side resize."""
    from pipeline.config import BackboneConfig
    from pipeline.models.transforms import eval_transform

    cfg = BackboneConfig(name="efficientnet_lite0", input_size=32, resize=0)
    about = recipe(cfg, "white", (32, 32), run="ms")
    rng = np.random.default_rng(1)
    square = Image.fromarray(rng.integers(0, 256, (80, 80, 3), dtype=np.uint8))
    assert torch.equal(preprocess(about)(square), eval_transform(cfg, "white")(square))
    for shape in ((50, 90, 3), (90, 40, 4), (20, 20)):
        image = Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8))
        assert preprocess(about)(image).shape == (3, 32, 32)
    assert eval_transform(cfg, "white")(Image.fromarray(rng.integers(0, 256, (50, 90, 3), dtype=np.uint8))).shape == (
        3,
        32,
        57,
    )  # the pipeline keeps the aspect (digit pairs in finetune mode)
    crop = BackboneConfig(name="efficientnet_lite0", input_size=32, resize=40)
    assert preprocess(recipe(crop, "white", (32, 32)))(square).shape == (3, 32, 32)
