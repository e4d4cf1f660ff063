"""BN-Inception (Ioffe & Szegedy 2015, "Inception-v2" of the BN paper, Fig. 5), the DML papers' backbone.

torchvision has no BN-Inception; the DML literature (MLRC, CCP, PROFS, ProxyNCA, MS) uses the ImageNet
weights converted from Caffe by pretrained-models.pytorch. This module builds the same network with the
same parameter names as that conversion, so its state dict loads key for key:
``conv1_7x7_s2``, ``conv1_7x7_s2_bn``, ..., ``inception_3a_1x1``, ``inception_3a_1x1_bn``, ...,
``last_linear``. Convolutions carry biases (Caffe), BatchNorm eps 1e-5. The converted weights expect
BGR inputs in [0, 255] minus the per-channel mean (104, 117, 128), no std division
(see pipeline/models/transforms.py).

Blocks (BN paper Fig. 5): per block #1x1, #3x3 reduce, #3x3, #double-3x3 reduce, #double-3x3, pool and
pool projection. The stride-2 blocks 3c and 4e have no 1x1 branch and a max-pool pass-through.
"""

from __future__ import annotations

import torch
from torch import nn

# name: (in, 1x1, 3x3 reduce, 3x3, double reduce, double, pool kind, pool projection (0: pass-through), stride)
BLOCKS = {
    "3a": (192, 64, 64, 64, 64, 96, "avg", 32, 1),
    "3b": (256, 64, 64, 96, 64, 96, "avg", 64, 1),
    "3c": (320, 0, 128, 160, 64, 96, "max", 0, 2),
    "4a": (576, 224, 64, 96, 96, 128, "avg", 128, 1),
    "4b": (576, 192, 96, 128, 96, 128, "avg", 128, 1),
    "4c": (576, 160, 128, 160, 128, 160, "avg", 128, 1),
    "4d": (608, 96, 128, 192, 160, 192, "avg", 128, 1),
    "4e": (608, 0, 128, 192, 192, 256, "max", 0, 2),
    "5a": (1056, 352, 192, 320, 160, 224, "avg", 128, 1),
    "5b": (1024, 352, 192, 320, 192, 224, "max", 128, 1),
}
OUT_DIM = 1024


class BNInception(nn.Module):
    """BN-Inception trunk; ``forward`` returns the last feature map (N, 1024, H/32, W/32).

    With ``num_classes`` > 0 a ``last_linear`` classifier exists so that a full ImageNet state dict
    (1000 classes) loads strictly; the embedder never uses it (see pipeline/models/backbones.py).
    """

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self._conv("conv1_7x7_s2", 3, 64, 7, 2)
        self._conv("conv2_3x3_reduce", 64, 64, 1)
        self._conv("conv2_3x3", 64, 192, 3)
        for block, (cin, n1, r3, n3, rd, nd, _, proj, stride) in BLOCKS.items():
            p = f"inception_{block}"
            if n1:
                self._conv(f"{p}_1x1", cin, n1, 1)
            self._conv(f"{p}_3x3_reduce", cin, r3, 1)
            self._conv(f"{p}_3x3", r3, n3, 3, stride)
            self._conv(f"{p}_double_3x3_reduce", cin, rd, 1)
            self._conv(f"{p}_double_3x3_1", rd, nd, 3)
            self._conv(f"{p}_double_3x3_2", nd, nd, 3, stride)
            if proj:
                self._conv(f"{p}_pool_proj", cin, proj, 1)
        self.last_linear = nn.Linear(OUT_DIM, num_classes) if num_classes else None

    def _conv(self, name: str, cin: int, cout: int, k: int, stride: int = 1) -> None:
        """Conv (with bias) `name` and its BatchNorm `name_bn`: the converted weights' flat naming."""
        self.add_module(name, nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2))
        self.add_module(name + "_bn", nn.BatchNorm2d(cout, eps=1e-5))

    def _cbr(self, name: str, x: torch.Tensor) -> torch.Tensor:
        """conv -> BatchNorm -> ReLU."""
        return torch.relu(getattr(self, name + "_bn")(getattr(self, name)(x)))

    @staticmethod
    def _pool_s2(x):
        return nn.functional.max_pool2d(x, 3, stride=2, ceil_mode=True)

    def _block(self, name: str, x: torch.Tensor) -> torch.Tensor:
        _, n1, _, _, _, _, pool, proj, stride = BLOCKS[name]
        p, cbr = f"inception_{name}", self._cbr
        branches = [cbr(f"{p}_1x1", x)] if n1 else []
        branches.append(cbr(f"{p}_3x3", cbr(f"{p}_3x3_reduce", x)))
        branches.append(cbr(f"{p}_double_3x3_2", cbr(f"{p}_double_3x3_1", cbr(f"{p}_double_3x3_reduce", x))))
        if stride == 2:  # pass-through max pool
            branches.append(self._pool_s2(x))
        else:
            pooled = (
                nn.functional.avg_pool2d(x, 3, stride=1, padding=1, ceil_mode=True, count_include_pad=True)
                if pool == "avg"
                else nn.functional.max_pool2d(x, 3, stride=1, padding=1, ceil_mode=True)
            )
            branches.append(cbr(f"{p}_pool_proj", pooled))
        return torch.cat(branches, dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._pool_s2(self._cbr("conv1_7x7_s2", x))
        x = self._pool_s2(self._cbr("conv2_3x3", self._cbr("conv2_3x3_reduce", x)))
        for name in BLOCKS:
            x = self._block(name, x)
        return x
