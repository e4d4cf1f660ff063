"""The worker side of a training job (pipeline/jobs.py): torch is imported here, in the worker process, so the
stage that hands the jobs over (pipeline/infra/parallel.py) never imports it."""

from pipeline.jobs import FoldJob, FoldOutcome


def run_fold_job(job: FoldJob) -> FoldOutcome:
    """Run `job` (pipeline.experiment.train_and_save)."""
    from pipeline.experiment import train_and_save

    return train_and_save(job)
