"""Benchmark: time per epoch of CCP and of Loss-Proxy with the same loss, in the same run.

CCP adds, over Loss-Proxy, the projection regulariser at every step and the
greedy K-center re-initialisation plus covering-radius diagnostics at every
sub-problem boundary. This trains both variants on one fold of the prepared
embedded default (run `dvc repro embed` first) with the project's params and
prints seconds per epoch, their ratio and where CCP's extra time goes.

    python benchmarks/bench_ccp_epoch.py --loss c2 --repeats 3
"""

from __future__ import annotations

import argparse
import time

import torch

from pipeline.config import load_params
from pipeline.data.manifest import read_manifest
from pipeline.experiment import train_fold
from pipeline.features import FeatureCache
from pipeline.methods import ccp as ccp_module


def timed_run(params, name, manifest, features):
    spent = {"k_center": 0.0}
    original = ccp_module.CCPObjective._select_anchors

    def select(self, ctx, rows):  # time Algorithm 2 (and its radius diagnostic)
        t = time.perf_counter()
        original(self, ctx, rows)
        spent["k_center"] += time.perf_counter() - t

    ccp_module.CCPObjective._select_anchors = select
    try:
        t = time.perf_counter()
        result = train_fold(params, name, 0, manifest, features, torch.device("cpu"))
        total = time.perf_counter() - t
    finally:
        ccp_module.CCPObjective._select_anchors = original
    epochs = len(result.fit.history) - 1
    return total / epochs, spent["k_center"] / epochs, epochs, len(result.diagnostics)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loss", default="c2", choices=["c1", "c2", "ms", "triplet"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--params", default="params.yaml")
    args = parser.parse_args()
    params = load_params(args.params)
    manifest = read_manifest("data/prepared")
    features = FeatureCache.load("data/features/features.npz")
    rows = {}
    for variant in ("loss_proxy", "ccp"):
        runs = [timed_run(params, f"{args.loss}_{variant}", manifest, features) for _ in range(args.repeats)]
        rows[variant] = min(runs)  # least disturbed run
    print(f"loss {args.loss}, fold 0, {params.train.steps_per_epoch} steps per epoch, best of {args.repeats}")
    print(f"{'variant':12s}{'s/epoch':>10s}{'K-center s/epoch':>18s}{'epochs':>8s}{'sub-problems':>14s}")
    for variant, (per_epoch, kc, epochs, subs) in rows.items():
        print(f"{variant:12s}{per_epoch:10.4f}{kc:18.4f}{epochs:8d}{subs:14d}")
    ratio = rows["ccp"][0] / rows["loss_proxy"][0]
    print(f"CCP / Loss-Proxy time per epoch: {ratio:.3f} ({100 * (ratio - 1):+.1f}%)")


if __name__ == "__main__":
    main()
