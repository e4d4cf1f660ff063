"""Benchmark: HNCM's extra time per epoch relative to PROFS without it, in the same run.

HNCM builds the batches itself (hard classes replace random ones, so the batch
and R' keep their size); its extra work per batch is one O(L) scan of the stored
representative embeddings per seed class and the store update. This trains `<loss>_profs` and `<loss>_profs_hncm` on
fold 0 of the prepared embedded default (run `dvc repro embed` first) and
prints seconds per epoch, their ratio, and the share of the scan itself. The
paper reports 0.008% (CUB, Cars) and 0.9% (SOP) more time overall. Both runs train
exactly --epochs epochs, so validation and checkpoint copies cost the same in both.

    python benchmarks/bench_hncm.py --loss ms --repeats 3
"""

from __future__ import annotations

import argparse

from _timing import load_inputs, timed_run

from pipeline.methods import profs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loss", default="ms", choices=list(profs.LOSSES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--epochs", type=int, default=20, help="every run trains exactly this many epochs")
    args = parser.parse_args()
    params, manifest, features = load_inputs(args.params)
    # the same number of epochs for both (no early stopping), so validation and snapshots cost alike
    params.train.max_epochs = params.train.patience = args.epochs
    rows = {
        v: timed_run(params, f"{args.loss}_{v}", manifest, features, profs, "hard_negative_classes", args.repeats)
        for v in ("profs", "profs_hncm")
    }
    print(f"loss {args.loss}, fold 0, {params.train.steps_per_epoch} steps per epoch, best of {args.repeats}")
    print(f"{'variant':12s}{'s/epoch':>10s}{'scan s/epoch':>14s}{'epochs':>8s}")
    for variant, (per_epoch, scan, epochs, _) in rows.items():
        print(f"{variant:12s}{per_epoch:10.4f}{scan:14.5f}{epochs:8d}")
    base, hncm = rows["profs"][0], rows["profs_hncm"][0]
    print(
        f"HNCM / PROFS time per epoch: {hncm / base:.3f} ({100 * (hncm / base - 1):+.1f}%); "
        f"the scan alone: {100 * rows['profs_hncm'][1] / base:.2f}% of a PROFS epoch"
    )


if __name__ == "__main__":
    main()
