"""Training methods: each is an objective (loss on a batch, optional outer-loop hooks) run by the
one training loop. Run names and their params sections: pipeline/runs.py."""

from __future__ import annotations

from pipeline.methods.baselines import BaselineObjective
from pipeline.methods.ccp import CCPObjective
from pipeline.methods.profs import PROFSObjective
from pipeline.runs import parse_ccp_run, parse_profs_run


def build_objective(params, name: str, num_classes: int, embedding_dim: int):
    """The objective of run `name`."""
    if name in params.baselines:
        return BaselineObjective(params.baselines[name], num_classes, embedding_dim, params.train)
    if parse_ccp_run(name):
        return CCPObjective(
            params.ccp,
            *parse_ccp_run(name),
            num_classes,
            embedding_dim,
            params.train.lr * params.ccp.proxy_lr_multiplier,
        )
    if parse_profs_run(name):
        t = params.train
        return PROFSObjective(
            params.profs,
            *parse_profs_run(name),
            num_classes,
            embedding_dim,
            t.classes_per_batch * t.images_per_class,
            t.images_per_class,
        )
    raise ValueError(f"unknown method {name!r} (valid: {', '.join(sorted(params.baselines))} or <loss>_<variant>)")
