"""Cross-field rules of params.yaml that one field's type and bounds cannot express; each raises a one-line
ParamsError naming the key."""

from __future__ import annotations

from PIL import ImageColor

from pipeline.config.base import ParamsError, dotted, to_dict
from pipeline.config.studies import LANML_GRID_KEYS
from pipeline.datasets import datasets
from pipeline.families import all_runs, families
from pipeline.losses import loss_records
from pipeline.miners import miner_records


def check_consistency(p, source: str) -> None:
    """Every rule below, on validated params `p`."""
    _check_runs(p, source)
    _check_protocol(p, source)
    folds = p.experiment.folds
    if sorted(folds) != list(range(len(folds))) or len(folds) < 2:
        raise ParamsError(f"{source}: experiment.folds: must be 0..k-1 with k >= 2, got {folds}")
    for key, seeds in (("experiment.seeds", p.experiment.seeds), ("poc.seeds", p.poc.seeds)):
        if len(set(seeds)) != len(seeds):
            raise ParamsError(f"{source}: {key}: need distinct seeds, got {seeds}")
    if p.poc.pool_size < p.poc.proxies_per_class:
        raise ParamsError(f"{source}: poc.pool_size: must be >= poc.proxies_per_class")
    for family in families().values():
        problem = family.check(p)
        if problem:
            raise ParamsError(f"{source}: {problem}")
        for key in ("losses", *family.variant_lists):
            values = getattr(getattr(p, family.section), key)
            if len(set(values)) != len(values):
                raise ParamsError(f"{source}: {family.section}.{key}: duplicate names")
    if p.ablation.fold not in p.experiment.folds:
        raise ParamsError(
            f"{source}: ablation.fold: {p.ablation.fold} is not one of experiment.folds {p.experiment.folds}"
        )
    low, high = (p.backbone.crop_scale + [0.0, 0.0])[:2]
    if len(p.backbone.crop_scale) != 2 or not 0 < low <= high <= 1:
        raise ParamsError(
            f"{source}: backbone.crop_scale: need [low, high] with 0 < low <= high <= 1, got {p.backbone.crop_scale}"
        )
    if len(p.backbone.mean) != p.backbone.channels or len(p.backbone.std) != p.backbone.channels:
        raise ParamsError(f"{source}: backbone.mean/std: need one value per channel ({p.backbone.channels})")
    try:
        ImageColor.getrgb(p.data.background)
    except ValueError:
        colour = p.data.background
        raise ParamsError(f"{source}: data.background: {colour!r} is not a colour (white, #ffffff)") from None
    _check_lanml_grids(p.lanml, source)
    _check_tune(p, source)


def _check_runs(p, source: str) -> None:
    for name in p.experiment.methods:
        if name not in p.baselines:
            raise ParamsError(
                f"{source}: experiment.methods: unknown method {name!r} "
                f"(valid: the runs under baselines: {', '.join(sorted(p.baselines))})"
            )
    if len(set(p.experiment.methods)) != len(p.experiment.methods):
        raise ParamsError(f"{source}: experiment.methods: duplicate method names")
    if p.experiment.runs is not None and p.experiment.runs != (runs := all_runs(p)):
        raise ParamsError(
            f"{source}: experiment.runs: {p.experiment.runs} is not what experiment.methods and the families' lists "
            f"give ({runs}): compose params.yaml again (python -m pipeline.compose) instead of editing its lists"
        )
    batch = p.train.classes_per_batch * p.train.images_per_class
    xbm_losses = [loss for loss, record in loss_records().items() if record.xbm]
    triplet_miners = [miner for miner, record in miner_records().items() if record.triplets]
    for name, run in p.baselines.items():
        key = f"{source}: baselines.{name}"
        if run.p_switch > 0 and run.miner.name not in triplet_miners:
            raise ParamsError(
                f"{key}.p_switch: rho-regularisation switches mined triplets; needs a miner "
                f"in {triplet_miners}, got {run.miner.name!r}"
            )
        if run.xbm_batches and run.loss.name not in xbm_losses:
            raise ParamsError(
                f"{key}.xbm_batches: cross-batch memory supports the losses {xbm_losses}, not {run.loss.name!r}"
            )
        k = run.sampler.images_per_class
        if name in p.experiment.methods and run.sampler.name == "spc" and k and (batch % k or batch // k < 2):
            raise ParamsError(
                f"{key}.sampler.images_per_class: {k} must divide the batch of {batch} "
                f"(train.classes_per_batch x train.images_per_class) into >= 2 classes"
            )


def _check_protocol(p, source: str) -> None:
    """A real data set trains under one of the papers' protocols (conf/protocol), an embedded one or your own folder
    under none: a data set's name alone (``-S data.name=cub``) would train it at the embedded default's settings."""
    embedded = datasets()[p.data.name].paper_name is None
    if embedded != (p.data.setting == "none"):
        fix = f"-S dataset={p.data.name}" + ("" if embedded else " (protocol mlrc; or -S protocol=conventional)")
        raise ParamsError(
            f"{source}: data.setting: {p.data.setting!r} does not go with data.name {p.data.name!r}: "
            f"compose the data set's settings with dvc exp run {fix} (conf/dataset/{p.data.name}.yaml)"
        )


def _check_tune(p, source: str) -> None:
    """Every tuned key names a numeric params value, every range is a range, and inheritance is a forest whose
    runs search disjoint keys (a key tuned twice along a chain would have two values)."""

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


# sign rules of eq. 19: LANML- (convex, Lemma 3) gamma1 < 0 < gamma2; LANML+ gamma1 > 0, gamma2 > 0
_GAMMA_SIGNS = {
    ("lanml_minus", "gamma1"): -1,
    ("lanml_minus", "gamma2"): 1,
    ("lanml_plus", "gamma1"): 1,
    ("lanml_plus", "gamma2"): 1,
}


def _check_lanml_grids(cfg, source: str) -> None:
    for method, grid in cfg.grids.items():
        key = f"{source}: lanml.grids.{method}"
        if method not in LANML_GRID_KEYS:
            raise ParamsError(f"{key}: unknown method (valid: {', '.join(LANML_GRID_KEYS)})")
        if not isinstance(grid, dict):
            raise ParamsError(f"{key}: must map hyperparameter names to lists of values")
        accepted = LANML_GRID_KEYS[method]
        for name, values in grid.items():
            if name not in accepted:
                raise ParamsError(f"{key}.{name}: unknown hyperparameter (valid: {', '.join(sorted(accepted))})")
            if not isinstance(values, list) or not values:
                raise ParamsError(f"{key}.{name}: must be a non-empty list of values")
            sign = _GAMMA_SIGNS.get((method, name))
            if sign and any(not isinstance(v, (int, float)) or v * sign <= 0 for v in values):
                raise ParamsError(
                    f"{key}.{name}: every value must be {'> 0' if sign > 0 else '< 0'} "
                    f"(LANML- needs gamma1 < 0 < gamma2, LANML+ gamma1 > 0), got {values}"
                )
