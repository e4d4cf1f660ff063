"""Transparent images made opaque: an image with an alpha channel (RGBA, LA, a palette or colour marked
transparent) is composited over a background colour, as a viewer shows it. Converting it straight to RGB, as PIL
does, turns its transparent pixels into their stored colour, black for most drawings."""

from __future__ import annotations

from PIL import Image, ImageColor

TRANSPARENT_MODES = ("RGBA", "LA", "PA", "RGBa", "La")


def without_alpha(image: Image.Image, background: str) -> Image.Image:
    """`image` composited over the colour `background` when it has transparency; otherwise `image` itself."""
    if image.mode not in TRANSPARENT_MODES and "transparency" not in image.info:
        return image
    drawn = image.convert("RGBA")
    canvas = Image.new("RGBA", drawn.size, (*ImageColor.getrgb(background)[:3], 255))
    return Image.alpha_composite(canvas, drawn).convert("RGB")
