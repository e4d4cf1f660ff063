"""Training methods: each is an objective (loss on a batch) run by the one training loop.

``METHODS`` maps the name used in ``experiment.methods`` (and as the params
section name) to the function building its objective.
"""

from pipeline.methods.baselines import build_multi_similarity, build_proxy_anchor

METHODS = {
    "ms": build_multi_similarity,
    "proxy_anchor": build_proxy_anchor,
}


def build_objective(name: str, cfg, num_classes: int, embedding_dim: int):
    """The objective of method `name` from its params section."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r} (valid: {', '.join(sorted(METHODS))})")
    return METHODS[name](cfg, num_classes, embedding_dim)
