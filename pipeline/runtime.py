"""Seeding and device choice."""

from __future__ import annotations

import logging
import random
import zlib

import numpy as np
import torch

log = logging.getLogger(__name__)


def derive_seed(seed: int, *names) -> int:
    """A stable 31-bit seed from the global seed and names (e.g. method, fold)."""
    text = ":".join([str(seed), *map(str, names)])
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy's global state (pytorch-metric-learning's samplers use it) and torch."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


def choose_device(name: str) -> torch.device:
    """``auto``: CUDA when available, else CPU."""
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("train.device: cuda requested but no CUDA device is available")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    log.info("device: %s", name)
    return torch.device(name)
