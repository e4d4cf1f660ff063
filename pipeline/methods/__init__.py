"""Training methods: each is an objective (loss on a batch, optional outer-loop hooks) run by the one training loop.
Run names: pipeline/families; their params sections: pipeline/training/runs.py. A method family (pipeline/families)
names the module here whose ``build_objective`` builds its runs' objectives; every module of this package is
imported with it, so that module is loaded and is a dependency of the stages that train
(pipeline/orchestration/dvc_deps.py).
"""

from __future__ import annotations

import importlib

from pipeline.families import parse_run
from pipeline.infra.registry import import_modules
from pipeline.methods.baselines import BaselineObjective

import_modules(__name__)


def build_objective(params, name: str, num_classes: int, embedding_dim: int):
    """The objective of run `name`."""
    if name in params.baselines:
        return BaselineObjective(params.baselines[name], num_classes, embedding_dim, params.train)
    parsed = parse_run(name)
    if parsed:
        family, loss, variant = parsed
        module = importlib.import_module(family.objective)
        return module.build_objective(params, loss, variant, num_classes, embedding_dim)
    raise ValueError(f"unknown method {name!r} (valid: {', '.join(sorted(params.baselines))} or <loss>_<variant>)")
