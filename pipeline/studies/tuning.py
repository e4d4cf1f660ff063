"""MLRC's tuning step: each run's hyperparameters searched on the validation folds, never the test classes.

"A Metric Learning Reality Check" tunes every method before comparing (powerful-benchmarker: Bayesian
optimisation, 50 trials per method and data set, objective = mean validation MAP@R over the 4 class-disjoint
folds, then the best point retrained and tested). Here one Optuna study per run: a trial sets the run's
`tune.spaces.<run>` keys (dotted params keys) and trains every MLRC fold with the first replicate seed, with
`test=False` (pipeline/training/experiment.py: no test row is selected, read or embedded); its value is the mean over
the folds of the best validation MAP@R, the number early stopping keeps.

Shared values. A family's variants read one set of loss keys (ccp.c2.* for c2_batch, c2_loss_proxy, c2_ccp;
profs.ms.* for ms_plain, ms_profs, ms_profs_hncm). `tune.inherit` names the run that tunes them: an inheriting
run trains at that run's values and searches only its own space (CCP's lambda and pool size, PROFS's lambda and
rho) with them fixed, as the CCP supplement took MLRC's values of the plain loss for every variant.

Determinism and resumption. The study lives in an Optuna journal file. Trial n's sampler (TPE or GP) is
created afresh, seeded from (seed, run, n), and sees the n completed trials before it; so a study that was
interrupted and resumed proposes exactly what an uninterrupted one would, and the same params give the same
trials. A trial that was running when its process died is marked failed on resume and redone. The study's
name carries a fingerprint of every setting that changes what a trial measures, so changed params start a
new study in the same file instead of mixing trials of two settings; more trials continue one. Where the journal
is gone (another machine), a study's record (`dml tune` writes it after every trial, pipeline/studies/tune_command.py)
is replayed into a new journal and the study goes on from it, trial for trial as if never stopped (`replay`).

Pruning (`tune.pruner`, off unless its rule is set). A trial's fold models may be stopped early when they trail the
study's completed trials on their fold (pipeline/training/pruning.py: the best validation MAP@R so far against a
percentile of theirs at the same epoch, never a model still climbing); the first one cut stops its siblings (a file
they share), and the trial is recorded as pruned, counts among `tune.trials` (every arm gets the same number of
trials) and is never chosen. Whether a trial is pruned depends only on its folds' own curves; when its siblings
stopped depends on the processes' pace, so nothing of that is recorded (no partial value: TPE ranks every pruned
trial below the completed ones, alike). The completed trials keep their
fold curves in the journal (the floors; benchmarks/bench_tune.py replays the rule on them); the rule is in the
study's name when it is on.

The epoch cap. A trial whose fold models all stopped before `train.max_epochs` (by patience or the method)
measures the same under any cap it stayed below, so the cap is not in the fingerprint: each trial records the
cap it ran at, the most epochs a fold model trained and whether one stopped at the cap. A study whose every trial
holds under the current cap goes on; one with a trial the cap cut, or one that trained beyond a lowered cap, is
altered by the change and runs again as ``<name>-epochs<cap>`` (raising the cap for a data set re-runs exactly
the studies it cut). That study starts from the old one's trials before the first it alters, which it would only
repeat (trial n depends only on the trials before it, and each of them stopped below both caps), with pruning off
(the records keep no fold curves for its floors).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from itertools import accumulate
from pathlib import Path

import numpy as np

from pipeline.config import ParamsError, apply_values, field_name, to_dict
from pipeline.config.tune import SearchDim
from pipeline.infra.parallel import Workers
from pipeline.infra.runtime import derive_seed
from pipeline.params.root import Params
from pipeline.runs import all_runs, run_record, run_section, run_setup, run_train_config
from pipeline.training.pruning import Floor

log = logging.getLogger(__name__)


def _above(dim: SearchDim | dict) -> str | None:
    return dim.get("above") if isinstance(dim, dict) else dim.above  # a record's space (plain data) or the params'


def draw_name(key: str, dim: SearchDim | dict) -> str:
    """What the sampler draws for `key`: the key itself, or ``<key> - <other>``, its excess over the key it is kept
    above (SearchDim.above)."""
    return f"{key} - {above}" if (above := _above(dim)) else key


def suggest(trial, space: dict[str, SearchDim]) -> dict[str, float]:
    """One draw per key of the space from an Optuna trial, by `draw_name` (key order fixes the sampler's draws)."""
    out = {}
    for key, dim in space.items():
        name = draw_name(key, dim)
        if dim.integer:
            out[name] = trial.suggest_int(name, int(dim.low), int(dim.high), log=dim.log)
        else:
            out[name] = trial.suggest_float(name, dim.low, dim.high, log=dim.log)
    return out


def applied(draws: dict[str, float], space: dict[str, SearchDim] | dict[str, dict]) -> dict[str, float]:
    """The params values of a trial's draws (`suggest`), in their order: a key drawn as its excess over another is
    that key's value plus the draw (C2: beta = alpha + m+, the positive margin m+ = beta - alpha >= 0, CCP eq. 4.2)."""
    values = dict(draws)
    for key, dim in space.items():  # in space order: the key another is kept above comes first (check_tune)
        if above := _above(dim):
            name = draw_name(key, dim)
            values = {(key if n == name else n): (v + values[above] if n == name else v) for n, v in values.items()}
    return values


def space_dict(space: dict[str, SearchDim]) -> dict[str, dict]:
    """A space as plain data (names and records), `above` only where set: it was added after studies were recorded,
    which keep their names and records."""
    return {key: {k: v for k, v in to_dict(dim).items() if k != "above" or v is not None} for key, dim in space.items()}


_LOCATIONS = ("source", "download_dir", "mirror")  # where the data set's files come from, not what they hold
# settings added after studies were recorded (studies/), named only where they differ from their default, which
# is what every earlier study ran with: adding a setting keeps the finished studies
_NAMED_WHEN_CHANGED = {"data": {"background": "white"}}


def _child(node, part: str):
    return node[part] if isinstance(node, dict) else getattr(node, field_name(part))


# The top of the paper's reading of a key, where the schema sets no bound because the other reading is a user's to
# take (a range beyond it): PROFS's lambda, eq. 4.7's proximal weight. Its projection steps approximate the set
# indicator for small lambda (eq. 2.3-2.4; "lambda should be as small as possible", section 5.4.2); we read small as
# lambda <= 1, the hinge's weight 1 / lambda in eq. 2.4 at least 1 against the proximal term's fixed 1/2. Above it a
# step is less a projection than a shortened step of the plain loss, which the plain arm cannot take (docs/tuning.md).
READING_TOPS = {"profs.lambda": 1.0}


def key_limits(params: Params, key: str, dim: SearchDim | None = None) -> tuple[float | None, float | None]:
    """The bounds the schema itself puts on a searched dotted key (pydantic's ``ge``/``gt`` and ``le``/``lt``, a
    ``ge_field`` naming a key it may not be below, as CCP's pool size and its proxies per class, and an ``lt_field``
    naming one it must stay below, as PROFS's hard classes and the classes per batch: a sibling, or a dotted key
    from the root; ``le_in_unit_ball`` where the method section normalises into the unit ball, as a contrastive
    margin's 2; and `READING_TOPS`, the top of the paper's reading of the key, as PROFS's small lambda; None where
    it puts none): where the key stops meaning what its loss says (a margin below 0, a cosine
    radius above 1, a pool smaller than the proxies Algorithm 2 picks from it, a margin beyond every distance), so a
    search range may end there without having stopped short (pipeline/reporting/tuning.py). For a key drawn as its
    excess over another (`dim.above`), the bounds of the draw: 0 below (the key at the other's value), none above."""
    if dim is not None and dim.above:
        return 0.0, None
    *path, last = key.split(".")
    nodes = list(accumulate(path, _child, initial=params))  # params, then each section down to the key's
    node = nodes[-1]
    info = type(node).__pydantic_fields__[field_name(last)]
    extra = info.json_schema_extra or {}
    # the method section's normalisation, if the key is in one
    norm = next((n.embedding_norm for n in reversed(nodes) if hasattr(n, "embedding_norm")), None)

    def other(name: str):  # a sibling of the key, or a dotted key from the root
        return reduce(_child, name.split("."), params if "." in name else node)

    low = [getattr(m, bound) for m in info.metadata for bound in ("ge", "gt") if hasattr(m, bound)]
    if "ge_field" in extra:
        low.append(other(extra["ge_field"]))
    high = [getattr(m, bound) for m in info.metadata for bound in ("le", "lt") if hasattr(m, bound)]
    if "lt_field" in extra:
        high.append(other(extra["lt_field"]) - (1 if info.annotation is int else 0))  # an integer's largest: one below
    if "le_in_unit_ball" in extra and norm in ("l2", "lipschitz"):  # distances at most 2 (a contrastive margin's)
        high.append(extra["le_in_unit_ball"])
    if key in READING_TOPS:
        high.append(READING_TOPS[key])
    return (max(low) if low else None, min(high) if high else None)


def inert_while(params: Params, key: str, fold_classes: list[int]) -> dict[str, float]:
    """When a searched key changes nothing: {other key: value}, while each is at or below its value (`fold_classes`:
    each fold's training classes), so that a best value of the key at a range end there is no clipped search
    (pipeline/reporting/tuning.py `at_limit`); {} for a key that always matters. PROFS (section 5.4.1): M =
    ceil(rho / p(y)), p(y) = B / (I L), is 1, its floor, for every rho <= p(y) on every fold; then rho's value
    changes nothing, and neither does lambda: eq. 4.7's proximal term is 0 at a projection's one step (theta =
    theta^(k))."""
    if key not in ("profs.rho", "profs.lambda") or params.profs.m_mode != "derived" or not fold_classes:
        return {}
    from pipeline.methods.profs import one_step_rho

    train = params.train
    return {"profs.rho": min(one_step_rho(train.batch_size, train.images_per_class, n) for n in fold_classes)}


def tuning_order(params: Params) -> list[str]:
    """Every run the pipeline trains and the runs they inherit values from, each after its source."""
    order: list[str] = []

    def visit(run: str) -> None:
        if run not in order:
            if run in params.tune.inherit:
                visit(params.tune.inherit[run])
            order.append(run)

    for run in all_runs(params):
        visit(run)
    return order


def _without(tree: dict, key: str) -> None:
    """`key` (dotted) deleted from the plain `tree`, where it is there."""
    *path, last = key.split(".")
    node = reduce(lambda n, part: n.get(part, {}) if isinstance(n, dict) else {}, path, tree)
    if isinstance(node, dict):
        node.pop(last, None)


def study_name(params: Params, run: str, inherited: dict[str, float] | None = None) -> str:
    """`<run>-<fingerprint>`: the fingerprint hashes every setting that changes what the run's trials measure (data
    but its file locations, backbone, the run's budget, the keys of its section that it trains with: run_record, the
    folds and seed, the search, the values it inherits; a setting added later only when it is not at its default),
    and nothing else: not the values of the keys it searches (every trial sets them), not a key its run does not
    read, so another run's change, a value set for a searched key or more trials leave the study as it is."""
    data = {k: v for k, v in to_dict(params.data).items() if k not in _LOCATIONS}
    data = {k: v for k, v in data.items() if _NAMED_WHEN_CHANGED["data"].get(k, object()) != v}
    # not in the name: the epoch cap (module docstring), what changes only the speed (processes, CUDA graphs) and, for
    # a head on cached features, where finetuning's augmentation runs (it reads no image)
    unnamed = ("max_epochs", "workers", "cuda_graphs") + (("augment_on",) if params.train.mode == "frozen" else ())
    train = {k: v for k, v in to_dict(run_train_config(params, run)).items() if k not in unnamed}
    space = params.tune.spaces.get(run, {})
    trained = {"data": data, "backbone": to_dict(params.backbone), "train": train}
    section = run_section(params, run)
    trained[section] = run_record(params, run)
    for key in space:
        prefix = next((p for p in trained if key.startswith(f"{p}.")), None)
        if prefix is not None:
            _without(trained[prefix], key.removeprefix(f"{prefix}."))
    settings = {
        "seed": params.seed,
        **trained,
        "folds": params.experiment.folds,
        "replicate_seed": params.experiment.seeds[0],
        "tune": {
            "sampler": params.tune.sampler,
            "startup_trials": params.tune.startup_trials,
            "space": space_dict(space),
        },
    }
    if params.tune.pruner.rule != "none":  # named only when on
        settings["tune"]["pruner"] = to_dict(params.tune.pruner)
    if inherited:
        settings["inherited"] = inherited
    digest = hashlib.sha256(json.dumps([run, settings], sort_keys=True, default=str).encode()).hexdigest()
    return f"{run}-{digest[:12]}"


def make_sampler(name: str, seed: int, startup_trials: int):
    import optuna

    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=startup_trials, deterministic_objective=True)
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup_trials)


@dataclass(frozen=True)
class TrialResult:
    """What a trial measured: the mean best validation MAP@R over the folds, the most epochs a fold model trained,
    whether a fold model stopped at the epoch cap, whether the trial was pruned (its value is then only the mean
    best so far, and its epochs depend on when its fold models stopped) and each fold's validation MAP@R per epoch."""

    value: float
    epochs_run: int
    capped: bool
    pruned: bool = False
    curves: tuple[tuple[float, ...], ...] = ()


def pruning_floors(trials, rule, folds: list[int]) -> dict[int, Floor] | None:
    """Fold -> the floor the completed Optuna `trials` set under `rule` (tune.pruner): at every epoch the
    `rule.percentile` of their best validation MAP@R so far on that fold (a model that stopped holds its last best);
    None when the rule is off or fewer than `rule.min_trials` trials completed with their curves recorded."""
    curves = [t.user_attrs["curves"] for t in trials if "curves" in t.user_attrs]
    if rule.rule == "none" or len(curves) < rule.min_trials:
        return None
    floors = {}
    for i, fold in enumerate(folds):
        best = [np.maximum.accumulate(np.asarray(c[i], dtype=np.float64)) for c in curves]
        length = max(len(b) for b in best)
        held = np.stack([np.pad(b, (0, length - len(b)), mode="edge") for b in best])
        values = np.percentile(held, rule.percentile, axis=0)
        floors[fold] = Floor(tuple(float(v) for v in values), rule.warmup, rule.interval, rule.window)
    return floors


def holds_under(trial, cap: int) -> bool:
    """A finished trial (an Optuna trial, or a row of `completed_trials`) measures the same under epoch cap `cap`
    (module docstring; a pruned trial was cut below the cap it ran at, so it is pruned alike under a higher one)."""
    attrs = trial if isinstance(trial, dict) else trial.user_attrs
    if "max_epochs" not in attrs:
        return False  # recorded before caps were: cannot tell
    if trial.get("pruned", False) if isinstance(trial, dict) else trial.state.name == "PRUNED":
        return cap >= attrs["max_epochs"]
    return attrs["max_epochs"] == cap or (not attrs["capped"] and attrs["epochs_run"] <= cap)


def holding_prefix(history: list[dict], cap: int) -> list[dict]:
    """A study's trials (`completed_trials` rows) before the first one that does not hold under epoch cap `cap`."""
    for i, t in enumerate(history):
        if not holds_under(t, cap):
            return history[:i]
    return history


def run_study(
    params: Params,
    run: str,
    objective: Callable[[dict[str, float], dict[int, Floor] | None], TrialResult],
    storage: Path,
    trials: int,
    progress: Callable[[object, dict, TrialResult], None] | None = None,
    inherited: dict[str, float] | None = None,
    kept: tuple[str, list[dict]] | None = None,
):
    """Finish `trials` trials (completed or pruned) of `run`'s study in the journal file `storage`, resuming what it
    already holds (``<name>-epochs<cap>`` instead when the epoch cap altered a trial of it, module docstring); returns
    the Optuna study. `params` has the `inherited` values applied already (they name the study). `kept`
    (`kept_study`: a record committed on another machine) is replayed into a journal that holds none of its study's
    trials, so the study goes on from there (with pruning off: `replay`). `progress(study, values, result)` is
    called after every trial."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = params.tune.spaces.get(run)
    if not space:
        raise ParamsError(f"tune.spaces.{run}: no search space for this run")
    storage.parent.mkdir(parents=True, exist_ok=True)
    journal = JournalStorage(JournalFileBackend(str(storage)))
    cap = run_train_config(params, run).max_epochs
    name = study_name(params, run, inherited)
    pruning = params.tune.pruner.rule != "none"
    if kept is not None:
        study = optuna.create_study(study_name=kept[0], direction="maximize", load_if_exists=True, storage=journal)
        if kept[1] and pruning:
            log.info("%s: the record of %s is not replayed (pruning is on; it keeps no fold curves)", run, kept[0])
        elif kept[1] and not study.get_trials(deepcopy=False):
            log.info("%s: %d trials of %s replayed from its record", run, len(kept[1]), kept[0])
            replay(study, kept[1], space)
        if kept[0] != name:  # <name>-epochs<cap>: the study that goes on
            return _finish(study, params, run, space, objective, trials, progress)
    study = optuna.create_study(study_name=name, direction="maximize", load_if_exists=True, storage=journal)
    completed = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    altered = [t.number for t in completed if not holds_under(t, cap)]
    if altered:
        log.info("%s: trials %s do not hold under max_epochs %d; study %s-epochs%d", run, altered, cap, name, cap)
        before = holding_prefix(completed_trials(study), cap)
        study = optuna.create_study(
            study_name=f"{name}-epochs{cap}", direction="maximize", load_if_exists=True, storage=journal
        )
        if before and not pruning and not study.get_trials(deepcopy=False):
            log.info("%s: its first %d trials, which the cap does not alter, taken over", run, len(before))
            replay(study, before, space)
    return _finish(study, params, run, space, objective, trials, progress)


def _finish(study, params: Params, run: str, space: dict[str, SearchDim], objective, trials: int, progress):
    """`run_study`'s loop: the interrupted trial marked failed, then trials until `trials` are completed or pruned."""
    from optuna.trial import TrialState

    cap = run_train_config(params, run).max_epochs
    for stale in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        log.info("%s: trial %d was interrupted; marked failed and redone", run, stale.number)
        study.tell(stale.number, state=TrialState.FAIL)
    while (done := len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))) < trials:
        study.sampler = make_sampler(
            params.tune.sampler, derive_seed(params.seed, "tune", run, done), params.tune.startup_trials
        )
        trial = study.ask()
        values = applied(suggest(trial, space), space)
        completed = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        result = objective(values, pruning_floors(completed, params.tune.pruner, params.experiment.folds))
        if not np.isfinite(result.value):
            raise RuntimeError(f"{run}: trial {done} gave validation MAP@R {result.value} at {values}")
        trial.set_user_attr("max_epochs", cap)
        trial.set_user_attr("capped", result.capped)
        if result.pruned:  # nothing that depends on when its fold models stopped (module docstring)
            study.tell(trial, state=TrialState.PRUNED)
        else:
            trial.set_user_attr("epochs_run", result.epochs_run)
            trial.set_user_attr("curves", [list(c) for c in result.curves])  # the later trials' floors
            study.tell(trial, result.value)
        if progress is not None:
            progress(study, values, result)
    return study


def completed_trials(study) -> list[dict]:
    """The finished trials in the order they ran: number, value (None for a pruned trial, marked pruned) and the
    values drawn (`suggest`: a key kept above another by its excess, `applied` gives the params values)."""
    from optuna.trial import TrialState

    out = []
    for i, t in enumerate(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))):
        row = {"trial": i, "val_map_at_r": t.value, "values": dict(t.params)}
        if t.state == TrialState.PRUNED:
            row.update(val_map_at_r=None, pruned=True)
        row.update({k: t.user_attrs[k] for k in ("max_epochs", "epochs_run", "capped") if k in t.user_attrs})
        out.append(row)
    return out


def completed(history: list[dict]) -> list[dict]:
    """The trials of a study's history that were not pruned (the only ones that can be chosen)."""
    return [t for t in history if t["val_map_at_r"] is not None]


PARTIAL = ".partial"  # <study name>.partial.json: a study in progress (.dvcignore: the values stage never reads it)


def kept_study(
    folder: Path, params: Params, run: str, inherited: dict[str, float] | None = None, partial: bool = False
) -> tuple[str, list[dict]] | None:
    """The name and every trial of `run`'s study kept in `folder` as ``<study name>.json`` (a finished record of `dml
    tune`; with `partial`, also ``<study name>.partial.json``, one in progress, whichever holds more trials) when its
    trials are what `run_study` would give now, else None: the same study name (every setting that changes what a
    trial measures) and the epoch cap rule of `run_study` (module docstring). A record of the study that the cap
    altered, with none of ``<name>-epochs<cap>`` yet, gives that name and the trials before the first it alters
    (`holding_prefix`): the study starts there, as beside the journal that holds the altered trials (not under the
    old name, whose record it would overwrite)."""
    from pipeline.infra.errors import PipelineError
    from pipeline.infra.io import read_json

    cap = run_train_config(params, run).max_epochs
    name = study_name(params, run, inherited)
    altered = None
    for candidate in (name, f"{name}-epochs{cap}"):
        history = None
        for path in [folder / f"{candidate}.json"] + ([folder / f"{candidate}{PARTIAL}.json"] if partial else []):
            if not path.is_file():
                continue
            try:
                found = read_json(path)["history"]
            except (ValueError, KeyError, TypeError) as err:
                raise PipelineError(f"{path}: not a study's record ({err}); delete it to run the study again") from err
            if history is None or len(found) > len(history):
                history = found
        if history is None:
            continue
        if candidate == name and not all(holds_under(t, cap) for t in history):
            altered = holding_prefix(history, cap)
            continue
        return candidate, history
    return None if altered is None else (f"{name}-epochs{cap}", altered)


def finished_study(
    folder: Path, params: Params, run: str, inherited: dict[str, float] | None = None
) -> tuple[str, list[dict]] | None:
    """`kept_study`'s finished record when it holds at least `tune.trials` trials (every one of them: a study
    extended with `dml tune --trials` counts its extra trials), else None."""
    kept = kept_study(folder, params, run, inherited)
    if kept is None or len(kept[1]) < params.tune.trials:
        return None
    return kept


def replay(study, history: list[dict], space: dict[str, SearchDim]) -> None:
    """A kept record's trials added to the empty Optuna `study`, in the order they ran, as they ended (value or
    pruned, the epoch cap attributes): trial n's sampler is seeded from n and sees only the trials before it, so
    the study then proposes what the one that recorded them would have. The record keeps no fold curves, so the
    pruning floors (`tune.pruner`) cannot be rebuilt: `run_study` replays only with pruning off."""
    import optuna
    from optuna.distributions import FloatDistribution, IntDistribution
    from optuna.trial import TrialState

    def distribution(dim: SearchDim):
        if dim.integer:
            return IntDistribution(int(dim.low), int(dim.high), log=dim.log)
        return FloatDistribution(dim.low, dim.high, log=dim.log)

    distributions = {draw_name(key, dim): distribution(dim) for key, dim in space.items()}
    for t in history:
        pruned = t.get("pruned", False)
        study.add_trial(
            optuna.trial.create_trial(
                params=t["values"],
                distributions={name: distributions[name] for name in t["values"]},
                value=None if pruned else t["val_map_at_r"],
                state=TrialState.PRUNED if pruned else TrialState.COMPLETE,
                user_attrs={k: t[k] for k in ("max_epochs", "epochs_run", "capped") if k in t},
            )
        )


def study_record(base: dict, name: str, history: list[dict]) -> dict:
    """`base` (a run's record: space, inherited values) with study `name`'s trials and its best one (the first of
    equal ones): the values the run trains at are the inherited ones and the best trial's (`applied` to its draws)."""
    best = max(completed(history), key=lambda t: t["val_map_at_r"])
    return {
        **base,
        "study": name,
        "trials": len(history),
        "pruned": len(history) - len(completed(history)),
        "values": {**base["inherited"], **applied(best["values"], base.get("space", {}))},
        "best_trial": best["trial"],
        "best_val_map_at_r": best["val_map_at_r"],
        "history": history,
    }


def validation_objective(
    params: Params, run: str, data: str, features: str, workers: Workers
) -> Callable[[dict[str, float]], TrialResult]:
    """The trial objective: mean over the MLRC folds of the best validation MAP@R of `run` trained at the
    trial's values with the first replicate seed, the folds in `workers` (processes kept across the trials and
    studies of a `dml tune`); no test class is used."""
    from pipeline.training.jobs import FoldJob
    from pipeline.training.worker import run_fold_job

    def objective(values: dict[str, float], floors: dict[int, Floor] | None = None) -> TrialResult:
        setup = run_setup(apply_values(params, values), run)
        with tempfile.TemporaryDirectory(prefix="dml-trial-") as scratch:  # the fold models' shared pruned flag
            flag = str(Path(scratch) / "pruned")
            jobs = [
                FoldJob(
                    setup,
                    fold,
                    data,
                    features,
                    seed=params.experiment.seeds[0],
                    test=False,
                    prune=None if floors is None else dataclasses.replace(floors[fold], flag=flag),
                )
                for fold in params.experiment.folds
            ]
            outcomes = workers.run(run_fold_job, jobs, desc=f"{run} trial")
        return TrialResult(
            float(np.mean([o.best_val_map_at_r for o in outcomes])),
            max(len(o.history) - 1 for o in outcomes),
            any(o.stop_reason == "max_epochs" for o in outcomes),
            any(o.stop_reason == "pruned" for o in outcomes),
            tuple(tuple(row["val_map_at_r"] for row in o.history) for o in outcomes),
        )

    return objective
