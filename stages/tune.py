"""tune: MLRC's tuning step for every configured run (pipeline/tuning.py), on the validation folds only.

For each run with a search space (`tune.spaces.<run>`) and `tune.trials` > 0, an Optuna study in
`<studies>/<run>.journal` (kept between runs: the stage resumes it, DVC `persist`) is completed to
`tune.trials` trials; the best trial's values go to `<out>/<run>.json`, the one file the run's train stage
reads and depends on (so only a change of values retrains it). Every other run gets no values: it trains at
params.yaml's values (`tune.trials: 0`, the default, keeps today's behaviour). `<records>/<run>.json` holds
the search space, the best trial and every trial (the report's table and optimisation-history figure).
"""

import logging
from pathlib import Path

from pipeline.config import to_dict
from pipeline.io import atomic_path, write_json
from pipeline.runs import all_runs
from pipeline.tuning import completed_trials, run_study, study_name, validation_objective
from stages._common import run

log = logging.getLogger("stages.tune")


def record(params, name: str, studies: Path, data: str, features: str) -> dict:
    space = params.tune.spaces.get(name, {})
    base = {"run": name, "space": to_dict(space), "trials": 0, "values": {}, "best_val_map_at_r": None, "history": []}
    if not (params.tune.trials and space):
        return base
    study = run_study(params, name, validation_objective(params, name, data, features), studies / f"{name}.journal",
                      params.tune.trials, progress=lambda n, values, value: log.info(
                          "%s: trial %d validation MAP@R %.4f at %s", name, n, value, values))
    history = completed_trials(study)
    best = max(history, key=lambda t: t["val_map_at_r"])  # the first of equal ones
    return {**base, "study": study_name(params, name), "trials": len(history), "values": best["values"],
            "best_trial": best["trial"], "best_val_map_at_r": best["val_map_at_r"], "history": history}


def main(params, args):
    studies = Path(args.studies)
    studies.mkdir(parents=True, exist_ok=True)
    records = [record(params, name, studies, args.data, args.features) for name in all_runs(params)]
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
    p.add_argument("--out", default="reports/tuned", help="folder of the values each run trains at, one JSON per run")
    p.add_argument("--records", default="reports/tuning",
                   help="folder of tuning records (space, best and every trial), one JSON per run")


if __name__ == "__main__":
    run(__doc__, configure, main)
