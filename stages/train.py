"""train: one run (a method, or a CCP loss x variant) on one MLRC fold.

Writes the best model, the test embeddings, a summary, the per-epoch log
(dvc plots) and, for outer-loop methods, one diagnostics row per sub-problem.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from pipeline.config import ParamsError, to_dict
from pipeline.data.manifest import read_manifest
from pipeline.experiment import train_fold
from pipeline.features import FeatureCache
from pipeline.io import atomic_path, write_json, write_text
from pipeline.methods import all_runs, run_config
from pipeline.runtime import choose_device
from stages._common import run

SUBPROBLEM_COLUMNS = ["subproblem", "epochs", "steps", "best_val_map_at_r", "initial_radius_max",
                      "initial_radius_mean", "covering_radius_max", "covering_radius_mean", "lambda"]


def main(params, args):
    source = Path(args.params).name
    runs = all_runs(params)
    if args.method not in runs:
        raise ParamsError(f"{source}: method {args.method!r} is not one of the configured runs "
                          f"({', '.join(runs)}; see experiment.methods and the ccp and profs losses and variants)")
    if args.fold not in params.experiment.folds:
        raise ParamsError(f"{source}: experiment.folds: fold {args.fold} is not listed")
    features = FeatureCache.load(f"{args.features}/features.npz") if params.train.mode == "frozen" else None
    result = train_fold(params, args.method, args.fold, read_manifest(args.data), features,
                        choose_device(params.train.device))
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        torch.save(result.model.state_dict(), tmp / "model.pt")
        with open(tmp / "test_embeddings.npz", "wb") as fh:
            np.savez(fh, embeddings=result.test_embeddings, labels=result.test_labels)
        write_json(tmp / "summary.json", {
            "method": args.method, "fold": args.fold, "best_epoch": result.fit.best_epoch,
            "epochs_run": len(result.fit.history) - 1, "best_val_map_at_r": result.fit.best_val_map_at_r,
            "params": to_dict(run_config(params, args.method)),
        })
    write_text(args.log, pd.DataFrame(result.fit.history).to_csv(index=False, float_format="%.6f"))
    if args.subproblems:
        table = pd.DataFrame(result.diagnostics, columns=SUBPROBLEM_COLUMNS)
        write_text(args.subproblems, table.to_csv(index=False, float_format="%.6f"))


def configure(p):
    p.add_argument("--method", required=True)
    p.add_argument("--fold", type=int, required=True)
    p.add_argument("--data", default="data/prepared")
    p.add_argument("--features", default="data/features")
    p.add_argument("--out", required=True, help="model folder")
    p.add_argument("--log", required=True, help="per-epoch CSV log (dvc plots)")
    p.add_argument("--subproblems", help="CSV with one row per sub-problem (outer-loop methods)")


if __name__ == "__main__":
    run(__doc__, configure, main)
