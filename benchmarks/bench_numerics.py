"""What pinning the CPU numerics costs (pipeline/numerics.py): stage wall time pinned vs native.

Runs the given stages as the pipeline does (a fresh process each, so each process pins or not before
its libraries load), alternating pinned and native (DML_NATIVE_NUMERICS=1), and prints the best of
`--repeats` for each and the ratio pinned / native. Needs the prepared default (`dvc repro embed`).

    python benchmarks/bench_numerics.py --repeats 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

STAGES = {
    "train@ms": [
        "stages.train",
        "--method",
        "ms",
        "--data",
        "data/prepared",
        "--features",
        "data/features",
        "--out",
        "{tmp}/models",
        "--train-logs",
        "{tmp}/logs",
    ],
    "train@c2_ccp": [
        "stages.train",
        "--method",
        "c2_ccp",
        "--data",
        "data/prepared",
        "--features",
        "data/features",
        "--out",
        "{tmp}/models",
        "--train-logs",
        "{tmp}/logs",
        "--subproblems",
        "{tmp}/subproblems",
    ],
    "lanml@iris": ["stages.lanml", "--dataset", "iris", "--cache", "data/uci", "--out", "{tmp}/iris.json"],
}


def run_once(argv: list[str], native: bool) -> float:
    env = {k: v for k, v in os.environ.items() if k != "DML_NATIVE_NUMERICS"}
    if native:
        env["DML_NATIVE_NUMERICS"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", *[a.format(tmp=tmp) for a in argv]],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--stages", nargs="+", default=list(STAGES), choices=list(STAGES))
    args = parser.parse_args()
    print(f"{'stage':18s} {'native (s)':>11s} {'pinned (s)':>11s} {'pinned/native':>14s}  (best of {args.repeats})")
    for name in args.stages:
        times = {True: [], False: []}
        for _ in range(args.repeats):
            for native in (True, False):
                times[native].append(run_once(STAGES[name], native))
        native, pinned = min(times[True]), min(times[False])
        print(f"{name:18s} {native:11.1f} {pinned:11.1f} {pinned / native:14.2f}")


if __name__ == "__main__":
    main()
