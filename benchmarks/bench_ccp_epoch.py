"""Benchmark: time per epoch of CCP and of Loss-Proxy with the same loss, in the same run.

CCP adds, over Loss-Proxy, the projection regulariser at every step and the
greedy K-center re-initialisation plus covering-radius diagnostics at every
sub-problem boundary. This trains both variants on fold 0 of the prepared
embedded default (run `dvc repro embed` first) with the project's params and
prints seconds per epoch, their ratio and the K-center share.

    python benchmarks/bench_ccp_epoch.py --loss c2 --repeats 3
"""

from __future__ import annotations

import argparse

from _timing import load_inputs, timed_run

from pipeline.methods.ccp import CCPObjective


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loss", default="c2", choices=["c1", "c2", "ms", "triplet"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--params", default="params.yaml")
    args = parser.parse_args()
    params, manifest, features = load_inputs(args.params)
    rows = {
        v: timed_run(params, f"{args.loss}_{v}", manifest, features, CCPObjective, "_select_anchors", args.repeats)
        for v in ("loss_proxy", "ccp")
    }
    print(f"loss {args.loss}, fold 0, {params.train.steps_per_epoch} steps per epoch, best of {args.repeats}")
    print(f"{'variant':12s}{'s/epoch':>10s}{'K-center s/epoch':>18s}{'epochs':>8s}{'sub-problems':>14s}")
    for variant, (per_epoch, kc, epochs, result) in rows.items():
        print(f"{variant:12s}{per_epoch:10.4f}{kc:18.4f}{epochs:8d}{len(result.diagnostics):14d}")
    ratio = rows["ccp"][0] / rows["loss_proxy"][0]
    print(f"CCP / Loss-Proxy time per epoch: {ratio:.3f} ({100 * (ratio - 1):+.1f}%)")


if __name__ == "__main__":
    main()
