"""reports/results.md and results.csv: every metric of every run, one row per run and protocol."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipeline.families import families
from pipeline.infra.io import write_text
from pipeline.reporting.pages import Page, register_page
from pipeline.reporting.render import render
from pipeline.reporting.tables import backbone_row, markdown_table, results_frame


def write(params, inputs, out: Path, context: str, done: dict) -> None:
    frame = results_frame(inputs.metrics, params.eval.recall_at, params.train.embedding_dim)
    order = ["_last"] + ([params.report.sort_by] if params.report.sort_by != "none" else [])
    frame = (
        frame.assign(_last=frame["protocol"].str.startswith("concatenated"))
        .sort_values(order, ascending=[True] + [False] * (len(order) - 1), kind="stable")
        .drop(columns="_last")
    )
    frame = pd.concat([pd.DataFrame([backbone_row(inputs.backbone, params.eval.recall_at)]), frame], ignore_index=True)
    runs = "; ".join(
        ["baselines `" + "`, `".join(params.experiment.methods) + "`"]
        + [f.runs_text for f in families().values() if f.runs_text]
    )
    table = markdown_table(frame, params.eval.recall_at, params.report.decimals)
    write_text(out / "results.md", render("results.md.j2", context=context, runs=runs, table=table))
    write_text(out / "results.csv", frame.to_csv(index=False, float_format="%.4f"))


register_page(
    Page(
        name="results",
        order=10,
        reads=("metrics", "backbone"),
        outputs=("results.md", "results.csv"),
        write=write,
        links=lambda params, result: ["[results.md](results.md): every metric of every run (and results.csv)"],
    )
)
