"""train: one method on one MLRC fold; writes the best model, test embeddings and the epoch log."""

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from pipeline.config import ParamsError, method_config, to_dict
from pipeline.data.manifest import read_manifest
from pipeline.experiment import train_fold
from pipeline.features import FeatureCache
from pipeline.io import atomic_path, write_json, write_text
from pipeline.runtime import choose_device
from stages._common import run


def main(params, args):
    source = Path(args.params).name
    if args.method not in params.experiment.methods:
        raise ParamsError(f"{source}: experiment.methods: method {args.method!r} is not listed "
                          f"(listed: {', '.join(params.experiment.methods)})")
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
            "params": to_dict(method_config(params, args.method)),
        })
    write_text(args.log, pd.DataFrame(result.fit.history).to_csv(index=False, float_format="%.6f"))


def configure(p):
    p.add_argument("--method", required=True)
    p.add_argument("--fold", type=int, required=True)
    p.add_argument("--data", default="data/prepared")
    p.add_argument("--features", default="data/features")
    p.add_argument("--out", required=True, help="model folder")
    p.add_argument("--log", required=True, help="per-epoch CSV log (dvc plots)")


if __name__ == "__main__":
    run(__doc__, configure, main)
