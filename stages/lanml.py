"""lanml: LANML-, LANML+, PNCA and the linear baselines on one UCI data set (ANML section 7.1.2 protocol)."""

import logging
from pathlib import Path

import numpy as np

from pipeline.io import write_json
from pipeline.linear.datasets import load_dataset
from pipeline.linear.protocol import compare_methods
from pipeline.runtime import derive_seed
from stages._common import run

log = logging.getLogger("lanml")


def main(params, args):
    x, y = load_dataset(args.dataset, Path(args.cache))
    log.info("%s: %d samples, %d features, %d classes", args.dataset, *x.shape, len(np.unique(y)))
    methods = compare_methods(x, y, params.lanml, derive_seed(params.seed, "lanml", args.dataset))
    result = {"dataset": args.dataset, "samples": int(x.shape[0]), "features": int(x.shape[1]),
              "classes": int(len(np.unique(y))), "methods": methods}
    if "lanml_minus" in methods and "lmnn" in methods:  # the paper: LANML about 10x faster than LMNN
        ratio = methods["lmnn"]["fit_seconds"]["mean"] / methods["lanml_minus"]["fit_seconds"]["mean"]
        result["lmnn_over_lanml_minus_fit_time"] = ratio
        log.info("%s: fit time LMNN / LANML- (projected gradient) = %.2f", args.dataset, ratio)
    write_json(args.out, result)


def configure(p):
    p.add_argument("--dataset", required=True)
    p.add_argument("--cache", default="data/uci", help="download folder of the UCI / LibSVM files")
    p.add_argument("--out", required=True, help="results JSON")


if __name__ == "__main__":
    run(__doc__, configure, main)
