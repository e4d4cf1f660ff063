"""Run names: which runs the pipeline trains and which params section configures each.

Runs are named after what they train:
- baselines: the runs under ``baselines`` in params (a loss, miner, sampler each), of which
  ``experiment.methods`` lists those the pipeline trains;
- the CCP family ``<loss>_<variant>`` for every loss in ``ccp.losses`` and variant in ``ccp.variants``
  (batch, loss_proxy) and ``ccp.alternating`` (ccp, sample_ccp): ``c2_batch``, ``c2_loss_proxy``, ``c2_ccp``...,
  all configured by the ``ccp`` section;
- the PROFS family ``<loss>_<variant>`` for ``profs.losses`` x ``profs.variants``
  (``ms_profs``, ``ms_profs_hncm``, ``ms_plain``...), configured by the ``profs`` section.
The two families' variant names differ, so a run name says which family it belongs to. This module
imports no torch, so stages that only dispatch or report stay quick to start.
"""

from __future__ import annotations

import dataclasses

CCP_VARIANTS = ("batch", "loss_proxy", "ccp", "sample_ccp")
ALTERNATING_CCP_VARIANTS = ("ccp", "sample_ccp")  # re-initialise their anchors: several sub-problems
PROFS_VARIANTS = ("plain", "profs", "profs_hncm")
# the ccp keys every CCP-family run trains with besides its loss's own section, and those only Algorithm 1's
# alternating runs add: the train_ccp_base / train_ccp stages' params in dvc.yaml (a test checks they agree)
CCP_SHARED_KEYS = (
    "proxies_per_class",
    "in_batch_weight",
    "proxy_lr_multiplier",
    "reset_proxy_optimizer",
    "reducer",
    "similarity",
    "kcenter_space",
    "embedding_norm",
)
CCP_ALGORITHM_1_KEYS = ("lambda", "zero_lambda_first", "pool_size", "patience", "max_subproblems")


def ccp_runs(params) -> list[str]:
    return [
        f"{loss}_{variant}" for loss in params.ccp.losses for variant in [*params.ccp.variants, *params.ccp.alternating]
    ]


def alternating_ccp_runs(params) -> list[str]:
    """The CCP-family runs that alternate sub-problems (Algorithm 1), in run order."""
    return [r for r in ccp_runs(params) if parse_ccp_run(r)[1] in ALTERNATING_CCP_VARIANTS]


def profs_runs(params) -> list[str]:
    return [f"{loss}_{variant}" for loss in params.profs.losses for variant in params.profs.variants]


def all_runs(params) -> list[str]:
    """Every run the pipeline trains and reports, in report order."""
    return list(params.experiment.methods) + ccp_runs(params) + profs_runs(params)


def _parse(name: str, variants) -> tuple[str, str] | None:
    loss, _, variant = name.partition("_")
    return (loss, variant) if variant in variants else None


def parse_ccp_run(name: str) -> tuple[str, str] | None:
    """(loss, variant) of a CCP-family run name, or None."""
    return _parse(name, CCP_VARIANTS)


def parse_profs_run(name: str) -> tuple[str, str] | None:
    """(loss, variant) of a PROFS-family run name, or None."""
    return _parse(name, PROFS_VARIANTS)


def model_ids(params) -> list[tuple[int, int]]:
    """(fold, seed) of every model a run trains: each MLRC fold with each replicate seed, seed by seed."""
    return [(fold, seed) for seed in params.experiment.seeds for fold in params.experiment.folds]


def model_name(fold: int, seed: int) -> str:
    """A model's folder / log file name (data/models/<run>/<name>, reports/train_logs/<run>/<name>.csv)."""
    return f"fold-{fold}-seed-{seed}"


def run_train_config(params, name: str):
    """train with the run's budget: the PROFS family (plain included) may have its own max_epochs / patience."""
    if parse_profs_run(name) and (params.profs.max_epochs or params.profs.patience):
        return dataclasses.replace(
            params.train,
            max_epochs=params.profs.max_epochs or params.train.max_epochs,
            patience=params.profs.patience or params.train.patience,
        )
    return params.train


def run_record(params, name: str) -> dict:
    """The settings run `name` trains with, as its summary.json records them: its params section, or for a CCP
    run only the keys its stage depends on (so that a change of, say, ccp.lambda leaves a Loss-Proxy run's
    files byte for byte as they were, as DVC assumes)."""
    from pipeline.config import to_dict

    section = to_dict(run_config(params, name))
    parsed = parse_ccp_run(name)
    if not parsed:
        return section
    loss, variant = parsed
    keys = (*CCP_SHARED_KEYS, *(CCP_ALGORITHM_1_KEYS if variant in ALTERNATING_CCP_VARIANTS else ()))
    return {loss: section[loss], **{k: section[k] for k in keys}}


def run_config(params, name: str):
    """The params section that configures run `name`."""
    if name in params.baselines:
        return params.baselines[name]
    if parse_ccp_run(name):
        return params.ccp
    if parse_profs_run(name):
        return params.profs
    raise ValueError(f"unknown method {name!r}")
