"""The families' ablation studies (each family's record, pipeline/families ``Ablation``): their sweep figures and
the paragraphs that say what they show."""

from __future__ import annotations

from pathlib import Path

from pipeline.reporting import figures
from pipeline.reporting.pages import Page, register_page
from pipeline.studies import ablation


def write(params, inputs, out: Path, context: str, done: dict) -> None:
    for name in ablation.studies():
        table = inputs.ablations[name]
        for f in ablation.study(name).figures:
            figures.sweep_figure(
                table[table.sweep == f.sweep],
                f.x,
                f.title(params),
                out / "figures" / f"{f.file}.png",
                series=f.series,
                xlabel=f.xlabel,
                lambda_axis=f.lambda_axis,
                mark=None if f.mark is None else f.mark(params),
            )


def paragraphs(params, inputs) -> list[str]:
    return [p for name in ablation.studies() for p in ablation.study(name).paragraphs(inputs.ablations[name], params)]


register_page(
    Page(
        name="ablations",
        order=50,
        reads=("ablations",),
        outputs=(),
        write=write,
        figures=tuple(f.file for name in ablation.studies() for f in ablation.study(name).figures),
        paragraphs=paragraphs,
    )
)
