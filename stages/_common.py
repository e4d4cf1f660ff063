"""What every stage CLI shares: logging, params loading, and one-line errors."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from pipeline.config import load_params
from pipeline.infra.console import start_stage_log
from pipeline.infra.errors import PipelineError
from pipeline.infra.git_index import refresh_if_stale


def run(description: str, configure: Callable[[argparse.ArgumentParser], None], body: Callable) -> None:
    """Parse arguments, load params.yaml, run `body(params, args)`; user errors exit 2 with one line (under DVC a
    second names the command that restores the workspace)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    configure(parser)
    args = parser.parse_args()
    start_stage_log(Path(sys.argv[0]).stem)  # data/logs/<stage>.log: every epoch of every model
    # SIGTERM (dvc or a scheduler stopping the stage) unwinds like an error: atomic_path's cleanup runs, so no
    # temporary folder is left beside the outputs (a directory dependency such as data/models would see it)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    refresh_if_stale(
        args.params
    )  # a params.yaml that git shows unchanged although it is not (pipeline/infra/git_index.py)
    try:
        body(load_params(args.params), args)
    except (PipelineError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        _restore_hint()
        sys.exit(2)
    except Exception:
        _restore_hint()
        raise


# DVC removed the failed stage's outputs before it ran, `dvc exp run -S` wrote params.yaml and the stages before
# may have written dvc.lock and reports/: this puts back the last commit's and the outputs it records from DVC's
# cache (--allow-missing: the stages never run on this machine have none there)
RESTORE = "git checkout HEAD -- params.yaml dvc.lock reports && dvc checkout --allow-missing"


def _restore_hint() -> None:
    """Under DVC, the one command that brings the workspace back to its last commit."""
    if os.environ.get("DVC_STAGE"):
        print(f"the workspace as its last commit had it, outputs from DVC's cache: {RESTORE}", file=sys.stderr)
