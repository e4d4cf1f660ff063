"""Shared by the training benchmarks: load the prepared default, time a run and one function inside it."""

from __future__ import annotations

import time

import torch

from pipeline.config import load_params
from pipeline.data.manifest import read_manifest
from pipeline.models.features import FeatureCache
from pipeline.training.experiment import train_fold
from pipeline.training.runs import run_setup


def load_inputs(params_path: str):
    """params, manifest and feature cache of the embedded default (run `dvc repro embed` first)."""
    return (load_params(params_path), read_manifest("data/prepared"), FeatureCache.load("data/features/features.npz"))


def timed_run(params, name, manifest, features, owner, attr: str, repeats: int):
    """Best of `repeats` trainings of run `name` on fold 0: (s per epoch, s per epoch inside
    owner.attr, epochs, the run's result)."""
    best = None
    for _ in range(repeats):
        spent = [0.0]
        original = getattr(owner, attr)

        def wrapped(*args, original=original, spent=spent, **kwargs):
            t = time.perf_counter()
            out = original(*args, **kwargs)
            spent[0] += time.perf_counter() - t
            return out

        setattr(owner, attr, wrapped)
        try:
            t = time.perf_counter()
            result = train_fold(run_setup(params, name), 0, manifest, features, torch.device("cpu"))
            total = time.perf_counter() - t
        finally:
            setattr(owner, attr, original)
        epochs = len(result.fit.history) - 1
        row = (total / epochs, spent[0] / epochs, epochs, result)
        best = row if best is None or row[0] < best[0] else best
    return best
