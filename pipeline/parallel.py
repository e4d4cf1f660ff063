"""Independent training jobs (folds of a run, points of an ablation grid) on several CPU processes.

``dvc repro`` runs one stage at a time, and a frozen-feature head trains as fast on one thread as on
two (measured: 14.2 s vs 14.3 s for one CCP fold), so a stage runs its jobs in ``workers`` processes
with ``threads`` threads each (torch intra-op, OpenMP and BLAS). The processes are spawned (not forked), so no thread or
OpenMP state of the parent leaks into them. Every job seeds itself, so the numbers do not depend on
which process runs it, but they may differ in the last digits between thread counts (floating-point
reductions are split differently), which is why the thread count is a parameter and not the machine's
core count.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Callable, Sequence, TypeVar

from pipeline import numerics

Job = TypeVar("Job")
Result = TypeVar("Result")
# a spawned worker re-pins its numerics from DML_THREADS when it imports pipeline (pipeline/numerics.py)
THREAD_VARIABLES = (numerics.THREADS_VARIABLE, *numerics.THREAD_VARIABLES)
LOG_FORMAT = "%(asctime)s %(name)s: %(message)s"  # the stage CLIs' format (stages/_common.py)


def configure_logging() -> None:
    """INFO messages to stderr in the stages' format (in the stage process and in every worker)."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)


@contextmanager
def _thread_environment(threads: int):
    """Thread-count variables that a new process pins its libraries to (pipeline/numerics.py)."""
    saved = {k: os.environ.get(k) for k in THREAD_VARIABLES}
    os.environ.update({k: str(threads) for k in THREAD_VARIABLES})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_jobs(fn: Callable[[Job], Result], jobs: Sequence[Job], workers: int, threads: int,
             desc: str = "jobs") -> list[Result]:
    """``[fn(job) for job in jobs]``, in job order; on ``workers`` spawned processes with ``threads``
    threads each when workers > 1, else here with this process's thread count (DML_THREADS, pipeline/numerics.py).

    `fn` must be a module-level function (it is pickled by name). An exception in a job is raised
    here, with its original type, after the other running jobs finish.
    """
    from tqdm import tqdm

    if workers <= 1 or len(jobs) <= 1:
        return [fn(job) for job in tqdm(jobs, desc=desc, unit="job")]
    with _thread_environment(threads), ProcessPoolExecutor(
            min(workers, len(jobs)), mp_context=multiprocessing.get_context("spawn"),
            initializer=configure_logging) as pool:
        return list(tqdm(pool.map(fn, jobs), total=len(jobs), desc=desc, unit="job"))
