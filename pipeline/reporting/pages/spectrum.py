"""figures/spectrum.png: the singular value spectra of report.spectrum_runs' embeddings (Revisiting section 5)."""

from __future__ import annotations

from pathlib import Path

from pipeline.reporting import figures
from pipeline.reporting.pages import Page, register_page


def write(params, inputs, out: Path, context: str, done: dict) -> None:
    spectra = {r: t.groupby("index").singular_value.mean().to_numpy() for r, t in inputs.spectra.items()}
    figures.spectrum_figure(spectra, inputs.spectral_decay, out / "figures" / "spectrum.png")


def paragraphs(params, inputs) -> list[str]:
    return [
        "**Singular value spectrum (Revisiting section 5)** — `figures/spectrum.png`: ρ(Φ) "
        + ", ".join(f"{r} {v:.3f}" for r, v in inputs.spectral_decay.items())
        + "; the Revisiting paper links lower ρ (a flatter spectrum) to better generalisation."
    ]


register_page(
    Page(
        name="spectrum",
        order=80,
        reads=("spectra", "spectral_decay"),
        outputs=(),
        write=write,
        figures=("spectrum",),
        paragraphs=paragraphs,
    )
)
