"""What every stage CLI shares: logging, params loading, and one-line errors."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from pipeline.config.loader import load_params
from pipeline.infra.console import end_stage_log, failed_log, start_stage_log
from pipeline.infra.errors import PipelineError
from pipeline.infra.git_index import refresh_if_stale

_log = logging.getLogger("pipeline.stage")  # DEBUG: written to the stage's log file, not to the console


def run(description: str, configure: Callable[[argparse.ArgumentParser], None], body: Callable, root: type) -> None:
    """Parse arguments, load the sections of params.yaml that `root` holds (the stage's own, pipeline/config/loader.py
    params_type, or every section, pipeline/params/root.py Params), run `body(params, args)`; user errors exit 2
    with one line (under DVC a second names the command that restores the workspace)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    configure(parser)
    args = parser.parse_args()
    log_file = start_stage_log(Path(sys.argv[0]).stem)  # data/logs/<stage>.log: every epoch of every model
    # SIGTERM (dvc or a scheduler stopping the stage) unwinds like an error: atomic_path's cleanup runs, so no
    # temporary folder is left beside the outputs (a directory dependency such as data/models would see it)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    refresh_if_stale(
        args.params
    )  # a params.yaml that git shows unchanged although it is not (pipeline/infra/git_index.py)
    succeeded = False
    try:
        body(load_params(args.params, root), args)
        succeeded = True
    except (PipelineError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        _log.debug("error: %s", err)  # the log file only (pipeline.infra.console)
        _restore_hint(log_file)
        sys.exit(2)
    except Exception:
        _log.debug("failed", exc_info=True)
        _restore_hint(log_file)
        raise
    finally:
        end_stage_log(log_file, succeeded)


# `dvc exp run -S` wrote params.yaml and the stages before may have written dvc.lock and reports/ (the failed stage's
# own outputs: DVC removed them before it ran, but for the persisted ones, such as data/prepared): this puts back the
# last commit's and the outputs it records from DVC's cache (--allow-missing: stages never run here have none there)
RESTORE = "git checkout HEAD -- params.yaml dvc.lock reports && dvc checkout --allow-missing"


def last_experiment() -> str | None:
    """The newest of this repository's DVC experiments (refs/exps/<2 hex>/<38 hex>/<name>), or None."""
    listing = subprocess.run(
        ["git", "for-each-ref", "--sort=-committerdate", "--format=%(refname)", "refs/exps"],
        capture_output=True,
        text=True,
    ).stdout.split()
    for ref in listing:
        parts = ref.split("/")
        if len(parts) == 5 and len(parts[2]) == 2 and len(parts[3]) == 38:
            return parts[4]
    return None


def _restore_hint(log_file: Path) -> None:
    """Under DVC: where this run's log went, and the commands that bring back the last experiment (if any) and the
    last commit (after the one-line error, which stays the last line outside DVC)."""
    if not os.environ.get("DVC_STAGE"):
        return
    print(f"this run's log: {failed_log(log_file)} ({log_file.name}: the last successful run's)", file=sys.stderr)
    if name := last_experiment():
        print(f"back to your last experiment (its params, dvc.lock, outputs): dvc exp apply {name}", file=sys.stderr)
    print(f"back to the last commit (outputs from DVC's cache): {RESTORE}", file=sys.stderr)
