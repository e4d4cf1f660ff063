"""The values each run trains at: what the values stage (stages/values.py) writes and every train stage reads.

For each key of a run's search space (``tune.spaces.<run>``), in this order:
- a number written in params.yaml (``dvc exp run -S ccp.lambda=1e-3``) is the user's value: the run trains at it
  and the report marks the run "user values" (pipeline/reporting/tuning.py study_flaw);
- a key that reads ``study`` (``tune.studied``, pipeline/config/loader.py) takes the best trial's value of the run's
  finished study, the record ``studies/<data.name>/<study name>.json`` that `dml tune` writes;
- with ``tune.trials: 0`` there is no study, and such a key trains at its ``tune.start`` value.

Nothing here runs a trial: a run that needs a study and has none stops the stage with one line naming the run and
the command that makes it (``dml tune <run>``). A run with no space trains at params.yaml's values.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.config import dotted, to_dict
from pipeline.infra.errors import PipelineError
from pipeline.params.root import Params
from pipeline.studies.tuning import finished_study, inert_while, key_limits, space_dict, study_name, study_record


class MissingStudy(PipelineError):
    """A run needs a finished study that its record folder does not hold."""


def record_base(params: Params, run: str, inherited: dict, fold_classes: list[int]) -> dict:
    """A run's record before any study: its space, the keys' own limits and when they change nothing (the report's
    range-end rule), the values it inherits, the keys set in params.yaml (`user_set`), no trial."""
    space = params.tune.spaces.get(run, {})
    written = to_dict(params)
    return {
        "run": run,
        "space": space_dict(space),
        "limits": {key: list(key_limits(params, key, dim)) for key, dim in space.items()},
        "inert_while": {key: when for key in space if (when := inert_while(params, key, fold_classes))},
        "inherits": params.tune.inherit.get(run),
        "inherited": inherited,
        "user_set": {key: dotted(written, key) for key in space if key not in params.tune.studied},
        "trials": 0,
        "values": dict(inherited),
        "best_val_map_at_r": None,
        "history": [],
    }


def needs_study(params: Params, run: str) -> bool:
    """Whether `run` trains at a study's values: it has a space, tune.trials > 0 and a key of it reads `study`."""
    space = params.tune.spaces.get(run, {})
    return bool(params.tune.trials) and any(key in params.tune.studied for key in space)


def run_values(params: Params, run: str, inherited: dict, studies: Path, fold_classes: list[int]) -> dict:
    """`run`'s record (`record_base`, with its finished study's trials and best values where it needs one), whose
    ``values`` are what it trains at on top of params.yaml: the study's best for the keys that read `study`, the
    inherited ones; raises MissingStudy when the study it needs is not finished in `studies`."""
    from pipeline.config import apply_values

    base = record_base(params, run, inherited, fold_classes)
    if not needs_study(params, run):
        return base
    fixed = apply_values(params, inherited, source=f"values {run} inherits") if inherited else params
    kept = finished_study(studies, fixed, run, inherited)
    if kept is None:
        name = study_name(fixed, run, inherited)
        raise MissingStudy(f"{run}: no finished study of {params.tune.trials} trials ({studies}/{name}.json)")
    record = study_record(base, *kept)
    record["values"] = {k: v for k, v in record["values"].items() if k not in base["user_set"]}
    return record


def all_run_values(params: Params, runs: list[str], studies: Path, fold_classes: list[int]) -> dict[str, dict]:
    """`run_values` of every run of `runs` (in tuning order: a run's source first); one MissingStudy naming every run
    without the study it needs, and the command that makes them."""
    records, missing = {}, []
    for run in runs:
        source = params.tune.inherit.get(run)
        inherited = records[source]["values"] if source in records else {}
        try:
            records[run] = run_values(params, run, inherited, studies, fold_classes)
        except MissingStudy:
            missing.append(run)
    if missing:
        raise MissingStudy(
            f"no finished study in {studies}/ for {', '.join(missing)}: run `dml tune {' '.join(missing)}` "
            f"(tuning: docs/tuning.md), set their searched keys in params.yaml, or train at tune.start's values "
            f"with tune.trials=0"
        )
    return records
