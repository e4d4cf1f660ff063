"""Training methods: each is an objective (loss on a batch, optional outer-loop hooks) run by the
one training loop.

Runs are named after what they train:
- baselines: the runs under ``baselines`` in params (a loss, miner, sampler each), of which
  ``experiment.methods`` lists those the pipeline trains;
- the CCP family ``<loss>_<variant>`` for every loss in ``ccp.losses`` and variant in ``ccp.variants``
  (``c2_ccp``, ``c2_loss_proxy``, ``c2_batch``...), all configured by the ``ccp`` section;
- the PROFS family ``<loss>_<variant>`` for ``profs.losses`` x ``profs.variants``
  (``ms_profs``, ``ms_profs_hncm``, ``ms_plain``...), configured by the ``profs`` section.
The two families' variant names differ, so a run name says which family it belongs to.
"""

from __future__ import annotations

from pipeline.methods.baselines import BaselineObjective
from pipeline.methods.ccp import VARIANTS as CCP_VARIANTS
from pipeline.methods.ccp import CCPObjective
from pipeline.methods.profs import VARIANTS as PROFS_VARIANTS
from pipeline.methods.profs import PROFSObjective

def ccp_runs(params) -> list[str]:
    return [f"{loss}_{variant}" for loss in params.ccp.losses for variant in params.ccp.variants]


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


def run_config(params, name: str):
    """The params section that configures run `name`."""
    if name in params.baselines:
        return params.baselines[name]
    if parse_ccp_run(name):
        return params.ccp
    if parse_profs_run(name):
        return params.profs
    raise ValueError(f"unknown method {name!r}")


def build_objective(params, name: str, num_classes: int, embedding_dim: int):
    """The objective of run `name`."""
    if name in params.baselines:
        return BaselineObjective(params.baselines[name], num_classes, embedding_dim, params.train)
    if parse_ccp_run(name):
        return CCPObjective(params.ccp, *parse_ccp_run(name), num_classes, embedding_dim)
    if parse_profs_run(name):
        t = params.train
        return PROFSObjective(params.profs, *parse_profs_run(name), num_classes, embedding_dim,
                              t.classes_per_batch * t.images_per_class, t.images_per_class)
    raise ValueError(f"unknown method {name!r} (valid: {', '.join(sorted(params.baselines))} or <loss>_<variant>)")
