"""reports/tuning.md: MLRC's tuning step per run (the values it trained at, its search, the best validation
MAP@R, whether it converged) and the chosen configurations' reruns."""

from __future__ import annotations

from pathlib import Path

from pipeline.infra.io import write_text
from pipeline.reporting import selection, tuning
from pipeline.reporting.pages import Page, register_page
from pipeline.reporting.render import render

OWN = (
    "every run searches every key it uses in a study of its own (`tune.inherit` is empty: no run trains at values "
    "another run's study chose)"
)
SHARED = (
    'the runs named in `tune.inherit` train at the values of the run they inherit from ("from" rows) and search only '
    "their own keys; claims.md reads their claims untuned"
)


def write(params, inputs, out: Path, context: str, done: dict) -> None:
    noise = selection.noise(inputs.reruns)
    text = render(
        "tuning.md.j2",
        context=context,
        sampler=params.tune.sampler.upper(),
        startup=params.tune.startup_trials,
        sharing=SHARED if params.tune.inherit else OWN,
        table=tuning.tuning_markdown(params, inputs.tuning, params.report.decimals, noise),
        selection=tuning.selection_markdown(inputs.reruns, noise, params.experiment.seeds, params.report.decimals),
    )
    write_text(out / "tuning.md", text)


register_page(
    Page(
        name="tuning",
        order=33,
        reads=("tuning", "reruns"),
        outputs=("tuning.md",),
        write=write,
        links=lambda params, result: [
            "[tuning.md](tuning.md): the hyperparameters each run trained at, tuned on the validation folds"
        ],
    )
)
