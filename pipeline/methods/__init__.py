"""Training methods: each is an objective (loss on a batch, optional outer-loop hooks) run by the one training loop.
Run names and their params sections: pipeline/runs.py. A method family (pipeline/families)
names the module here whose ``build_objective`` builds its runs' objectives; every module of this package is
imported with it, so that module is loaded and is a dependency of the stages that train
(pipeline/orchestration/dvc_deps.py).
"""

from __future__ import annotations

import importlib

from pipeline.infra.registry import import_modules
from pipeline.methods.baselines import BaselineObjective
from pipeline.params.baselines import BaselineConfig
from pipeline.runs import parse_run

import_modules(__name__)


def build_objective(setup, num_classes: int):
    """The objective of run `setup.name` (a pipeline.runs.RunSetup) from its section and train budget."""
    if isinstance(setup.method, BaselineConfig):
        return BaselineObjective(setup.method, num_classes, setup.train)
    family, loss, variant = parse_run(setup.name)
    return importlib.import_module(family.objective).build_objective(
        setup.method, setup.train, loss, variant, num_classes
    )
