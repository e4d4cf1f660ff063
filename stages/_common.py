"""What every stage CLI shares: logging, params loading, and one-line errors."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable

from pipeline.config import load_params
from pipeline.infra.errors import PipelineError
from pipeline.infra.git_index import refresh_if_stale
from pipeline.infra.parallel import configure_logging


def run(description: str, configure: Callable[[argparse.ArgumentParser], None], body: Callable) -> None:
    """Parse arguments, load params.yaml, run `body(params, args)`; user errors exit 2 with one line."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    configure(parser)
    args = parser.parse_args()
    configure_logging()
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
        sys.exit(2)
