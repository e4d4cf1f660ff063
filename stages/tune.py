"""tune: MLRC's tuning step for every configured run (pipeline/tuning.py), on the validation folds only.

For each run with a search space (`tune.spaces.<run>`) and `tune.trials` > 0, an Optuna study in
`<studies>/<run>.journal` (kept between runs and resumed: a working store like the download folder, not
a DVC output, which DVC would delete before a rerun and which would keep DVC from caching the stage's runs;
resuming proposes what an uninterrupted study would, pipeline/tuning.py) is completed to
`tune.trials` trials; the best trial's values, with those the run inherits (`tune.inherit`), go to
`<out>/<run>.json`, the one file the run's train stage reads and depends on (so only a change of values
retrains it). A run without a space trains at the values it inherits, or at params.yaml's (`tune.trials: 0`,
the default, keeps today's behaviour). `<records>/<run>.json` holds the search space, the inherited values,
the best trial and every trial (the report's table and optimisation-history figure).
"""

import logging
from pathlib import Path

from pipeline.config import to_dict
from pipeline.infra.io import atomic_path, write_json
from pipeline.tuning import apply_values, completed_trials, run_study, tuning_order, validation_objective
from stages._common import run

log = logging.getLogger("stages.tune")


def record(params, name: str, inherited: dict, studies: Path, data: str, features: str) -> dict:
    space = params.tune.spaces.get(name, {})
    base = {
        "run": name,
        "space": to_dict(space),
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
    log.info(
        "%s: %d trials over %s%s",
        name,
        params.tune.trials,
        ", ".join(space),
        f" at {base['inherits']}'s {inherited}" if inherited else "",
    )
    study = run_study(
        fixed,
        name,
        validation_objective(fixed, name, data, features),
        studies / f"{name}.journal",
        params.tune.trials,
        progress=lambda n, values, value: log.info("%s: trial %d validation MAP@R %.4f at %s", name, n, value, values),
        inherited=inherited,
    )
    history = completed_trials(study)
    best = max(history, key=lambda t: t["val_map_at_r"])  # the first of equal ones
    return {
        **base,
        "study": study.study_name,
        "trials": len(history),
        "values": {**inherited, **best["values"]},
        "best_trial": best["trial"],
        "best_val_map_at_r": best["val_map_at_r"],
        "history": history,
    }


def main(params, args):
    studies = Path(args.studies)
    studies.mkdir(parents=True, exist_ok=True)
    records: dict[str, dict] = {}
    for name in tuning_order(params):  # a run's source first: its values are fixed in the run's study
        source = params.tune.inherit.get(name)
        inherited = records[source]["values"] if source else {}
        records[name] = record(params, name, inherited, studies, args.data, args.features)
    records = list(records.values())
    with atomic_path(args.out) as out, atomic_path(args.records) as full:
        for folder in (out, full):
            folder.mkdir()
        for r in records:
            write_json(out / f"{r['run']}.json", {"run": r["run"], "values": r["values"]})
            write_json(full / f"{r['run']}.json", r)


def configure(p):
    p.add_argument("--data", default="data/prepared")
    p.add_argument("--features", default="data/features")
    p.add_argument("--studies", default="data/tune", help="folder of Optuna journal files, one per tuned run")
    p.add_argument("--out", default="data/tuned", help="folder of the values each run trains at, one JSON per run")
    p.add_argument(
        "--records",
        default="data/tuning",
        help="folder of tuning records (space, best and every trial), one JSON per run",
    )


if __name__ == "__main__":
    run(__doc__, configure, main)
