"""The training curves: each study's optimisation history (figures/tuning_history.png) and every model's validation
MAP@R per epoch (figures/validation_curves.png)."""

from __future__ import annotations

from pathlib import Path

from pipeline.reporting import figures, tuning
from pipeline.reporting.pages import Page, register_page


def write(params, inputs, out: Path, context: str, done: dict) -> None:
    tuning.history_figure(inputs.tuning, params.tune.startup_trials, out / "figures" / "tuning_history.png")
    figures.curves_figure(inputs.logs, inputs.budgets, out / "figures" / "validation_curves.png")


register_page(
    Page(
        name="curves",
        order=36,
        reads=("tuning", "logs", "budgets"),
        outputs=(),
        write=write,
        figures=("tuning_history", "validation_curves"),
    )
)
