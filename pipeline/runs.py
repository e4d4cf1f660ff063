"""Run names: which runs the pipeline trains and which params section configures each.

Runs are named after what they train:
- baselines: the runs under ``baselines`` in params (a loss, miner, sampler each), of which
  ``experiment.methods`` lists those the pipeline trains;
- a method family's runs (pipeline/families) ``<loss>_<variant>`` for every loss in ``<section>.losses`` and
  variant in its variant lists: ``c2_batch``, ``c2_loss_proxy``, ``c2_ccp`` (ccp), ``ms_profs_hncm`` (profs)...,
  all configured by the family's section.
The names themselves come from pipeline/families (all_runs, parse_run). This module imports no torch, so stages
that only dispatch or report stay quick to start.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.families import Family, families


def family_runs(params, family: Family) -> list[str]:
    """The runs of `family` params trains, loss by loss."""
    cfg = getattr(params, family.section)
    return [f"{loss}_{variant}" for loss in cfg.losses for variant in family.trained_variants(cfg)]


def all_runs(params) -> list[str]:
    """Every run the pipeline trains and reports, in report order: baselines, then family by family."""
    return list(params.experiment.methods) + [r for f in families().values() for r in family_runs(params, f)]


def register_runs_resolver() -> None:
    """``${dml_runs:}`` in conf/config.yaml: `experiment.runs`, composed from the lists all_runs reads, the one
    list dvc.yaml's train matrix reads. Registered by the Hydra plugin hydra_plugins/dml_repro, which DVC's Hydra
    composition (`dvc exp run -S`, pipeline/compose.py) loads from the project root."""
    from omegaconf import ListConfig, OmegaConf

    families()  # the family modules, imported now from the project the plugin was found in
    OmegaConf.register_new_resolver("dml_runs", lambda *, _root_: ListConfig(all_runs(_root_)), replace=True)


def parse_run(name: str) -> tuple[Family, str, str] | None:
    """(family, loss, variant) of a family run name, or None (a baseline's or an unknown name)."""
    for family in families().values():
        for variant in family.variants:
            loss = name.removesuffix(f"_{variant}")
            if loss != name and loss in family.losses:
                return family, loss, variant
    return None


def ccp_runs(params) -> list[str]:
    return family_runs(params, families()["ccp"])


def alternating_ccp_runs(params) -> list[str]:
    """The CCP runs that alternate sub-problems (Algorithm 1), in run order."""
    return [r for r in ccp_runs(params) if parse_run(r)[2] in params.ccp.alternating]


def model_ids(params) -> list[tuple[int, int]]:
    """(fold, seed) of every model a run trains: each MLRC fold with each replicate seed, seed by seed."""
    return [(fold, seed) for seed in params.experiment.seeds for fold in params.experiment.folds]


def model_name(fold: int, seed: int) -> str:
    """A model's folder / log file name (data/models/<run>/<name>, reports/train_logs/<run>/<name>.csv)."""
    return f"fold-{fold}-seed-{seed}"


def model_logs(folder: Path, runs: list[str], models: list[tuple[int, int]], what: str):
    """(run, fold, seed, table) of each run's per-model CSV `folder/<run>/<model>.csv` (training logs, CCP's
    sub-problem rows), runs in order, then models; a missing file stops with one line naming it and `what`."""
    import pandas as pd

    for run in runs:
        for fold, seed in models:
            path = folder / run / f"{model_name(fold, seed)}.csv"
            if not path.is_file():
                raise FileNotFoundError(f"{path}: {what} not found (run the train stage of {run})")
            yield run, fold, seed, pd.read_csv(path)


def run_train_config(params, name: str):
    """train with the run's budget: a family with its own budget (PROFS: the paper's 100 epochs) may set
    max_epochs / patience in its section, 0 meaning train's."""
    parsed = parse_run(name)
    cfg = getattr(params, parsed[0].section) if parsed and parsed[0].own_budget else None
    if cfg is not None and (cfg.max_epochs or cfg.patience):
        return dataclasses.replace(
            params.train,
            max_epochs=cfg.max_epochs or params.train.max_epochs,
            patience=cfg.patience or params.train.patience,
        )
    return params.train


def run_record(params, name: str) -> dict:
    """The settings run `name` trains with, as its summary.json records them (RunSetup.record)."""
    return _record(name, run_config(params, name))


def _record(name: str, section) -> dict:
    """Run `name`'s settings from its params section: the section, or for a family with stage keys (CCP) only its
    loss's section and the keys its stage depends on (so that a change of, say, ccp.lambda leaves a Loss-Proxy
    run's files byte for byte as they were, as DVC assumes)."""
    from pipeline.config import to_dict

    settings = to_dict(section)
    parsed = parse_run(name)
    if not parsed or parsed[0].stage_keys is None:
        return settings
    family, loss, variant = parsed
    return {loss: settings[loss], **{k: settings[k] for k in family.stage_keys[variant]}}


def run_section(params, name: str) -> str:
    """The dotted params key of the section that configures run `name` (``baselines.ms``, ``ccp``)."""
    if name in params.baselines:
        return f"baselines.{name}"
    parsed = parse_run(name)
    if parsed:
        return parsed[0].section
    raise ValueError(f"unknown method {name!r}")


def run_config(params, name: str):
    """The params section that configures run `name`."""
    from pipeline.config import field_name

    node = params
    for part in run_section(params, name).split("."):
        node = node[part] if isinstance(node, dict) else getattr(node, field_name(part))
    return node


@dataclass(frozen=True)
class RunSetup:
    """Everything the training of one run reads, cut from params by run_setup: a stage hands a job this, not the
    whole params, so what can change a model is listed here."""

    name: str  # the run
    method: Any  # its params section (a baseline run's, or its family's)
    train: Any  # train with the run's budget (run_train_config)
    data: Any  # the data set's section (background, download folder)
    backbone: Any
    eval: Any  # the test metrics' settings (jobs that evaluate: the ablation)
    seed: int  # params.seed: the root of the initial weights' and the batches' seeds

    def record(self) -> dict:
        """The settings the run trains with, as summary.json and data/tuned/<run>.json (values stage) record them."""
        return _record(self.name, self.method)


def run_setup(params, name: str) -> RunSetup:
    """Run `name`'s setup from `params` (its tuned values applied where it has some)."""
    return RunSetup(
        name,
        run_config(params, name),
        run_train_config(params, name),
        params.data,
        params.backbone,
        params.eval,
        params.seed,
    )


def trained_setup(params, name: str, tuned_file: str | Path, source: str = "params.yaml") -> RunSetup:
    """Run `name`'s setup as it trains: the values stage's values for it (data/tuned/<run>.json) applied to `params`
    (read from `source`). Stops with one line when that file was written for other settings of the run."""
    from pipeline.config import ParamsError, apply_values
    from pipeline.infra.io import read_json

    tuned = read_json(tuned_file)
    if tuned["values"]:
        params = apply_values(params, tuned["values"], source=str(tuned_file))
    setup = run_setup(params, name)
    if json.loads(json.dumps(setup.record())) != tuned.get("settings"):  # through JSON: tuples become lists
        raise ParamsError(
            f"{tuned_file}: written for other settings of {name} than {source}'s (rerun the values stage)"
        )
    return setup
