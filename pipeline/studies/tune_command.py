"""`dml tune [RUN ...] [--trials N]`: run, resume or extend studies (pipeline/studies/tuning.py), outside `dvc repro`.

Tuning is an act of its own: it takes hours on 2 cores (a trial of a digit run trains its 4 fold models, 35-65 s),
so `dvc repro` never starts one (the values stage reads the records this writes, pipeline/studies/values.py). Each
named run (every run with a search space when none is named) gets its study completed to ``--trials`` trials
(``tune.trials`` by default); a study with fewer resumes from its Optuna journal (``data/journals/<run>.journal``) or,
on another machine, from its record, trial for trial as if never stopped. After every trial the record in progress
is ``studies/<data.name>/<study name>.partial.json`` (commit it to resume elsewhere; .dvcignore keeps it from `dvc
status`); the finished study replaces it with ``<study name>.json``, which the next `dvc repro` picks up. Ctrl-C or
SIGTERM stops the workers and the trial they were running, which leaves no record.

Needs the prepared data and cached features: ``dvc repro embed`` makes them.
"""

from __future__ import annotations

import logging
import signal
import sys
from contextlib import contextmanager
from pathlib import Path

from pipeline.config import ParamsError, apply_values
from pipeline.data.manifest import read_manifest
from pipeline.infra.io import write_json
from pipeline.infra.parallel import Workers
from pipeline.infra.runtime import train_workers
from pipeline.params.root import Params
from pipeline.studies.tuning import (
    PARTIAL,
    completed_trials,
    kept_study,
    run_study,
    study_record,
    tuning_order,
    validation_objective,
)
from pipeline.studies.values import record_base, run_values

log = logging.getLogger("pipeline.tune")


def study_base(params: Params, run: str, inherited: dict, fold_classes: list[int]) -> dict:
    """What a study's record holds besides its trials (`record_base` without the keys set in params.yaml, which
    belong to a run's values, not to its study)."""
    base = record_base(params, run, inherited, fold_classes)
    base.pop("user_set")
    return base


def tune_runs(
    params: Params, runs: list[str], trials: int, data: str, features: str, journals: Path, studies: Path
) -> dict[str, dict]:
    """Complete the studies of `runs` to `trials` trials each (module docstring); returns run -> its study's
    record. A run that inherits values (tune.inherit) takes them from its source's finished study."""
    spaced = [r for r in tuning_order(params) if params.tune.spaces.get(r)]
    unknown = [r for r in runs if r not in spaced]
    if unknown:
        raise ParamsError(f"dml tune: {', '.join(unknown)}: not a run with a search space ({', '.join(spaced)})")
    if trials < 1:
        raise ParamsError("dml tune: tune.trials is 0 in params.yaml: give --trials N")
    for folder, stage in ((data, "prepare"), (features, "embed")):
        if not Path(folder).is_dir():
            raise FileNotFoundError(f"{folder}: not found: run `dvc repro {stage}` first (a trial trains on it)")
    manifest = read_manifest(data)
    fold_classes = [manifest.num_classes("train", fold) for fold in params.experiment.folds]
    studies.mkdir(parents=True, exist_ok=True)
    journals.mkdir(parents=True, exist_ok=True)
    done: dict[str, dict] = {}
    with Workers(train_workers(params.train), params.train.threads_per_worker) as workers:
        for run in [r for r in spaced if r in (runs or spaced)]:
            source = params.tune.inherit.get(run)
            inherited = {}
            if source:
                inherited = (done.get(source) or run_values(params, source, {}, studies, fold_classes))["values"]
            folders = (data, features, journals, studies)
            done[run] = _tune_one(params, run, inherited, trials, fold_classes, folders, workers)
    return done


def _tune_one(params, run, inherited, trials, fold_classes, folders, workers) -> dict:
    data, features, journals, studies = folders
    base = study_base(params, run, inherited, fold_classes)
    fixed = apply_values(params, inherited, source=f"values {run} inherits") if inherited else params
    kept = kept_study(studies, fixed, run, inherited, partial=True)
    if kept is not None and len(kept[1]) >= trials:
        log.info("%s: study %s has %d trials (%s/): nothing to run", run, kept[0], len(kept[1]), studies)
        return study_record(base, kept[0], kept[1][:trials])
    log.info("%s: %d trials over %s (%d recorded)", run, trials, ", ".join(base["space"]), len(kept[1]) if kept else 0)

    def progress(study, values: dict, result) -> None:
        history = completed_trials(study)
        pruned = " (pruned: the best so far)" if result.pruned else ""
        log.info("%s: trial %d validation MAP@R %.4f at %s%s", run, len(history) - 1, result.value, values, pruned)
        write_json(studies / f"{study.study_name}{PARTIAL}.json", study_record(base, study.study_name, history))

    study = run_study(
        fixed,
        run,
        validation_objective(fixed, run, data, features, workers),
        journals / f"{run}.journal",
        trials,
        progress=progress,
        inherited=inherited,
        kept=kept,
    )
    record = study_record(base, study.study_name, completed_trials(study)[:trials])
    write_json(studies / f"{study.study_name}.json", record)
    (studies / f"{study.study_name}{PARTIAL}.json").unlink(missing_ok=True)
    log.info("%s: study %s finished: %s", run, study.study_name, record["values"])
    return record


@contextmanager
def stopped_by_sigterm():
    """SIGTERM unwinds like Ctrl-C: the workers and their trial stop (pipeline/infra/parallel.py Workers), and the
    command exits 128 + SIGTERM. An error raised while it unwinds (the signal cut a journal lock's acquisition, whose
    release then finds no lock file) ends it the same way: the signal, not the error, stopped it."""
    code = 128 + signal.SIGTERM
    received = []

    def stop(*_):
        received.append(True)
        sys.exit(code)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    except Exception:
        if received:
            sys.exit(code)
        raise
    finally:
        signal.signal(signal.SIGTERM, before)
