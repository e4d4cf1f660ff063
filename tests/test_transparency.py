"""Transparent images (pipeline/data/decode.py): icons drawn in black on a transparent background become
distinct inputs and embeddings, over data.background, in the embed stage's path and in `dml embed` alike, and the pictures show them as the model
saw them; converted straight to RGB (what PIL does) they would all be black."""

import numpy as np
import pytest
import torch
from PIL import Image

from pipeline.config import BackboneConfig, ParamsError
from pipeline.data.decode import without_alpha
from pipeline.data.manifest import read_manifest
from pipeline.datasets.folder import write_folder
from pipeline.models.features import extract_features
from pipeline.models.transforms import eval_transform
from pipeline.params.root import params_from_dict
from pipeline.reporting.pictures import _thumbnail


def drawings(size: int = 32) -> list[Image.Image]:
    """Four black shapes on a fully transparent background whose hidden colour is black too (RGBA 0, 0, 0, 0)."""
    shapes = []
    for k in range(4):
        pixels = np.zeros((size, size, 4), dtype=np.uint8)
        if k == 0:
            pixels[8:24, 15:17, 3] = 255  # a vertical bar
        elif k == 1:
            pixels[15:17, 8:24, 3] = 255  # a horizontal bar
        elif k == 2:
            pixels[np.arange(size), np.arange(size), 3] = 255  # a diagonal
        else:
            pixels[4:12, 4:12, 3] = 255  # a square in a corner
        shapes.append(Image.fromarray(pixels, "RGBA"))
    return shapes


def distinct(rows: np.ndarray) -> bool:
    flat = rows.reshape(len(rows), -1)
    return all(not np.array_equal(flat[i], flat[j]) for i in range(len(flat)) for j in range(i))


def test_straight_conversion_blackens_drawings_and_compositing_keeps_them():
    shapes = drawings()
    straight = np.stack([np.asarray(s.convert("RGB")) for s in shapes])
    assert straight.max() == 0 and not distinct(straight)  # the bug: four identical black images
    over_white = np.stack([np.asarray(without_alpha(s, "white")) for s in shapes])
    assert distinct(over_white)
    assert over_white[0, 0, 0].tolist() == [255, 255, 255] and over_white[0, 16, 16].tolist() == [0, 0, 0]
    assert np.asarray(without_alpha(shapes[0], "#ff0000"))[0, 0].tolist() == [255, 0, 0]
    opaque = Image.new("RGB", (4, 4), (1, 2, 3))
    assert without_alpha(opaque, "white") is opaque  # nothing to composite: the image itself (same bytes as before)


def test_pictures_show_drawings_over_the_background(tmp_path):
    drawings()[0].save(tmp_path / "bar.png")
    over_white, over_grey = (_thumbnail(tmp_path / "bar.png", colour) for colour in ("white", "#808080"))
    assert over_white[0, 0].tolist() == [255, 255, 255] and over_grey[0, 0].tolist() == [128, 128, 128]
    assert over_white[16, 16].tolist() == over_grey[16, 16].tolist() == [0, 0, 0]  # the drawing itself


@pytest.mark.parametrize("mode", ["LA", "P"])
def test_grey_alpha_and_palette_transparency_are_composited_too(mode):
    shape = drawings()[0]
    image = shape.convert("LA") if mode == "LA" else shape.convert("P")
    if mode == "P":  # a palette with its transparent entry (as GIFs and small PNGs store it)
        image = Image.fromarray(np.where(np.asarray(shape)[..., 3] > 0, 1, 0).astype(np.uint8), "P")
        image.putpalette([0, 0, 0, 0, 0, 0] + [0] * 762)
        image.info["transparency"] = 0
    grey = np.asarray(without_alpha(image, "white").convert("L"))
    assert grey[0, 0] == 255 and grey[16, 16] == 0


def test_transparent_drawings_get_distinct_features_in_the_embed_path(tmp_path):
    source = tmp_path / "icons"
    for k, shape in enumerate(drawings()):
        for copy in range(2):
            (source / f"icon_{k}").mkdir(parents=True, exist_ok=True)
            shape.save(source / f"icon_{k}" / f"{copy}.png")
    out = tmp_path / "prepared"
    out.mkdir()
    write_folder(out, str(source), 1)
    manifest = read_manifest(out)
    first = manifest.table.drop_duplicates("label").index.to_numpy()  # one image of each icon
    pixels = BackboneConfig(name="pixels")
    white = extract_features(manifest, pixels, "white", torch.device("cpu")).features[first]
    black = extract_features(manifest, pixels, "black", torch.device("cpu")).features[first]
    assert distinct(white) and not distinct(black) and black.max() == 0
    torch.manual_seed(0)
    cnn = BackboneConfig(name="efficientnet_lite0", input_size=64, channels=3)
    features = extract_features(manifest, cnn, "white", torch.device("cpu")).features[first]
    assert distinct(features)
    image = Image.open(manifest.image_path(int(first[0])))
    assert eval_transform(cnn, "white")(image).shape == (3, 64, 64)


def test_a_background_that_is_no_colour_is_named(tiny_dict):
    tiny_dict["data"]["background"] = "whitish"
    with pytest.raises(ParamsError, match="data.background: 'whitish' is not a colour"):
        params_from_dict(tiny_dict)


def test_an_unreadable_file_is_one_line_naming_it_wherever_it_is_opened(tmp_path):
    """pipeline/data/decode.py opened_image: prepare, the embed stage's dataset and `dml embed` share it."""
    from pipeline.data.decode import opened_image
    from pipeline.data.manifest import DataError

    text = tmp_path / "notes.png"
    text.write_text("not an image")
    with pytest.raises(DataError, match=r"notes\.png: not a readable image \(UnidentifiedImageError: .*\); again$"):
        with opened_image(text, "; again") as image:
            image.load()
    drawings()[0].save(tmp_path / "bar.png")
    with opened_image(tmp_path / "bar.png") as image:
        assert image.size == (32, 32)
