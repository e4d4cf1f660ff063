"""Images as the pipeline reads them: opened with one line naming the file when they cannot be read or their pixel
data does not decode (not a traceback), and made opaque: an image with an alpha channel (RGBA, LA, a palette or
colour marked transparent) is composited over a background colour, as a viewer shows it. Converting it straight to
RGB, as PIL does, turns its transparent pixels into their stored colour, black for most drawings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from PIL import Image, ImageColor, UnidentifiedImageError

from pipeline.data.manifest import DataError

TRANSPARENT_MODES = ("RGBA", "LA", "PA", "RGBa", "La")
UNREADABLE = (UnidentifiedImageError, OSError, SyntaxError, ValueError)  # what PIL raises on a bad file


@contextmanager
def opened_image(path: str | Path, hint: str = "") -> Iterator[Image.Image]:
    """PIL's image at `path` for the block; a file that is no image, or whose pixels fail to decode in the block,
    stops with ``<path>: not a readable image (<error>)<hint>``."""
    try:
        with Image.open(path) as image:
            yield image
    except UNREADABLE as err:
        raise DataError(f"{path}: not a readable image ({type(err).__name__}: {err}){hint}") from None


def without_alpha(image: Image.Image, background: str) -> Image.Image:
    """`image` composited over the colour `background` when it has transparency; otherwise `image` itself."""
    if image.mode not in TRANSPARENT_MODES and "transparency" not in image.info:
        return image
    drawn = image.convert("RGBA")
    canvas = Image.new("RGBA", drawn.size, (*ImageColor.getrgb(background)[:3], 255))
    return Image.alpha_composite(canvas, drawn).convert("RGB")
