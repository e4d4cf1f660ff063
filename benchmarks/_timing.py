"""Shared by the training benchmarks: their inputs' options and params, load the prepared default, time a run and one
function inside it."""

from __future__ import annotations

import pipeline  # noqa: F401  (first: it pins the CPU numerics before numpy and torch load; some benchmarks import this first)

# isort: split
import argparse
import time
from pathlib import Path

import torch
from omegaconf import OmegaConf

from pipeline.data.manifest import read_manifest
from pipeline.models.features import FeatureCache
from pipeline.params.root import load_params
from pipeline.runs import run_setup
from pipeline.training.experiment import train_fold


def input_arguments(parser: argparse.ArgumentParser) -> None:
    """--params, --data, --features and --runs: a composed default's files and the runs to time."""
    parser.add_argument("--params", type=Path, help="a composed params file (default: conf/ composed here)")
    parser.add_argument("--data", default="data/prepared", help="the prepared data set's folder")
    parser.add_argument("--features", default="data/features", help="the feature cache's folder")
    parser.add_argument("--runs", nargs="+", default=["ms", "c2_ccp", "ms_profs"])


def raw_params(path: Path | None) -> dict:
    """The params file at `path` as a dict, or conf/ composed here (the default) when there is none."""
    if path:
        return OmegaConf.to_container(OmegaConf.load(path))
    from pipeline.compose import composed

    return composed([])


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
