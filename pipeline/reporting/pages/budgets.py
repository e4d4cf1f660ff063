"""reports/budgets.md and budgets.csv: every model's best and stop epoch, its sub-problems or projections, the models
cut while improving or failed, the 2-D proof of concept's stops, and a replay of shorter patiences."""

from __future__ import annotations

from pathlib import Path

from pipeline.families import families
from pipeline.infra.io import write_text
from pipeline.reporting import budgets
from pipeline.reporting.pages import Page, register_page
from pipeline.reporting.render import render


def write(params, inputs, out: Path, context: str, done: dict) -> None:
    models = inputs.budgets
    stopping = [f.stopping_text for f in families().values() if f.stopping_text]
    replay = budgets.replay_shorter_patience(inputs.logs, inputs.patience, params.train.min_delta)
    text = render(
        "budgets.md.j2",
        context=context,
        stopping=", ".join(stopping) + "; " if stopping else "",
        budgets=budgets.budget_markdown(models, inputs.patience, inputs.max_epochs),
        poc_max_epochs=params.poc.max_epochs,
        poc_max_subproblems=params.poc.max_subproblems,
        patience=params.train.patience,
        poc=budgets.poc_markdown(inputs.poc),
        replay=budgets.replay_markdown(replay, params.report.decimals),
    )
    write_text(out / "budgets.md", text)
    write_text(out / "budgets.csv", models.to_csv(index=False))


register_page(
    Page(
        name="budgets",
        order=30,
        reads=("budgets", "patience", "max_epochs", "poc", "logs"),
        outputs=("budgets.md", "budgets.csv"),
        write=write,
        links=lambda params, result: [
            "[budgets.md](budgets.md): every run's best and stop epochs, sub-problems / projections, and the models "
            "cut while improving (and budgets.csv)"
        ],
    )
)
