"""reports/lanml.md: LANML on UCI data (ANML section 7.1) beside ANML Table 2, with Table 2's claims."""

from __future__ import annotations

from pathlib import Path

from pipeline.infra.io import write_text
from pipeline.reporting.lanml_table import anml_table2, lanml_markdown, table2_claims, table2_claims_markdown
from pipeline.reporting.pages import Page, register_page
from pipeline.reporting.render import render


def write(params, inputs, out: Path, context: str, done: dict) -> None:
    cfg, decimals = params.lanml, params.report.decimals
    text = render(
        "lanml.md.j2",
        repeats=cfg.repeats,
        split=f"{100 - 100 * cfg.test_fraction:.0f}/{100 * cfg.test_fraction:.0f}",
        pca_dims=cfg.pca_dims,
        max_k=cfg.max_k,
        cv_folds=cfg.cv_folds,
        claims=table2_claims_markdown(table2_claims(inputs.lanml), decimals),
        table=lanml_markdown(inputs.lanml, anml_table2(inputs.published), decimals),
    )
    write_text(out / "lanml.md", text)


register_page(
    Page(
        name="lanml",
        order=90,
        reads=("lanml", "published"),
        outputs=("lanml.md",),
        write=write,
        links=lambda params, result: [
            "[lanml.md](lanml.md): LANML on UCI data beside ANML Table 2; [lanml_timing.md](lanml_timing.md): LANML "
            "and LMNN fit times (clock readings, the one output that differs between machines and runs)"
        ],
    )
)
