"""Fan the expensive stages out over many machines and assemble one report; the machines share their work
through DVC's run cache on a DVC remote. Jobs go through submitit (SLURM on a cluster; local processes to
try it, and in the tests).

1. One job runs the stages the others need (prepare, embed, tune) and pushes them with their runs.
2. `jobs` jobs share the train, ablation and LANML stages round-robin. Each clones the same commit into its
   own folder, runs `dvc repro --pull <its stages>` (the stages of step 1 are restored from their runs, not
   recomputed) and pushes its runs (`dvc push --run-cache`).
3. Here, in the workspace the fan-out started from: `dvc repro --pull` restores every pushed stage and runs
   what is left (evaluate, pictures, export, report, the cheap poc and lanml_timing).

A job killed mid-stage pushes nothing of that stage (DVC keeps a run only after its command succeeded), so
running the fan-out again redoes only what is missing. `lanml_timing` is never fanned out: its CPU times
belong to the machine that assembles.
"""

from __future__ import annotations

import argparse
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

log = logging.getLogger(__name__)
UPSTREAM = ("embed", "values")  # with their dependencies code and prepare: what every fanned stage reads
FANNED = re.compile(r"^(train|ablation|lanml)@")


def _dvc(args: list[str], cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"dvc {' '.join(args)} failed in {cwd}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr


def stages_run(output: str) -> list[str]:
    """The stages a `dvc repro` output says it ran (not those restored or skipped)."""
    return re.findall(r"Running stage '([^']+)'", output)


def fanned_stages(root: Path) -> list[str]:
    """The train, ablation and LANML stages of the project at `root`, in dvc.yaml's order."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        names = [stage.name for stage in repo.index.stages]  # not .addressing: relative to the cwd
    return [n for n in names if FANNED.match(n)]


def run_job(origin: str, commit: str, remote: str, folder: str, targets: list[str]) -> list[str]:
    """One job: clone `origin` at `commit` into `folder`, reproduce `targets` pulling what the remote has,
    push the runs; the stages it ran. The clone is removed afterwards."""
    where = Path(folder)
    shutil.rmtree(where, ignore_errors=True)  # a job resubmitted after a kill starts clean
    subprocess.run(["git", "clone", "-q", origin, str(where)], check=True, capture_output=True)
    subprocess.run(["git", "checkout", "-q", commit], cwd=where, check=True, capture_output=True)
    try:
        _dvc(["remote", "add", "--local", "-f", "-d", "fanout", remote], where)
        ran = stages_run(_dvc(["repro", "--pull", *targets], where))
        _dvc(["push", "--run-cache"], where)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    return ran


def _remote_url(root: Path) -> str:
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        name = repo.config["core"].get("remote")
        if not name:
            raise RuntimeError(
                "no default DVC remote: add one every machine reaches, e.g. "
                "`dvc remote add -d shared /shared/dml-remote`"
            )
        url = repo.config["remote"][name]["url"]
    return str((root / url).resolve()) if "://" not in url and not Path(url).is_absolute() else url


def _commit(root: Path) -> str:
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    if status.strip():
        raise RuntimeError(f"{root}: commit your changes first (the jobs clone the current commit):\n{status}")
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def fan_out(root: Path, executor, jobs: int, folder: Path, origin: str | None = None) -> dict[str, list[str]]:
    """Steps 1-3 of the module docstring with a submitit `executor`; which stages ran where."""
    root = root.resolve()
    commit, remote = _commit(root), _remote_url(root)
    origin = origin or str(root)
    log.info("fan-out of %s at %s through %s", origin, commit[:10], remote)
    first = executor.submit(run_job, origin, commit, remote, str(folder / "upstream"), list(UPSTREAM))
    ran = {"upstream": first.result()}
    stages = fanned_stages(root)
    groups = [stages[i::jobs] for i in range(min(jobs, len(stages)))]
    submitted = [
        executor.submit(run_job, origin, commit, remote, str(folder / f"job-{i}"), group)
        for i, group in enumerate(groups)
    ]
    for i, job in enumerate(submitted):
        ran[f"job-{i}"] = job.result()
        log.info("job %d ran %s", i, ", ".join(ran[f"job-{i}"]) or "nothing")
    ran["here"] = stages_run(_dvc(["repro", "--pull"], root))
    return ran


def make_executor(
    cluster: str, folder: Path, timeout_min: int, cpus_per_task: int, gpus_per_node: int, partition: str | None
):
    """submitit's executor: ``slurm`` (sbatch), ``local`` (processes on this machine) or ``auto`` (SLURM when
    sbatch is on PATH, else local)."""
    import submitit

    executor = submitit.AutoExecutor(folder=folder / "submitit", cluster=None if cluster == "auto" else cluster)
    executor.update_parameters(
        timeout_min=timeout_min,
        cpus_per_task=cpus_per_task,
        gpus_per_node=gpus_per_node,
        **({"slurm_partition": partition} if partition else {}),
    )
    return executor


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=8, help="jobs sharing the train, ablation and LANML stages")
    p.add_argument("--cluster", choices=("auto", "slurm", "local"), default="auto")
    p.add_argument(
        "--folder", type=Path, required=True, help="a folder every machine sees (job clones and submitit's logs)"
    )
    p.add_argument("--origin", help="the git URL or path the jobs clone (default: this workspace)")
    p.add_argument("--timeout-min", type=int, default=24 * 60)
    p.add_argument("--cpus-per-task", type=int, default=8)
    p.add_argument("--gpus-per-node", type=int, default=0)
    p.add_argument("--partition", help="SLURM partition")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    executor = make_executor(
        args.cluster, args.folder, args.timeout_min, args.cpus_per_task, args.gpus_per_node, args.partition
    )
    try:
        ran = fan_out(Path.cwd(), executor, args.jobs, args.folder, args.origin)
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    for where, stages in ran.items():
        print(f"{where}: {', '.join(stages) or '-'}")


if __name__ == "__main__":
    main()
