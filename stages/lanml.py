"""lanml: LANML-, LANML+, PNCA and the linear baselines on one UCI data set (ANML section 7.1.2 protocol).

The results file holds what the same params reproduce byte for byte (accuracies, chosen settings);
the fit times are wall-clock measurements, so they are logged here and left out of it
(benchmarks/bench_lanml.py measures them).
"""

import logging
from pathlib import Path

import numpy as np

from pipeline.config.lanml import LANML
from pipeline.config.loader import params_type
from pipeline.config.run import SEED
from pipeline.infra.io import write_json
from pipeline.infra.runtime import derive_seed
from pipeline.linear.datasets import load_dataset
from pipeline.linear.protocol import compare_methods
from stages._common import run

log = logging.getLogger("lanml")

PARAMS = params_type(SEED, LANML)  # the sections this stage reads


def main(params, args):
    x, y = load_dataset(args.dataset, Path(args.cache))
    log.info("%s: %d samples, %d features, %d classes", args.dataset, *x.shape, len(np.unique(y)))
    methods = compare_methods(x, y, params.lanml, derive_seed(params.seed, "lanml", args.dataset))
    for method, r in methods.items():
        log.info("%s: %s fit time %.3f s (mean over splits)", args.dataset, method, r["fit_seconds"]["mean"])
    if "lanml_minus" in methods and "lmnn" in methods:  # the paper: LANML about 10x faster than LMNN
        ratio = methods["lmnn"]["fit_seconds"]["mean"] / methods["lanml_minus"]["fit_seconds"]["mean"]
        log.info("%s: fit time LMNN / LANML- (projected gradient) = %.2f", args.dataset, ratio)
    write_json(
        args.out,
        {
            "dataset": args.dataset,
            "samples": int(x.shape[0]),
            "features": int(x.shape[1]),
            "classes": int(len(np.unique(y))),
            "methods": without_timings(methods),
        },
    )


def without_timings(methods: dict) -> dict:
    """The methods' results less every wall-clock figure."""
    return {
        m: {
            k: ([{kk: vv for kk, vv in s.items() if kk != "fit_seconds"} for s in v] if k == "splits" else v)
            for k, v in r.items()
            if k != "fit_seconds"
        }
        for m, r in methods.items()
    }


def configure(p):
    p.add_argument("--dataset", required=True)
    p.add_argument("--cache", default="data/uci", help="download folder of the UCI / LibSVM files")
    p.add_argument("--out", required=True, help="results JSON")


if __name__ == "__main__":
    run(__doc__, configure, main, PARAMS)
