"""train: one run (a method, or a CCP / PROFS loss x variant): a model per MLRC fold and replicate seed.

The models train in ``train.workers`` processes. Writes per model (``fold-<k>-seed-<s>``) the best
weights, the test embeddings and a summary, the per-epoch log (dvc plots) and a sub-problem table (one row per
sub-problem of an outer-loop method, none for the others). Each output folder appears complete or not at all.
The run's settings come from params.yaml with the values stage's values applied; they must be those the values stage
recorded in `--tuned` (what DVC saw change), or the stage stops.

Under torchrun (``train.launcher``), every process trains the models one after the other with
DistributedDataParallel (pipeline/batching/distributed.py) and only rank 0 writes.
"""

from contextlib import ExitStack
from pathlib import Path

import pandas as pd

from pipeline.config import ParamsError
from pipeline.infra.io import atomic_path
from pipeline.infra.parallel import run_jobs
from pipeline.infra.runtime import launched_by_torchrun, train_workers
from pipeline.params.root import Params
from pipeline.runs import all_runs, model_ids, model_name, run_setup, trained_setup
from pipeline.training.jobs import FoldJob
from pipeline.training.worker import run_fold_job
from stages._common import run

SUBPROBLEM_COLUMNS = [
    "subproblem",
    "epochs",
    "steps",
    "best_val_map_at_r",
    "initial_radius_max",
    "initial_radius_mean",
    "covering_radius_max",
    "covering_radius_mean",
    "lambda",
    "proxy_shift_first_epoch_mean",
    "proxy_shift_first_epoch_max",
    "proxy_shift_mean",
    "proxy_shift_max",
]


def main(params, args):
    source = Path(args.params).name
    runs = all_runs(params)
    if args.method not in runs:
        raise ParamsError(
            f"{source}: method {args.method!r} is not one of the configured runs "
            f"({', '.join(runs)}; see experiment.methods and the method families' losses and variants)"
        )
    # all the workers see of params: with the values stage's values for this run (none: params as written)
    setup = trained_setup(params, args.method, args.tuned, source) if args.tuned else run_setup(params, args.method)
    models = model_ids(params)
    ranked = launched_by_torchrun()
    if ranked and _join_ranks() != 0:  # the other ranks train alongside rank 0 and write nothing
        for fold, seed in models:
            run_fold_job(FoldJob(setup, fold, args.data, args.features, seed=seed))
        return
    with ExitStack() as stack:
        out, logs = (stack.enter_context(atomic_path(p)) for p in (args.out, args.train_logs))
        out.mkdir()  # the workers create only their own model folders in it
        subproblems = stack.enter_context(atomic_path(args.subproblems)) if args.subproblems else None
        jobs = [
            FoldJob(setup, fold, args.data, args.features, str(out / model_name(fold, seed)), seed=seed)
            for fold, seed in models
        ]
        outcomes = (
            [run_fold_job(job) for job in jobs]
            if ranked
            else run_jobs(
                run_fold_job, jobs, train_workers(params.train), params.train.threads_per_worker, desc=args.method
            )
        )
        for d in (logs, subproblems):
            if d is not None:
                d.mkdir()
        for (fold, seed), outcome in zip(models, outcomes):
            name = f"{model_name(fold, seed)}.csv"
            pd.DataFrame(outcome.history).to_csv(logs / name, index=False, float_format="%.6f")
            if subproblems is not None:
                table = pd.DataFrame(outcome.diagnostics, columns=SUBPROBLEM_COLUMNS)  # no rows: no sub-problems
                table.to_csv(subproblems / name, index=False, float_format="%.6f")


def _join_ranks() -> int:
    from pipeline.batching.distributed import init_from_env  # imports torch: only under torchrun

    return init_from_env()


def configure(p):
    p.add_argument("--method", required=True)
    p.add_argument("--data", default="data/prepared")
    p.add_argument("--features", default="data/features")
    p.add_argument("--out", required=True, help="model folder (one fold-<k>-seed-<s> folder per model)")
    p.add_argument(
        "--train-logs",
        required=True,
        help="folder of per-epoch CSV logs, one per model (dvc plots); "
        "not --logs: torchrun would take that for its --logs-specs",
    )
    p.add_argument("--subproblems", help="folder of CSVs with one row per sub-problem (outer-loop methods)")
    p.add_argument("--tuned", help="the values stage's values and settings for this run (data/tuned/<run>.json)")


if __name__ == "__main__":
    run(__doc__, configure, main, Params)
