"""Image transforms: the deterministic one (embedding cache, validation, test) and the training one.

Every image first loses its transparency: composited over ``data.background`` (white by default;
pipeline/data/decode.py).
Evaluation: resize the shorter side to ``backbone.resize`` and centre-crop ``input_size`` (MLRC / CCP:
256 then 227); with ``resize`` 0, resize the shorter side straight to ``input_size`` (the emoji default's square
renders; the digit pairs' 2:1 images in finetune mode). ``pixels`` (the embedded default's digits): grey
intensities as they are. An exported model (pipeline/models/export.py) takes inputs of one size, so its recipe
resizes every image to that size where the geometry leaves it to the image (``pixels``, ``resize`` 0).
Training: ``random_resized_crop`` (scale ``crop_scale``, aspect 3/4-4/3, MLRC / CCP: 227 at 0.16-1)
or ``shift`` (zero padding by ``train.augment_pad`` and a random crop back), then a horizontal flip
when ``flip``. Input scaling: ``rgb`` = (x - mean) / std on [0, 1] RGB; ``bgr255`` = BGR in [0, 255] minus
the mean, std 1 (the Caffe BN-Inception weights; mean 104, 117, 128 in BGR order).
"""

from __future__ import annotations

import torch
from PIL import Image
from torch import nn

from pipeline.config import BackboneConfig
from pipeline.data.decode import without_alpha


class ConvertMode:
    """Transparency composited over `background`, then PIL mode conversion (picklable, for DataLoader workers)."""

    def __init__(self, mode: str, background: str):
        self.mode = mode
        self.background = background

    def __call__(self, image):
        return without_alpha(image, self.background).convert(self.mode)


class ResizeTo:
    """Resize to (height, width) when the image has another size (bilinear); an image of that size as it is."""

    def __init__(self, size: tuple[int, int]):
        self.size = tuple(size)

    def __call__(self, image):
        height, width = self.size
        return image if image.size == (width, height) else image.resize((width, height), Image.Resampling.BILINEAR)


class ToBGR255(nn.Module):
    """[0, 1] RGB tensor -> [0, 255] BGR tensor."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flip(0) * 255.0


class PadCrop(nn.Module):
    """Random translation by up to `pad` pixels (pad with zeros, crop back)."""

    def __init__(self, pad: int):
        super().__init__()
        self.pad = pad

    def forward(self, x):
        from torchvision.transforms import RandomCrop

        if self.pad == 0:
            return x
        return RandomCrop(x.shape[-2:], padding=self.pad)(x)


def pixel_mode(cfg: BackboneConfig) -> str:
    """The PIL mode a backbone reads its images in."""
    return "L" if cfg.channels == 1 else "RGB"


def _scaling(cfg: BackboneConfig) -> list:
    from torchvision import transforms as T

    steps = [ToBGR255()] if cfg.input_space == "bgr255" else []
    return steps + [T.Normalize(cfg.mean, cfg.std)]


def _geometry(cfg: BackboneConfig) -> list:
    from torchvision import transforms as T

    if cfg.resize:
        return [T.Resize(cfg.resize), T.CenterCrop(cfg.input_size)]
    return [T.Resize(cfg.input_size)]


def eval_transform(cfg: BackboneConfig, background: str, size: tuple[int, int] | None = None):
    """Deterministic transform used for the embedding cache, validation and test. `size`: an exported model's
    input (height, width), which every image is resized to where the geometry above leaves its size to the image
    (``pixels``; ``resize`` 0); None: the pipeline's own transform."""
    from torchvision import transforms as T

    fixed = [ResizeTo(size)] if size is not None else []
    if cfg.name == "pixels":
        return T.Compose([ConvertMode("L", background), *fixed, T.ToTensor()])
    mode = ConvertMode(pixel_mode(cfg), background)
    geometry = fixed if fixed and not cfg.resize else _geometry(cfg)
    return T.Compose([mode, *geometry, T.ToTensor(), *_scaling(cfg)])


def train_transform(cfg: BackboneConfig, pad: int, background: str):
    """The training augmentation of ``backbone.augment`` (see the module docstring)."""
    from torchvision import transforms as T

    mode = ConvertMode(pixel_mode(cfg), background)
    flip = [T.RandomHorizontalFlip()] if cfg.flip else []
    if cfg.augment == "random_resized_crop":
        crop = T.RandomResizedCrop(cfg.input_size, scale=tuple(cfg.crop_scale), ratio=(3 / 4, 4 / 3))
        return T.Compose([mode, crop, *flip, T.ToTensor(), *_scaling(cfg)])
    return T.Compose([mode, *_geometry(cfg), T.ToTensor(), PadCrop(pad), *flip, *_scaling(cfg)])
