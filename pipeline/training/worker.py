"""The worker side of a training job (pipeline/training/jobs.py): torch is imported here, in the worker process, so the
stage that hands the jobs over (pipeline/infra/parallel.py) never imports it."""

from pipeline.training.jobs import FoldJob, FoldOutcome


def run_fold_job(job: FoldJob) -> FoldOutcome:
    """Run `job` (pipeline.training.experiment.train_and_save)."""
    from pipeline.training.experiment import train_and_save

    return train_and_save(job)
