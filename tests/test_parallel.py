"""pipeline/infra/parallel.py: jobs in spawned worker processes come back in order, with their errors, and the
workers end with the stage process (killed, interrupted or failed)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.config import ParamsError
from pipeline.infra.parallel import THREAD_VARIABLES, run_jobs
from tests.conftest import ROOT


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
    assert [r[:2] for r in run_jobs(square_and_threads, [2, 3], workers=1, threads=1)] == [
        (4, os.getpid()),
        (9, os.getpid()),
    ]


def test_a_worker_error_keeps_its_type_and_message():
    with pytest.raises(ParamsError, match="x: must be >= 0, got -1"):
        run_jobs(square_and_threads, [1, -1, 2], workers=2, threads=1)


def sleep_and_say_pid(folder):
    (Path(folder) / str(os.getpid())).touch()
    time.sleep(120)


# Ctrl-C as a terminal's foreground process meets it: a shell without job control starts a background command
# (`cmd &`, so this suite too) with SIGINT ignored, which Python and its children would inherit.
STAGE_LIKE = (
    "import signal, sys, pipeline; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from pipeline.infra.parallel import run_jobs; from tests.test_parallel import sleep_and_say_pid; "
    "run_jobs(sleep_and_say_pid, [sys.argv[1]] * 4, workers=2, threads=1)"
)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _start_stage_like(folder):
    process = subprocess.Popen(
        [sys.executable, "-c", STAGE_LIKE, str(folder)],
        cwd=ROOT,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while len(list(folder.iterdir())) < 2:  # both workers are in a job
        assert time.monotonic() < deadline and process.poll() is None, process.stderr.read() if process.poll() else ""
        time.sleep(0.1)
    return process, [int(p.name) for p in folder.iterdir()]


def _gone_within(pids, seconds):
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(_alive(p) for p in pids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_a_killed_stage_process(tmp_path):
    process, workers = _start_stage_like(tmp_path)
    os.kill(process.pid, signal.SIGKILL)  # no handler, no cleanup: the kernel ends the workers
    process.wait()
    assert _gone_within(workers, 5)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_two_quick_ctrl_c_end_the_stage_and_its_workers_promptly(tmp_path):
    process, workers = _start_stage_like(tmp_path)
    started = time.monotonic()
    for _ in range(2):  # what a terminal does: SIGINT to the whole process group, twice, 50 ms apart
        os.killpg(process.pid, signal.SIGINT)
        time.sleep(0.05)
    assert process.wait(timeout=10) != 0 and time.monotonic() - started < 10
    assert "KeyboardInterrupt" in process.stderr.read()
    assert _gone_within(workers, 5)
    assert len(list(tmp_path.iterdir())) == 2  # the pending jobs were cancelled, not started


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_failed_job_stops_the_others(tmp_path):
    code = (
        "import sys, pipeline; from pipeline.infra.parallel import run_jobs; from tests.test_parallel import "
        "sleep_or_fail; run_jobs(sleep_or_fail, [(sys.argv[1], 'sleep'), (sys.argv[1], 'fail')], 2, 1)"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert done.returncode != 0 and "ParamsError" in done.stderr and time.monotonic() - started < 30
    assert _gone_within([int(p.name) for p in tmp_path.iterdir()], 5)


def sleep_or_fail(job):
    folder, what = job
    if what == "fail":
        time.sleep(1)
        raise ParamsError("params.yaml: x: failed on purpose")
    sleep_and_say_pid(folder)
