"""Seeding and device choice (torch is imported only where needed, so derive_seed stays cheap)."""

from __future__ import annotations

import logging
import os
import random
import zlib
from typing import TYPE_CHECKING

import numpy as np

from pipeline.errors import PipelineError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)


def derive_seed(seed: int, *names) -> int:
    """A stable 31-bit seed from the global seed and names (e.g. method, fold)."""
    text = ":".join([str(seed), *map(str, names)])
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def seed_everything(seed: int, device: torch.device | None = None) -> None:
    """Seed Python, NumPy's global state (pytorch-metric-learning's samplers use it) and torch.

    On CUDA also ask for deterministic kernels. On the CPU the kernels this project uses are
    deterministic already, and the switch would cost every stage about 2 s (it imports torch._inductor).
    """
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if device is not None and device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)


def launched_by_torchrun() -> bool:
    """True in a process torchrun started with more than one process (pipeline/distributed.py)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def choose_device(name: str) -> torch.device:
    """``auto``: CUDA when available, else CPU; under torchrun the GPU of this process (LOCAL_RANK)."""
    import torch

    if name == "cuda" and not torch.cuda.is_available():
        raise PipelineError("train.device: cuda requested but no CUDA device is available (use auto or cpu)")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(name, int(os.environ.get("LOCAL_RANK", "0"))) if name == "cuda" else torch.device(name)
    log.info("device: %s", device)
    return device
