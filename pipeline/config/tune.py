"""The ``tune`` section: MLRC's tuning step (pipeline/studies/tuning.py), its search spaces and pruner; and its
rule, which reads every section a space names (it runs on the whole params, pipeline/params/root.py)."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal

from pydantic import Field

from pipeline.config.base import ParamsError, dotted, to_dict
from pipeline.config.loader import Section
from pipeline.infra.schema import section


@section
class SearchDim:
    """One tuned hyperparameter's range (Optuna suggest_float / suggest_int)."""

    low: float = 0.0
    high: float = 1.0
    log: bool = False  # sample uniformly in log space (low > 0)
    integer: bool = False
    # another key of the same space, listed before this one, that this key is kept at or above by the params check
    # (C2's beta >= alpha, CCP eq. 4.2): the search draws the excess over it in [low, high] (low >= 0), so that
    # every draw is a valid point (a box of both keys holds beta >= alpha only where beta's range starts at alpha's
    # end); pipeline/studies/tuning.py `applied`
    above: str | None = None


@section
class PrunerConfig:
    """Stopping hopeless trials early, one rule for every run's study (pipeline/studies/tuning.py, pruning_floors;
    pipeline/training/pruning.py): from `warmup` epochs on, every `interval` epochs, a fold model whose best validation
    MAP@R so far is below the `percentile` of the completed trials' best-so-far on its fold at that epoch, and which
    is not improving (its best so far did not rise within its last `window` epochs, nor its last value over them),
    stops; its trial is pruned (recorded, never chosen, counted among `tune.trials`). Nothing is pruned before
    `min_trials` trials completed."""

    rule: Literal["none", "percentile"] = "none"
    percentile: float = Field(25.0, gt=0.0, lt=100.0)  # 25: the lowest quarter at that epoch (50: Optuna's median)
    warmup: int = Field(20, ge=1)  # epochs every model trains before the first check (the default patience)
    interval: int = Field(5, ge=1)  # epochs between checks
    window: int = Field(10, ge=1)  # a model still improving over its last `window` epochs is not cut
    min_trials: int = Field(5, ge=1)  # completed trials before anything is pruned (Optuna: n_startup_trials)


@section
class TuneConfig:
    """MLRC's tuning step on the validation folds (pipeline/studies/tuning.py)."""

    trials: int = Field(0, ge=0)  # a finished study has at least this many; 0 = no study: train at tune.start's values
    sampler: Literal["tpe", "gp"] = "tpe"  # Optuna's TPESampler or GPSampler, seeded per trial
    startup_trials: int = Field(10, ge=1)  # random trials before the model-based proposals start
    # run -> {params key (dotted, e.g. baselines.ms.loss.alpha): range}; runs without a space are not tuned
    spaces: dict[str, dict[str, SearchDim]] = field(default_factory=dict)
    # run -> run: the first trains at the second's tuned values (the loss keys a family shares, e.g. ccp.c2.*)
    # and its own space, if any, is searched with those values fixed (pipeline/studies/tuning.py)
    inherit: dict[str, str] = field(default_factory=dict)
    pruner: PrunerConfig = field(default_factory=PrunerConfig)
    # params keys (nested as in params.yaml) -> the value a key that reads `study` takes where no study sets it: a
    # run with no study (tune.trials 0), the proof of concept, the ablations (pipeline/config/loader.py)
    start: dict[str, Any] = field(default_factory=dict)
    # made on loading, never written: the dotted keys that read `study` (their runs train at their studies' values)
    studied: tuple[str, ...] = ()


def check_tune(p, source: str) -> None:
    """Every tuned key names a numeric params value, every range is a range (one `above` another key: an excess over
    a key listed before it), and inheritance is a forest whose runs search disjoint keys (a key tuned twice along a
    chain would have two values)."""

    for run, base in p.tune.inherit.items():
        chain, node = [run], base
        while node is not None:
            if node in chain:
                raise ParamsError(f"{source}: tune.inherit.{run}: inherits from itself ({' -> '.join(chain + [node])})")
            chain.append(node)
            node = p.tune.inherit.get(node)
        keys = [k for r in chain for k in p.tune.spaces.get(r, {})]
        if len(set(keys)) != len(keys):
            raise ParamsError(
                f"{source}: tune.inherit.{run}: {' -> '.join(chain)} search the same key twice "
                f"({', '.join(sorted({k for k in keys if keys.count(k) > 1}))})"
            )
    values = to_dict(p) if p.tune.spaces else {}
    for run, space in p.tune.spaces.items():
        for key, dim in space.items():
            where = f"{source}: tune.spaces.{run}.{key}"
            node = dotted(values, key)
            if isinstance(node, bool) or not isinstance(node, (int, float)):
                raise ParamsError(f"{where}: not a numeric params key")
            if not dim.low < dim.high:
                raise ParamsError(f"{where}: need low < high, got [{dim.low}, {dim.high}]")
            if dim.log and dim.low <= 0:
                raise ParamsError(f"{where}: a log range needs low > 0, got {dim.low}")
            if dim.above is not None and dim.above not in list(space)[: list(space).index(key)]:
                raise ParamsError(f"{where}: above: {dim.above} is not a key listed before it in tune.spaces.{run}")
            if dim.above is not None and dim.low < 0:
                raise ParamsError(f"{where}: a range above {dim.above} is its excess over it: need low >= 0")


TUNE = Section("tune", TuneConfig, field(default_factory=TuneConfig))
