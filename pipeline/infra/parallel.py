"""Independent training jobs (folds of a run, points of an ablation grid) on several CPU processes.

``dvc repro`` runs one stage at a time, and a frozen-feature head trains as fast on one thread as on
two (measured: 14.2 s vs 14.3 s for one CCP fold), so a stage runs its jobs in ``workers`` processes
with ``threads`` threads each (torch intra-op, OpenMP and BLAS). The processes are spawned (not forked), so no thread or
OpenMP state of the parent leaks into them. Every job seeds itself, so the numbers do not depend on
which process runs it, but they may differ in the last digits between thread counts (floating-point
reductions are split differently), which is why the thread count is a parameter and not the machine's
core count.

Stopping (so that no worker goes on training into a folder its stage already removed): the workers ignore
Ctrl-C, which the terminal sends to the whole process group, so only the stage process handles it; on an
interrupt, SIGTERM (stages/_common.py turns it into an exit) or a failed job, the stage process cancels the
pending jobs and kills its workers before its temporary folders are removed. A worker also dies with the
stage process: on Linux the kernel kills it when its parent dies (``PR_SET_PDEATHSIG``, even after a
SIGKILL of the parent), elsewhere a watchdog thread polls the parent's pid. The standard library's pool
with this handling, rather than loky: loky's workers notice a dead parent only between jobs, and a
training job runs for minutes.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import TypeVar

from pipeline import numerics
from pipeline.infra.console import configure_logging, jobs_bar, listen_in_worker
from pipeline.infra.io import stops_deferred

Job = TypeVar("Job")
Result = TypeVar("Result")
# a spawned worker re-pins its numerics from DML_THREADS when it imports pipeline (pipeline/numerics.py)
THREAD_VARIABLES = (numerics.THREADS_VARIABLE, *numerics.THREAD_VARIABLES)


PR_SET_PDEATHSIG = 1  # linux/prctl.h: a signal the kernel sends this process when its parent dies


def _die_with(parent: int) -> None:
    """End this process as soon as the process `parent` is gone."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    else:

        def watch():
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _start_worker(parent: int, notes) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the stage process's to handle
    _die_with(parent)
    configure_logging()  # to the stage's log file too (pipeline/infra/console.py)
    listen_in_worker(notes)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel the pending jobs and kill the workers now (their results are not wanted any more)."""
    with stops_deferred():
        pool.shutdown(wait=False, cancel_futures=True)
        for worker in multiprocessing.active_children():
            worker.kill()
        for worker in multiprocessing.active_children():
            worker.join()


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


class Workers:
    """Worker processes that live across several batches of jobs: the trials of a study (pipeline/studies/tuning.py)
    run in the same processes, which import torch and the pipeline once instead of once a trial (about 5 s of a trial's
    wall time on 2 cores). ``workers`` and ``threads`` as in `run_jobs`; the processes start with the first batch
    that has more than one job and end with the ``with`` block, or at once when a job fails (the error is raised
    with its own type, the other jobs are cancelled, as on Ctrl-C, and the next batch starts new processes)."""

    def __init__(self, workers: int | str, threads: int):
        from pipeline.infra.runtime import worker_count

        self.count, self.threads = worker_count(workers, threads), threads
        self.pool: ProcessPoolExecutor | None = None
        self.notes = None

    def run(self, fn: Callable[[Job], Result], jobs: Sequence[Job], desc: str = "jobs") -> list[Result]:
        """``[fn(job) for job in jobs]``, in job order (module docstring; `run_jobs`), under one progress bar
        (pipeline/infra/console.py)."""
        if self.count <= 1 or len(jobs) <= 1:
            results = []
            with jobs_bar(len(jobs), desc) as bar:
                for job in jobs:
                    results.append(fn(job))
                    bar.update()
            return results
        with _thread_environment(self.threads):  # workers start with the first job: inside, with these variables
            if self.pool is None:
                spawn = multiprocessing.get_context("spawn")
                self.notes = spawn.Queue()  # the workers' progress notes (pipeline/infra/console.py)
                self.notes.cancel_join_thread()  # a killed worker may leave it locked: never wait for it at exit
                self.pool = ProcessPoolExecutor(
                    self.count, mp_context=spawn, initializer=_start_worker, initargs=(os.getpid(), self.notes)
                )
            try:
                futures = [self.pool.submit(fn, job) for job in jobs]
                with jobs_bar(len(jobs), desc, self.notes) as bar:
                    for done in as_completed(futures):
                        done.result()  # the first job to fail, whichever it is, stops the rest
                        bar.update()
                return [f.result() for f in futures]
            except BaseException:
                _stop(self.pool)
                self.pool = None
                raise

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_jobs(
    fn: Callable[[Job], Result], jobs: Sequence[Job], workers: int | str, threads: int, desc: str = "jobs"
) -> list[Result]:
    """``[fn(job) for job in jobs]``, in job order; on ``workers`` spawned processes with ``threads``
    threads each when workers > 1 (``auto``: one per `threads` usable cores, pipeline/infra/runtime.py worker_count),
    else here with this process's thread count (DML_THREADS, pipeline/numerics.py).

    `fn` must be a module-level function (it is pickled by name). An exception in a job is raised here,
    with its original type; the other jobs are then cancelled and the workers killed, as on Ctrl-C.
    """
    with Workers(workers, threads) as pool:
        return pool.run(fn, jobs, desc)
