"""ablation: one ablation study (pipeline/studies/ablation.py), every grid point trained on one fold in
``train.workers`` processes; writes one CSV row per point (the report stage draws the figures)."""

from pipeline.infra.io import write_text
from pipeline.infra.parallel import run_jobs
from pipeline.infra.runtime import train_workers
from pipeline.params.root import Params
from pipeline.studies import ablation
from pipeline.training.worker import run_fold_job
from stages._common import run


def main(params, args):
    rows, jobs = ablation.jobs(params, args.study, args.data, args.features)
    outcomes = run_jobs(
        run_fold_job, jobs, train_workers(params.train), params.train.threads_per_worker, desc=f"ablation {args.study}"
    )
    write_text(args.out, ablation.results_table(rows, outcomes).to_csv(index=False, float_format="%.6g"))


def configure(p):
    p.add_argument("--study", required=True, help="a family with an ablation study (pipeline/families)")
    p.add_argument("--data", default="data/prepared")
    p.add_argument("--features", default="data/features")
    p.add_argument("--out", required=True, help="CSV, one row per grid point")


if __name__ == "__main__":
    run(__doc__, configure, main, Params)
