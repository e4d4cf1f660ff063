"""Feature extractors ("backbones") and the image transforms that feed them.

- ``pixels``: raw grey intensities in [0, 1], flattened. No weights, nothing to
  download: the embedded default (the report says so).
- ``tiny_cnn``: a small CNN (three conv blocks, global average + max pooling) for
  finetune mode on CPU; random initialisation or a local weights file.
- any torchvision classification model by name (``resnet50``, ``resnet18``...):
  classifier removed, weights loaded from a local file with ``weights_only=True``
  (no download here), random initialisation when ``backbone.weights`` is empty.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import nn

from pipeline.config import BackboneConfig
from pipeline.errors import PipelineError

# torchvision is imported inside the functions that need it: frozen-mode training never does,
# and its import costs more than a second per stage process.

log = logging.getLogger(__name__)

BUILTIN = ("pixels", "tiny_cnn")


class BackboneError(PipelineError, ValueError):
    """Unknown backbone name or unusable weights file (one-line message)."""


class TinyCNN(nn.Module):
    """Three conv-BN-ReLU blocks, then global average and max pooling concatenated."""

    def __init__(self, in_channels: int, width: int = 32):
        super().__init__()
        layers, c = [], in_channels
        for out in (width, 2 * width, 4 * width):
            layers += [nn.Conv2d(c, out, 3, padding=1, bias=False), nn.BatchNorm2d(out), nn.ReLU(inplace=True)]
            layers.append(nn.MaxPool2d(2, ceil_mode=True))
            c = out
        self.features = nn.Sequential(*layers[:-1])  # no pooling after the last block
        self.out_dim = 2 * c

    def forward(self, x):
        h = self.features(x)
        return torch.cat([h.mean(dim=(2, 3)), h.amax(dim=(2, 3))], dim=1)


def _strip_classifier(model: nn.Module) -> nn.Module:
    for attr in ("fc", "classifier", "head", "heads"):
        if hasattr(model, attr):
            setattr(model, attr, nn.Identity())
            return model
    raise BackboneError(f"backbone.name: {type(model).__name__} has no classifier attribute to remove")


def _load_weights(model: nn.Module, path: str) -> None:
    file = Path(path)
    if not file.is_file():
        raise BackboneError(f"backbone.weights: file not found: {path}")
    state = torch.load(file, map_location="cpu", weights_only=True)
    if isinstance(state, dict) and "state_dict" in state:
        state = state["state_dict"]
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    mismatched = sorted(k for k in set(state) & set(expected) if state[k].shape != expected[k].shape)
    if missing or unexpected or mismatched:
        raise BackboneError(
            f"backbone.weights: {path} does not match the model ({len(missing)} missing keys, "
            f"{len(unexpected)} unexpected keys, {len(mismatched)} keys of the wrong shape)"
        )
    model.load_state_dict(state)


def build_backbone(cfg: BackboneConfig) -> nn.Module | None:
    """The feature extractor; None for ``pixels`` (the features are the inputs)."""
    if cfg.name == "pixels":
        return None
    if cfg.name == "tiny_cnn":
        model = TinyCNN(cfg.channels)
        if cfg.weights:
            _load_weights(model, cfg.weights)
        return model
    from torchvision import models as tv_models

    if cfg.name not in tv_models.list_models(module=tv_models):
        raise BackboneError(
            f"backbone.name: unknown backbone {cfg.name!r} (valid: {', '.join(BUILTIN)} "
            f"or a torchvision classification model such as resnet50)"
        )
    model = tv_models.get_model(cfg.name, weights=None)
    if cfg.weights:
        _load_weights(model, cfg.weights)  # a full classification state dict, then strip the classifier
    else:
        log.warning("backbone %s: no weights file given, using random initialisation", cfg.name)
    return _strip_classifier(model)


def describe_backbone(cfg: BackboneConfig) -> str:
    """One line for reports saying what the features are."""
    if cfg.name == "pixels":
        return "pixels (raw grey intensities, no learned weights, no download)"
    weights = f"weights from {cfg.weights}" if cfg.weights else "random initialisation (no pretrained weights)"
    return f"{cfg.name} ({weights})"


def eval_transform(cfg: BackboneConfig):
    """Deterministic transform used for the embedding cache, validation and test."""
    from torchvision import transforms as T

    if cfg.name == "pixels":
        return T.Compose([T.Grayscale(1), T.ToTensor()])
    return T.Compose([
        _ConvertMode("L" if cfg.channels == 1 else "RGB"),
        T.Resize(cfg.input_size),
        T.ToTensor(),
        T.Normalize(cfg.mean, cfg.std),
    ])


def train_transform(cfg: BackboneConfig, pad: int):
    """Eval transform plus a random shift (zero padding, random crop of the original size)."""
    from torchvision import transforms as T

    base = eval_transform(cfg)
    steps = list(base.transforms)
    crop = _PadCrop(pad)
    # the crop goes right after the tensor conversion (before normalisation)
    idx = next(i for i, t in enumerate(steps) if isinstance(t, T.ToTensor)) + 1
    return T.Compose(steps[:idx] + [crop] + steps[idx:])


class _ConvertMode:
    """PIL mode conversion (picklable, so DataLoader workers can use it)."""

    def __init__(self, mode: str):
        self.mode = mode

    def __call__(self, image):
        return image.convert(self.mode)


class _PadCrop(nn.Module):
    """Random translation by up to `pad` pixels (pad with zeros, crop back)."""

    def __init__(self, pad: int):
        super().__init__()
        self.pad = pad

    def forward(self, x):
        from torchvision.transforms import RandomCrop

        if self.pad == 0:
            return x
        return RandomCrop(x.shape[-2:], padding=self.pad)(x)
