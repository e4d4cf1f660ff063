"""Training jobs as plain data, so a stage can hand them to worker processes (pipeline/infra/parallel.py)
without importing torch itself."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.runs import RunSetup
from pipeline.training.pruning import Floor


@dataclass(frozen=True)
class FoldJob:
    """Train run `setup` on `fold` with replicate `seed` (inputs from the prepared data and feature cache
    folders); save the model, test embeddings and a summary into the folder `out` when given; compute every
    test metric of the model's embeddings when `evaluate` is set. With `test` False
    (tuning) the test classes are not touched at all: only the best validation MAP@R comes back. A tuning trial's
    `prune` floor may stop the model early (pipeline/training/pruning.py)."""

    setup: RunSetup
    fold: int
    data: str
    features: str
    out: str | None = None
    evaluate: bool = False
    seed: int = 0
    test: bool = True
    prune: Floor | None = None


@dataclass
class FoldOutcome:
    history: list[dict]
    diagnostics: list[dict]
    best_epoch: int
    best_val_map_at_r: float
    test_metrics: dict | None
    stop_reason: str = ""  # patience, max_epochs, method or pruned (pipeline/training/loop.py)
