"""pipeline/parallel.py: jobs in spawned worker processes come back in order, with their errors."""

import os

import pytest

from pipeline.config import ParamsError
from pipeline.parallel import THREAD_VARIABLES, run_jobs


def square_and_threads(x):
    if x < 0:
        raise ParamsError(f"params.yaml: x: must be >= 0, got {x}")
    return x * x, os.getpid(), os.environ.get("OMP_NUM_THREADS")


def test_results_in_job_order_from_two_workers():
    before = {k: os.environ.get(k) for k in THREAD_VARIABLES}
    results = run_jobs(square_and_threads, [3, 1, 4, 1, 5], workers=2, threads=1)
    assert [r[0] for r in results] == [9, 1, 16, 1, 25]
    assert {r[1] for r in results} - {os.getpid()}  # they ran in other processes
    assert {r[2] for r in results} == {"1"}  # with the thread count asked for
    assert {k: os.environ.get(k) for k in THREAD_VARIABLES} == before  # and the parent's variables restored


def test_one_worker_runs_here():
    assert [r[:2] for r in run_jobs(square_and_threads, [2, 3], workers=1, threads=1)] == [(4, os.getpid()),
                                                                                         (9, os.getpid())]


def test_a_worker_error_keeps_its_type_and_message():
    with pytest.raises(ParamsError, match="x: must be >= 0, got -1"):
        run_jobs(square_and_threads, [1, -1, 2], workers=2, threads=1)
