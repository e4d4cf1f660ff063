"""Finetune mode's device-side augmentation (pipeline/models/device_augment.py) against the PIL transforms it
replaces, and the decode-once pixel store it reads (pipeline/data/pixels.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from PIL import Image

from pipeline.data.decode import without_alpha
from pipeline.data.manifest import DataError, build_manifest, read_manifest
from pipeline.data.pixels import PixelStore, write_pixel_store
from pipeline.models.device_augment import DeviceAugment, StoredImages, resized_shape
from pipeline.models.transforms import pixel_mode, train_transform
from pipeline.params.root import params_from_dict
from pipeline.runs import run_setup
from pipeline.training.experiment import train_fold
from tests.conftest import merge

CPU = torch.device("cpu")


def images_set(root, sizes, mode="RGB", transparent=False):
    """One image per (width, height) in `sizes` (two classes alternating), random pixels, and its store."""
    rng = np.random.default_rng(0)
    paths = []
    for i, (w, h) in enumerate(sizes):
        pixels = rng.integers(0, 256, (h, w, 4 if transparent else 3), dtype=np.uint8)
        paths.append(f"img/{i:03d}.png")
        (root / "img").mkdir(exist_ok=True)
        Image.fromarray(pixels, "RGBA" if transparent else "RGB").save(root / paths[-1])
    labels = np.arange(len(sizes)) % 2
    build_manifest(paths, labels, 2, np.array(["train"] * len(paths))).to_csv(root / "manifest.csv", index=False)
    manifest = read_manifest(root)
    (root / "store").mkdir()
    write_pixel_store(manifest, mode, "white", root / "store")
    return manifest, PixelStore(root / "store")


def both_paths(manifest, store, cfg, pad, seed=3):
    """Each image through train_transform (PIL) and through StoredImages + DeviceAugment, from the same seed."""
    rows = np.arange(len(manifest.table))
    transform = train_transform(cfg, pad, "white")
    torch.manual_seed(seed)
    pil = []
    for row in rows:
        with Image.open(manifest.image_path(row)) as image:
            pil.append(transform(image))
    torch.manual_seed(seed)
    stored = StoredImages(store, rows, manifest.labels, cfg, pad)
    device = DeviceAugment(cfg, pad)
    ours = [device(StoredImages.collate([stored[i]])[0], CPU)[0] for i in range(len(rows))]
    return pil, ours


def test_the_store_holds_each_image_as_the_transforms_decode_it(tmp_path):
    manifest, store = images_set(tmp_path, [(5, 7), (9, 4), (6, 6), (3, 8)], transparent=True)
    for row in range(4):
        with Image.open(manifest.image_path(row)) as image:
            expected = np.asarray(without_alpha(image, "white").convert("RGB"))
        assert store.size(row) == (3, *expected.shape[:2])
        assert np.array_equal(store.image(row), expected)
    grey = tmp_path / "grey"
    grey.mkdir()
    _, store = images_set(grey, [(5, 7)] * 4, mode="L")
    assert store.image(0).shape == (7, 5, 1)
    with pytest.raises(DataError, match="no pixel store"):
        PixelStore(tmp_path / "img")


@pytest.mark.parametrize("input_space", ["rgb", "bgr255"])
def test_a_shift_without_a_resize_is_the_pil_transform_bit_for_bit(tmp_path, tiny_params, input_space):
    cfg = dataclasses.replace(
        tiny_params.backbone, name="tiny_cnn", input_size=12, augment="shift", flip=True, input_space=input_space
    )
    manifest, store = images_set(tmp_path, [(12, 12), (18, 12), (12, 20)] * 3)  # shorter side 12: no resize
    pil, ours = both_paths(manifest, store, cfg, pad=2)
    for a, b in zip(pil, ours):
        assert a.shape == b.shape and torch.equal(a, b)


@pytest.mark.parametrize("augment", ["shift", "random_resized_crop"])
def test_a_resize_draws_the_same_crops_and_moves_pixels_by_an_intensity_level(tmp_path, tiny_params, augment):
    """Smooth images (as photographs are): PIL's uint8 bilinear resize and torch's antialiased float one agree to
    about one level of 255 where the random crops and flips are the same."""
    cfg = dataclasses.replace(tiny_params.backbone, name="tiny_cnn", input_size=16, augment=augment, flip=True)
    cfg = dataclasses.replace(cfg, mean=[0.0] * 3, std=[1.0] * 3)
    rng = np.random.default_rng(1)
    (tmp_path / "img").mkdir()
    paths = []
    for i, (w, h) in enumerate([(40, 30), (31, 47), (64, 64), (23, 17)] * 2):
        small = Image.fromarray(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8))
        paths.append(f"img/{i}.png")
        small.resize((w, h), Image.Resampling.BICUBIC).save(tmp_path / paths[-1])
    build_manifest(paths, np.arange(8) % 2, 2, np.array(["train"] * 8)).to_csv(tmp_path / "manifest.csv", index=False)
    manifest = read_manifest(tmp_path)
    (tmp_path / "store").mkdir()
    write_pixel_store(manifest, "RGB", "white", tmp_path / "store")
    pil, ours = both_paths(manifest, PixelStore(tmp_path / "store"), cfg, pad=2)
    for a, b in zip(pil, ours):
        assert a.shape == b.shape
        assert (a - b).abs().mean() < 1.0 / 255 and (a - b).abs().max() < 8.0 / 255


def test_resized_shape_is_torchvisions(tiny_params):
    from torchvision.transforms import functional as F

    for h, w, size in [(30, 40, 16), (47, 31, 16), (17, 23, 9), (64, 64, 64), (375, 500, 227)]:
        assert resized_shape(h, w, size) == tuple(F.resize(torch.zeros(1, h, w), size, antialias=True).shape[-2:])


@pytest.mark.parametrize("run", ["ms", "c2_ccp"])  # CCP also embeds the (augmented) training set for its proxies
def test_finetuning_from_the_store_trains_the_same_model_as_pil(tmp_path, tiny_dict, tiny_data, run):
    """Digit pairs at their own size (no resize), shifted: the device path trains the PIL path's model exactly."""
    manifest, _ = tiny_data
    height = np.asarray(Image.open(manifest.image_path(0))).shape[0]
    overrides = {
        "backbone": {"name": "tiny_cnn", "input_size": height},
        "train": {"mode": "finetune", "max_epochs": 2, "min_delta": 0.0},
    }
    params = params_from_dict(merge(tiny_dict, overrides))
    (tmp_path / "store").mkdir()
    write_pixel_store(manifest, pixel_mode(params.backbone), "white", tmp_path / "store")
    setup = run_setup(params, run)
    loader = train_fold(setup, 0, manifest, None, CPU)
    device = train_fold(setup, 0, manifest, PixelStore(tmp_path / "store"), CPU)
    assert repr(loader.fit.history) == repr(device.fit.history)  # repr: epoch 0's loss is nan
    for key, value in loader.model.state_dict().items():
        assert torch.equal(value, device.model.state_dict()[key]), key
