"""Finetune mode's training augmentation with the per-pixel work on the training device (``train.augment_on:
device``, the default).

A loader process draws each image's random numbers exactly as ``train_transform`` draws them (the same torch calls in
the same order: RandomResizedCrop's box, then the flip; or the shift's offsets, then the flip) and hands over, as
uint8, only the pixels the crop needs, copied out of the decode-once store (pipeline/data/pixels.py). The device then
resizes each crop, shifts, flips, scales to [0, 1] and normalises, as ``train_transform`` does in that order.
What changes against the PIL path: the crops, flips and shifts are the same; a resize runs in torch (bilinear with
antialiasing on float pixels, torchvision's tensor resize) instead of PIL (bilinear, rounded to uint8), which moves a
pixel by about one intensity level. An image that needs no resize (the emoji default's 128-px renders at
``input_size`` 128) gets the same input, bit for bit (tests/test_device_augment.py).
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from pipeline.config import BackboneConfig
from pipeline.data.pixels import PixelStore


def resized_shape(height: int, width: int, size: int) -> tuple[int, int]:
    """The (height, width) torchvision's Resize(size) gives: the shorter side to `size`, the longer in proportion
    (truncated)."""
    if width <= height:
        return int(size * height / width), size
    return size, int(size * width / height)


def geometry_shape(cfg: BackboneConfig, height: int, width: int) -> tuple[int, int]:
    """The shape after the shift augmentation's resize (and centre crop with ``backbone.resize``)."""
    if cfg.resize:
        return cfg.input_size, cfg.input_size
    return resized_shape(height, width, cfg.input_size)


class StoredImages(Dataset):
    """Training rows as (crop's uint8 pixels h x w x C, draws [flip, top, left], label); see the module docstring."""

    def __init__(self, store: PixelStore, rows: np.ndarray, labels: np.ndarray, cfg: BackboneConfig, pad: int):
        self.store, self.rows, self.labels = store, np.asarray(rows), np.asarray(labels)
        self.cfg, self.pad = cfg, pad

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int):
        from torchvision import transforms as T

        row, cfg = int(self.rows[i]), self.cfg
        channels, height, width = self.store.size(row)
        pixels = self.store.image(row)
        top = left = 0
        if cfg.augment == "random_resized_crop":  # RandomResizedCrop.get_params: only the shape is read
            box = T.RandomResizedCrop.get_params(
                torch.zeros(1).expand(channels, height, width), tuple(cfg.crop_scale), (3 / 4, 4 / 3)
            )
            pixels = pixels[box[0] : box[0] + box[2], box[1] : box[1] + box[3]]
        elif self.pad:  # PadCrop: RandomCrop.get_params on the padded geometry's shape
            shape = geometry_shape(cfg, height, width)
            padded = torch.zeros(1).expand(channels, shape[0] + 2 * self.pad, shape[1] + 2 * self.pad)
            top, left, _, _ = T.RandomCrop.get_params(padded, shape)
        flip = bool(cfg.flip and torch.rand(1) < 0.5)  # RandomHorizontalFlip's draw
        crop = torch.from_numpy(np.array(pixels))  # height x width x channels, a copy: the map is read-only
        return crop, torch.tensor([flip, top, left]), torch.as_tensor(self.labels[i])

    @staticmethod
    def collate(items: list):
        """A batch: ((the crops' pixels in one flat uint8 tensor, their shapes B x 3, draws B x 3), labels). One
        tensor for all the pixels: one transfer from a loader process and one copy to the device, not one a crop."""
        crops, draws, labels = zip(*items)
        pixels = torch.cat([crop.reshape(-1) for crop in crops])
        shapes = torch.tensor([crop.shape for crop in crops])
        return (pixels, shapes, torch.stack(draws)), torch.stack(labels)


class DeviceAugment:
    """The device half: a batch of StoredImages crops -> the network's input batch on `device`."""

    def __init__(self, cfg: BackboneConfig, pad: int):
        self.cfg, self.pad = cfg, pad
        self.mean = torch.tensor(cfg.mean).view(1, -1, 1, 1)
        self.std = torch.tensor(cfg.std).view(1, -1, 1, 1)

    def _geometry(self, x: torch.Tensor) -> torch.Tensor:
        from torchvision.transforms import functional as F

        cfg = self.cfg
        if cfg.augment == "random_resized_crop":
            size = [cfg.input_size, cfg.input_size]
        else:
            size = list(resized_shape(*x.shape[-2:], cfg.resize or cfg.input_size))
        if list(x.shape[-2:]) != size:  # Resize of an image of the asked size returns it as it is
            x = F.resize(x, size, antialias=True)
        if cfg.augment != "random_resized_crop" and cfg.resize:
            x = F.center_crop(x, [cfg.input_size, cfg.input_size])
        return x

    def __call__(self, batch, device: torch.device) -> torch.Tensor:
        pixels, shapes, draws = batch
        shapes = shapes.tolist()
        crops = pixels.to(device, non_blocking=True).split([h * w * c for h, w, c in shapes])
        out = []
        for crop, shape, (flip, top, left) in zip(crops, shapes, draws.tolist()):
            x = self._geometry(crop.view(shape).permute(2, 0, 1).float().div(255))  # ToTensor's scaling
            if self.pad and self.cfg.augment != "random_resized_crop":  # PadCrop: zeros around, crop back
                height, width = x.shape[-2:]
                x = torch.nn.functional.pad(x, [self.pad] * 4)[:, top : top + height, left : left + width]
            out.append(x.flip(-1) if flip else x)
        x = torch.stack(out)
        if self.cfg.input_space == "bgr255":  # ToBGR255
            x = x.flip(1) * 255.0
        x = (x - self.mean.to(device)) / self.std.to(device)  # Normalize
        if device.type == "cuda":
            x = x.contiguous(memory_format=torch.channels_last)
        return x
