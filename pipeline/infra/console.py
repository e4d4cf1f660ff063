"""What a stage shows: one progress bar on the console, the details in its log file.

The console: a stage's INFO messages (what it read and wrote, what it decided), and one tqdm bar per batch of jobs
(pipeline/infra/parallel.py Workers.run: jobs done of total) with the epoch each running job is at beside it. A
job says where it is with `note` (pipeline/training/loop.py: ``ms-0 epoch 12``), in the stage process itself or in a
worker process, whose notes reach the stage process through a queue.

The log file: every message of the pipeline, DEBUG included (a model's every epoch, its device, CCP's
sub-problems), from the stage process and its workers, in ``data/logs/<stage>.log`` (`stage_log`: the DVC stage's
name, e.g. ``train@ms`` -> ``train-ms.log``; outside DVC the stage module's), rewritten by each run of the stage and
named on the console when the stage starts. The folder holds a ``.gitignore`` of ``*``: git and `dvc exp run` never
take a log into a commit, whatever the project's own ignores. Library noise is left out of both: faiss's loader
reports at INFO that it could not load its AVX-512 build, once per process. A worker draws no bar of its own, nor does
a step of a job (the evaluate stage's kNN searches): one bar per stage, drawn only on a terminal.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

LOG_FORMAT = "%(asctime)s %(name)s: %(message)s"
LOG_VARIABLE = "DML_LOG_FILE"  # the stage's log file, for its worker processes (they inherit the environment)
QUIET_LIBRARIES = ("faiss.loader",)

_queue = None  # in a worker process: the stage process's queue of notes
_bar = None  # in the stage process: the bar of the batch of jobs in progress
_running: dict[str, str] = {}
_lock = threading.Lock()


def stage_log(module: str) -> Path:
    """The log file of the running stage: data/logs/<DVC stage name>.log, or <module>.log outside DVC (`module`:
    the stage module's name, e.g. train)."""
    name = os.environ.get("DVC_STAGE", "").split(":")[-1] or module
    root = Path(os.environ.get("DVC_ROOT", "."))
    return root / "data" / "logs" / f"{name.replace('@', '-')}.log"


def configure_logging(log_file: Path | None = None) -> None:
    """INFO messages to stderr in the stages' format; with a log file (or the stage's, named by DML_LOG_FILE in a
    worker), every message of the pipeline there too, DEBUG included (module docstring)."""
    log_file = log_file or (Path(os.environ[LOG_VARIABLE]) if os.environ.get(LOG_VARIABLE) else None)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.INFO)
    handlers: list[logging.Handler] = [console]
    if log_file is not None:
        handlers.append(logging.FileHandler(log_file, mode="a", encoding="utf-8"))
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, handlers=handlers)
    logging.getLogger("pipeline").setLevel(logging.DEBUG if log_file is not None else logging.INFO)
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)


def start_stage_log(module: str) -> Path:
    """Start the stage's log file afresh (the last run's set aside until this one succeeds, `end_stage_log`), name
    it to this process's workers and log to it (`configure_logging`)."""
    path = stage_log(module)
    path.parent.mkdir(parents=True, exist_ok=True)
    ignore = path.parent / ".gitignore"
    if not ignore.exists():  # the folder ignores itself (as .ruff_cache does): no log in git or in an experiment
        ignore.write_text("# written by pipeline/infra/console.py: logs are not results\n*\n")
    if path.exists():
        path.replace(_set_aside(path))
    path.write_text("")
    os.environ[LOG_VARIABLE] = str(path.resolve())
    configure_logging(path)
    logging.getLogger(__name__).info("log: %s (every message of the stage, each epoch of each model)", path)
    return path


def _set_aside(path: Path) -> Path:
    return path.with_name(f".{path.name}.last")


def failed_log(path: Path) -> Path:
    return path.with_suffix(".failed.log")


def end_stage_log(path: Path, succeeded: bool) -> None:
    """A stage's log file always holds its last successful run: a failed run's log moves to <stage>.failed.log and
    the one set aside at the start (`start_stage_log`) comes back (a bad input keeps the good run's log)."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    last = _set_aside(path)
    if succeeded:
        last.unlink(missing_ok=True)
        failed_log(path).unlink(missing_ok=True)
        return
    path.replace(failed_log(path))
    if last.exists():
        last.replace(path)


def in_worker() -> bool:
    """Whether this process is a stage's worker (its progress goes to the stage's bar, not a bar of its own)."""
    return _queue is not None


def note(job: str, text: str) -> None:
    """Show `text` beside the stage's bar for `job` ("" when the job is done)."""
    if _queue is not None:
        _queue.put((job, text))
    else:
        _show(job, text)


def _show(job: str, text: str) -> None:
    with _lock:
        if text:
            _running[job] = text
        else:
            _running.pop(job, None)
        if _bar is not None:
            _bar.set_postfix_str(", ".join(f"{k} {v}" for k, v in sorted(_running.items())))


def listen_in_worker(queue) -> None:
    """In a worker process: send this process's notes to the stage process (`queue`: Workers' queue)."""
    global _queue
    _queue = queue


@contextmanager
def jobs_bar(total: int, desc: str, queue=None):
    """The bar of a batch of `total` jobs; with `queue`, the workers' notes are shown on it too."""
    global _bar
    from tqdm import tqdm

    listener = None
    if queue is not None:
        listener = threading.Thread(target=_relay, args=(queue,), daemon=True)
        listener.start()
    with tqdm(total=total, desc=desc, unit="job", disable=None) as bar:  # no bar when the console is piped
        _bar = bar
        try:
            yield bar
        finally:
            with _lock:
                _bar = None
                _running.clear()
            if listener is not None:
                queue.put(None)
                listener.join(timeout=5)


def _relay(queue) -> None:
    while (item := queue.get()) is not None:
        _show(*item)
