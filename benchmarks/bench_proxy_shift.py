"""Benchmark: how far CCP's proxies move from their K-center positions, as released vs our earlier defaults.

Greedy K-center (CCP Alg. 2) places each sub-problem's proxies; if the proxies then move about as far as
the covering radius within one epoch, the placement is gone before it can matter. This trains `<loss>_ccp`
on fold 0 of the prepared data (`dvc repro embed` first; `--data` / `--features` for another set, e.g. the
emoji default's) twice: with the authors' release settings (params.yaml's defaults: proxies at the
network's learning rate, Adam moments kept, per-loss reductions, dot similarity, K-center on raw outputs)
and with this project's earlier settings (proxies at 10x, moments reset, mean over pairs, cosine,
K-center in the normalised space). It prints per setting the proxy shift (normalised space, mean / max over
proxies) after the first epoch of each sub-problem and at its end, beside the covering radius.

    python benchmarks/bench_proxy_shift.py --loss c2
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import pandas as pd
import torch

from pipeline.data.manifest import read_manifest
from pipeline.models.features import FeatureCache
from pipeline.params.root import load_params
from pipeline.runs import run_setup
from pipeline.training.experiment import train_fold

BEFORE = {
    "proxy_lr_multiplier": 10.0,
    "reset_proxy_optimizer": True,
    "reducer": "mean",
    "similarity": "cosine",
    "kcenter_space": "normalized",
}  # the earlier settings (proxy_lr 1e-2 at train.lr 1e-3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loss", default="c2", choices=["c1", "c2", "ms", "triplet"])
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--data", default="data/prepared")
    parser.add_argument("--features", default="data/features")
    parser.add_argument("--seed", type=int, default=0, help="replicate seed")
    args = parser.parse_args()
    params = load_params(args.params)
    manifest, features = read_manifest(args.data), FeatureCache.load(f"{args.features}/features.npz")
    settings = {"as released (default)": params, "earlier settings": replace(params, ccp=replace(params.ccp, **BEFORE))}
    for name, p in settings.items():
        result = train_fold(run_setup(p, f"{args.loss}_ccp"), 0, manifest, features, torch.device("cpu"), args.seed)
        rows = pd.DataFrame(result.diagnostics)
        print(
            f"\n{args.loss}_ccp, fold 0, seed {args.seed}, {name}: {len(rows)} sub-problems, "
            f"{len(result.fit.history) - 1} epochs, best val MAP@R {100 * result.fit.best_val_map_at_r:.2f}"
        )
        print(
            rows[
                [
                    "subproblem",
                    "epochs",
                    "initial_radius_mean",
                    "proxy_shift_first_epoch_mean",
                    "proxy_shift_first_epoch_max",
                    "proxy_shift_mean",
                    "covering_radius_mean",
                ]
            ].to_string(index=False, float_format=lambda v: f"{v:.4f}")
        )


if __name__ == "__main__":
    main()
