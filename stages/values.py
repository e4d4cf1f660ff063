"""values: the values each run trains at (pipeline/studies/values.py): a key set in params.yaml, else its run's
finished study's best (``--studies``: studies/<data.name>/, written by `dml tune`), else tune.start's.

Writes ``<out>/<run>.json``, the one file a run's train stage reads and depends on (the values and the run's
settings with them applied: a change of them retrains that run only), and ``<records>/<run>.json`` (the search
space, the keys set in params.yaml, the best trial and every trial: the report's tuning table and figure). Runs no
trial: a run whose study is missing stops the stage with one line naming it and the command that makes it.
"""

from pathlib import Path

from pipeline.config import apply_values
from pipeline.data.manifest import read_manifest
from pipeline.infra.io import atomic_path, write_json
from pipeline.params.root import Params
from pipeline.runs import run_record
from pipeline.studies.tuning import tuning_order
from pipeline.studies.values import all_run_values
from stages._common import run


def trained_with(params, name: str, values: dict) -> dict:
    """What run `name`'s train stage reads and depends on: the values and the run's settings with them applied (its
    params section, pipeline/runs.py run_record), so that a change of a run's settings reruns its train stage and
    no other (dvc.yaml's one train stage lists only the settings every run shares)."""
    tuned = apply_values(params, values, source=f"values of {name}") if values else params
    return {"run": name, "values": values, "settings": run_record(tuned, name)}


def main(params, args):
    manifest = read_manifest(args.data)
    fold_classes = [manifest.num_classes("train", fold) for fold in params.experiment.folds]  # L, for inert_while
    records = all_run_values(params, tuning_order(params), Path(args.studies), fold_classes)
    with atomic_path(args.out) as out, atomic_path(args.records) as full:
        for folder in (out, full):
            folder.mkdir()
        for r in records.values():
            write_json(out / f"{r['run']}.json", trained_with(params, r["run"], r["values"]))
            write_json(full / f"{r['run']}.json", r)


def configure(p):
    p.add_argument("--data", default="data/prepared")
    p.add_argument("--studies", default="studies", help="folder of the finished studies' records (dml tune)")
    p.add_argument("--out", default="data/tuned", help="folder of the values each run trains at, one JSON per run")
    p.add_argument("--records", default="data/tuning", help="folder of the runs' records (space, best and every trial)")


if __name__ == "__main__":
    run(__doc__, configure, main, Params)
