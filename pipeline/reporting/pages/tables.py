"""reports/tables/: the comparison tables per protocol beside the papers' numbers (markdown, CSV, LaTeX) and, on a
data set no paper reports, what the papers report for these runs and whether the runs rank alike."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipeline.infra.io import write_text
from pipeline.reporting import comparison
from pipeline.reporting.pages import Page, register_page
from pipeline.reporting.reference import paper_dataset
from pipeline.reporting.render import render


def write(params, inputs, out: Path, context: str, done: dict) -> list[str]:
    """Returns the markdown files written (the index links them)."""
    published, decimals, name = inputs.published, params.report.decimals, params.data.name
    dataset = paper_dataset(name)
    written = []
    protocols = {
        "mlrc": ("MLRC: P@1, R-precision, MAP@R", comparison.MLRC),
        "conventional": (
            "conventional metrics: R@K, NMI, F1 (of the MLRC fold models, mean ± std)",
            comparison.conventional_columns(params.eval.recall_at),
        ),
    }
    agreement = []
    for protocol, (title, columns) in protocols.items():
        measured = comparison.measured(inputs.metrics, columns)
        table = comparison.attach_published(measured, published, dataset, protocol)
        note = (
            f"- published values: the papers' numbers on {dataset} for the same run (source column); "
            "Δ = measured - published\n"
            if dataset
            else "- no paper reports this data set, so no row has a published counterpart; see "
            "`published_vs_measured.md` for what the papers report for these runs on the real benchmarks\n"
        )
        stem = out / "tables" / f"{protocol}_{name}"
        write_text(
            stem.with_suffix(".md"),
            f"# {title}\n\n{context}{note}- values in %, best per column in bold\n\n"
            + comparison.render(table, columns, decimals),
        )
        write_text(stem.with_suffix(".csv"), table.to_csv(index=False, float_format="%.4f"))
        write_text(stem.with_suffix(".tex"), comparison.render(table, columns, decimals, latex=True))
        written.append(stem.with_suffix(".md").name)
        agreement.append(comparison.rank_agreement(measured, published, protocol))
    if dataset is None:
        ranks = pd.concat(agreement, ignore_index=True)
        text = render(
            "published_vs_measured.md.j2",
            context=context,
            orientation=comparison.orientation(list(inputs.metrics), published)
            .to_markdown(floatfmt=f".{decimals}f")
            .replace("nan", "-"),
            signs=comparison.sign_agreement(inputs.map_at_r.value, published, done["claims"], list(params.ccp.losses)),
            ranks=ranks.drop(columns="run_names").to_markdown(index=False, floatfmt=".2f"),
        )
        write_text(out / "tables" / "published_vs_measured.md", text)
        write_text(out / "tables" / "rank_agreement.csv", ranks.to_csv(index=False, float_format="%.4f"))
        written.append("published_vs_measured.md")
    return written


def links(params, written: list[str]) -> list[str]:
    return [
        f"[{table}](tables/{table})" + ("" if table.startswith("published") else " (also .csv and .tex beside it)")
        for table in written
    ]


register_page(
    Page(
        name="tables",
        order=40,
        reads=("metrics", "published", "map_at_r"),
        outputs=("tables",),
        write=write,
        needs=("claims",),
        links=links,
    )
)
