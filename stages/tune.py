"""tune: MLRC's tuning step for every configured run (pipeline/studies/tuning.py), on the validation folds only.

For each run with a search space (`tune.spaces.<run>`) and `tune.trials` > 0, an Optuna study in
`<studies>/<run>.journal` (kept between runs and resumed: a working store like the download folder, not
a DVC output, which DVC would delete before a rerun and which would keep DVC from caching the stage's runs;
resuming proposes what an uninterrupted study would, pipeline/studies/tuning.py) is completed to
`tune.trials` trials; the best trial's values, with those the run inherits (`tune.inherit`), go to
`<out>/<run>.json`, the one file the run's train stage reads and depends on (so only a change of values
retrains it). A run without a space trains at the values it inherits, or at params.yaml's (`tune.trials: 0`).
`<records>/<run>.json` holds the search space, the inherited values, the best trial and every trial (the report's
table and optimisation-history figure).

Progress that survives the machine: after every trial the study's record is also written to
`<finished>/<study name>.json` (dvc.yaml: `studies/<data.name>/`, tracked in git, a few kilobytes). A study whose
record holds `tune.trials` trials is not run again (pipeline/studies/tuning.py finished_study); one whose record
holds fewer (stopped mid-study, or finished when fewer trials were asked) goes on from it on a machine without its
journal (run_study `kept`: the trials are replayed, so the sampler proposes what it would have). A long tune (the
emoji default's 29 studies) can be stopped at any point, its records committed, and taken up on another machine
where it stopped, losing at most the trial that was running. The fold models of every trial train in one set of
worker processes kept for the whole stage (pipeline/infra/parallel.py Workers).
"""

import logging
from pathlib import Path

from pipeline.config import apply_values
from pipeline.data.manifest import read_manifest
from pipeline.infra.io import atomic_path, write_json
from pipeline.infra.parallel import Workers
from pipeline.infra.runtime import train_workers
from pipeline.params.root import Params
from pipeline.runs import run_record
from pipeline.studies.tuning import (
    completed_trials,
    finished_study,
    inert_while,
    kept_study,
    key_limits,
    run_study,
    space_dict,
    study_record,
    tuning_order,
    validation_objective,
)
from stages._common import run

log = logging.getLogger("stages.tune")


def record(params, name: str, inherited: dict, args, workers: Workers, fold_classes: list[int]) -> dict:
    space = params.tune.spaces.get(name, {})
    base = {
        "run": name,
        "space": space_dict(space),
        "limits": {key: list(key_limits(params, key, dim)) for key, dim in space.items()},  # reporting at_limit
        # when a key changes nothing (PROFS's rho and lambda where M = 1): reporting at_limit
        "inert_while": {key: when for key in space if (when := inert_while(params, key, fold_classes))},
        "inherits": params.tune.inherit.get(name),
        "inherited": inherited,
        "trials": 0,
        "values": dict(inherited),
        "best_val_map_at_r": None,
        "history": [],
    }
    if not (params.tune.trials and space):
        return base
    fixed = apply_values(params, inherited, source=f"values {name} inherits") if inherited else params
    finished = Path(args.finished)
    if (kept := finished_study(finished, fixed, name, inherited)) is not None:
        log.info("%s: study %s finished (%s/%s.json): not run again", name, kept[0], finished, kept[0])
        return study_record(base, *kept)
    log.info(
        "%s: %d trials over %s%s",
        name,
        params.tune.trials,
        ", ".join(space),
        f" at {base['inherits']}'s {inherited}" if inherited else "",
    )

    def progress(study, values: dict, result) -> None:
        trials = completed_trials(study)
        pruned = " (pruned: the best so far)" if result.pruned else ""
        log.info("%s: trial %d validation MAP@R %.4f at %s%s", name, len(trials) - 1, result.value, values, pruned)
        # every trial into git's folder: committed, the study goes on from it on any machine (run_study `kept`)
        write_json(finished / f"{study.study_name}.json", study_record(base, study.study_name, trials))

    study = run_study(
        fixed,
        name,
        validation_objective(fixed, name, args.data, args.features, workers),
        Path(args.studies) / f"{name}.journal",
        params.tune.trials,
        progress=progress,
        inherited=inherited,
        kept=kept_study(finished, fixed, name, inherited),  # in progress, or finished at fewer trials
    )
    # the first tune.trials trials: a journal that ran more (trials lowered since) still gives this study
    done = study_record(base, study.study_name, completed_trials(study)[: params.tune.trials])
    write_json(finished / f"{study.study_name}.json", done)
    return done


def trained_with(params, name: str, values: dict) -> dict:
    """What run `name`'s train stage reads and depends on: the tuned values and the run's settings with them
    applied (its params section, pipeline/runs.py run_record), so that a change of a run's settings
    reruns its train stage and no other (dvc.yaml's one train stage lists only the settings every run shares)."""
    tuned = apply_values(params, values, source=f"values of {name}") if values else params
    return {"run": name, "values": values, "settings": run_record(tuned, name)}


def main(params, args):
    Path(args.studies).mkdir(parents=True, exist_ok=True)
    records: dict[str, dict] = {}
    manifest = read_manifest(args.data)
    fold_classes = [manifest.num_classes("train", fold) for fold in params.experiment.folds]  # L, for inert_while
    with Workers(train_workers(params.train), params.train.threads_per_worker) as workers:  # across all trials
        for name in tuning_order(params):  # a run's source first: its values are fixed in the run's study
            source = params.tune.inherit.get(name)
            inherited = records[source]["values"] if source else {}
            records[name] = record(params, name, inherited, args, workers, fold_classes)
    with atomic_path(args.out) as out, atomic_path(args.records) as full:
        for folder in (out, full):
            folder.mkdir()
        for r in records.values():
            write_json(out / f"{r['run']}.json", trained_with(params, r["run"], r["values"]))
            write_json(full / f"{r['run']}.json", r)


def configure(p):
    p.add_argument("--data", default="data/prepared")
    p.add_argument("--features", default="data/features")
    p.add_argument("--studies", default="data/tune", help="folder of Optuna journal files, one per tuned run")
    p.add_argument(
        "--finished",
        default="studies",
        help="folder of the studies' records, one <study name>.json each, kept in git (read before a study runs, "
        "written after every trial)",
    )
    p.add_argument("--out", default="data/tuned", help="folder of the values each run trains at, one JSON per run")
    p.add_argument(
        "--records",
        default="data/tuning",
        help="folder of tuning records (space, best and every trial), one JSON per run",
    )


if __name__ == "__main__":
    run(__doc__, configure, main, Params)
