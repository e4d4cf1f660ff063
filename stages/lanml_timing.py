"""lanml_timing: LANML-, LANML+ and LMNN fit times side by side on every lanml data set (ANML section 7.1.3).

The one output of the pipeline that is a clock reading (process CPU time, best of --repeats), so it
is not among the byte-for-byte reproducible results: it sits in its own files, which no other stage
reads. pipeline/linear/timing.py says what is measured.
"""

import json
import logging
from pathlib import Path

from pipeline.config.lanml import LANML
from pipeline.config.loader import params_type
from pipeline.config.report import REPORT
from pipeline.config.run import SEED
from pipeline.infra.io import write_text
from pipeline.infra.runtime import derive_seed
from pipeline.linear.datasets import load_dataset
from pipeline.linear.timing import time_fits
from pipeline.reporting.lanml_table import timing_markdown
from stages._common import run

log = logging.getLogger("lanml_timing")

PARAMS = params_type(SEED, LANML, REPORT)  # the sections this stage reads


def main(params, args):
    results = []
    for dataset in params.lanml.datasets:
        x, y = load_dataset(dataset, Path(args.cache))
        log.info("%s: timing LANML-, LANML+ and LMNN (best of %d)", dataset, args.repeats)
        result = {
            "dataset": dataset,
            **time_fits(x, y, params.lanml, derive_seed(params.seed, "lanml", dataset), args.repeats),
        }
        log.info("%s: %s", dataset, ", ".join(f"{k} {v:.1f}" for k, v in result["ratios"].items()))
        results.append(result)
    header = (
        "# LANML fit times (ANML section 7.1.3, Fig. 8)\n\n"
        "Clock readings (process CPU time; LANML: best of repeats): these numbers differ from machine to machine "
        "and run to run, unlike every other file under reports/. Settings and what each column means: "
        "pipeline/linear/timing.py.\n\n"
    )
    write_text(args.out, header + timing_markdown(results, params.report.decimals))
    write_text(Path(args.out).with_suffix(".json"), json.dumps(results, indent=1) + "\n")


def configure(p):
    p.add_argument("--cache", default="data/uci", help="download folder of the UCI / LibSVM files")
    p.add_argument("--repeats", type=int, default=3, help="fits of LANML- and LANML+; the least CPU time is kept")
    p.add_argument("--out", required=True, help="markdown table (the JSON beside it)")


if __name__ == "__main__":
    run(__doc__, configure, main, PARAMS)
