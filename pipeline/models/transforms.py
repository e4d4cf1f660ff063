"""Image transforms: the deterministic one (embedding cache, validation, test) and the training one.

Evaluation: resize the shorter side to ``backbone.resize`` and centre-crop ``input_size`` (MLRC / CCP:
256 then 227); with ``resize`` 0, resize straight to ``input_size`` (the embedded default's digits).
Training: ``random_resized_crop`` (scale ``crop_scale``, aspect 3/4-4/3, MLRC / CCP: 227 at 0.16-1)
or ``shift`` (zero padding by ``train.augment_pad`` and a random crop back), then a horizontal flip
when ``flip``. Input scaling: ``rgb`` = (x - mean) / std on [0, 1] RGB; ``bgr255`` = BGR in [0, 255] minus
the mean, std 1 (the Caffe BN-Inception weights; mean 104, 117, 128 in BGR order).
"""

from __future__ import annotations

import torch
from torch import nn

from pipeline.config import BackboneConfig


class ConvertMode:
    """PIL mode conversion (picklable, so DataLoader workers can use it)."""

    def __init__(self, mode: str):
        self.mode = mode

    def __call__(self, image):
        return image.convert(self.mode)


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


def _scaling(cfg: BackboneConfig) -> list:
    from torchvision import transforms as T

    steps = [ToBGR255()] if cfg.input_space == "bgr255" else []
    return steps + [T.Normalize(cfg.mean, cfg.std)]


def _geometry(cfg: BackboneConfig) -> list:
    from torchvision import transforms as T

    if cfg.resize:
        return [T.Resize(cfg.resize), T.CenterCrop(cfg.input_size)]
    return [T.Resize(cfg.input_size)]


def eval_transform(cfg: BackboneConfig):
    """Deterministic transform used for the embedding cache, validation and test."""
    from torchvision import transforms as T

    if cfg.name == "pixels":
        return T.Compose([T.Grayscale(1), T.ToTensor()])
    mode = ConvertMode("L" if cfg.channels == 1 else "RGB")
    return T.Compose([mode, *_geometry(cfg), T.ToTensor(), *_scaling(cfg)])


def train_transform(cfg: BackboneConfig, pad: int):
    """The training augmentation of ``backbone.augment`` (see the module docstring)."""
    from torchvision import transforms as T

    mode = ConvertMode("L" if cfg.channels == 1 else "RGB")
    flip = [T.RandomHorizontalFlip()] if cfg.flip else []
    if cfg.augment == "random_resized_crop":
        crop = T.RandomResizedCrop(cfg.input_size, scale=tuple(cfg.crop_scale), ratio=(3 / 4, 4 / 3))
        return T.Compose([mode, crop, *flip, T.ToTensor(), *_scaling(cfg)])
    return T.Compose([mode, *_geometry(cfg), T.ToTensor(), PadCrop(pad), *flip, *_scaling(cfg)])
