"""Benchmark: LANML-, LANML+ and metric-learn's LMNN fit times side by side (what the lanml_timing stage
runs, pipeline/linear/timing.py), on any of the lanml data sets, with the lanml params section.

With --cvxpy it also solves Fig. 8's LANML- problem on the whole training part exactly with cvxpy
(Clarabel, then SCS) and prints the relative objective gap of the quasi-Newton solution to it.

    python benchmarks/bench_lanml.py --datasets iris wine breast_cancer --repeats 3 [--cvxpy]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pipeline  # noqa: F401  (pins the CPU numerics before numpy loads)
from pipeline.linear.datasets import load_dataset
from pipeline.linear.lanml import solve_cvxpy
from pipeline.linear.protocol import split_parts
from pipeline.linear.timing import STRICT, lanml_problems, time_fits
from pipeline.params.root import load_params
from pipeline.reporting.lanml_table import timing_markdown


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["iris", "wine"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", default="data/uci")
    parser.add_argument("--cvxpy", action="store_true", help="also solve LANML- exactly with cvxpy")
    parser.add_argument("--json", help="also write the measurements here")
    args = parser.parse_args()
    cfg = load_params("params.yaml").lanml
    results = []
    for name in args.datasets:
        x, y = load_dataset(name, Path(args.cache))
        results.append({"dataset": name, **time_fits(x, y, cfg, 0, args.repeats)})
        if args.cvxpy:
            x_train, _, y_train, _ = split_parts(x, y, 0, cfg.test_fraction, cfg.pca_dims)
            problem = lanml_problems(x_train, y_train, cfg.k_similar)["lanml_minus"]
            start = time.perf_counter()
            exact = solve_cvxpy(problem)
            seconds = time.perf_counter() - start
            f_exact = problem.objective(exact)
            f_fast = results[-1]["methods"]["lanml_minus"]["objective"]
            print(
                f"{name}: cvxpy {seconds:.1f} s, objective {f_exact:.7f}; quasi-Newton {f_fast:.7f} "
                f"(relative gap {(f_fast - f_exact) / abs(f_exact):+.2e}; strict settings {STRICT})"
            )
    print(timing_markdown(results, 2))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
