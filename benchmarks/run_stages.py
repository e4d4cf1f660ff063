"""Run a pipeline's stage commands in order, without DVC, and time each: `dvc repro` on a machine that has no DVC.

The command list is what ``dvc repro --dry -f`` prints (``Running stage 'NAME':`` then ``> COMMAND``), made on a
machine with DVC and carried to the one without (a lent GPU machine has only Python). Every command runs in the
repository root, one after the other as DVC runs them; the first failure stops the run. Per-stage wall times go
to ``--log-dir`` (``stages.csv``, one log per stage) and the table is printed, slowest stages first.

    dvc repro --dry -f > stages.txt                                   # here, with DVC
    python benchmarks/run_stages.py stages.txt --log-dir logs --python python3   # there, without it
"""

from __future__ import annotations

import argparse
import csv
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

STAGE = re.compile(r"^Running stage '(?P<name>[^']+)':$")


def read_commands(path: Path) -> list[tuple[str, str]]:
    """(stage, command) pairs in the order of ``dvc repro --dry`` output."""
    pairs, stage = [], None
    for line in path.read_text().splitlines():
        if m := STAGE.match(line.strip()):
            stage = m["name"]
        elif line.startswith("> ") and stage is not None:
            pairs.append((stage, line[2:]))
            stage = None
    if not pairs:
        raise SystemExit(f"{path}: no 'Running stage' / '> command' pairs (the output of dvc repro --dry -f)")
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commands", type=Path)
    parser.add_argument("--log-dir", type=Path, required=True)
    parser.add_argument("--python", default="", help="interpreter replacing a command's leading 'python'")
    args = parser.parse_args()
    pairs = read_commands(args.commands)
    args.log_dir.mkdir(parents=True, exist_ok=True)
    rows, start = [], time.perf_counter()
    for stage, command in pairs:
        words = shlex.split(command)
        if args.python and words[0] == "python":
            words[0] = args.python
        began = time.perf_counter()
        with open(args.log_dir / f"{stage.replace('@', '_')}.log", "w") as log:
            rc = subprocess.run(words, stdout=log, stderr=subprocess.STDOUT).returncode
        rows.append({"stage": stage, "seconds": round(time.perf_counter() - began, 2), "rc": rc})
        print(f"{stage:40s} {rows[-1]['seconds']:8.1f} s  rc {rc}", flush=True)
        if rc:
            break
    total = time.perf_counter() - start
    with open(args.log_dir / "stages.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["stage", "seconds", "rc"])
        writer.writeheader()
        writer.writerows(rows)
    print(
        "slowest:",
        ", ".join(f"{r['stage']} {r['seconds']:.0f} s" for r in sorted(rows, key=lambda r: -r["seconds"])[:8]),
    )
    print(f"total {total:.1f} s over {len(rows)} of {len(pairs)} stages")
    return max((r["rc"] for r in rows), default=0)


if __name__ == "__main__":
    sys.exit(main())
