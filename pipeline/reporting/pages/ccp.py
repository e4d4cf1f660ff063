"""The CCP family's part of the report (a family's page is named by its params section): Loss-Proxy vs CCP (CCP
Fig. 4a), steps per projection (Fig. 4b), the covering radius over sub-problems, the sub-problem page
(reports/ccp_subproblems.md) and the paragraph on the 2-D proof of concept (Fig. 2, drawn by the poc stage)."""

from __future__ import annotations

from pathlib import Path

from pipeline.families.ccp import FAMILY as CCP
from pipeline.infra.io import write_text
from pipeline.reporting import figures
from pipeline.reporting.pages import Page, register_page
from pipeline.reporting.render import render
from pipeline.reporting.subproblems import detail_markdown, summary_markdown
from pipeline.runs import model_ids


def _write(params, inputs, out: Path, context: str, done: dict) -> None:
    fig = out / "figures"
    variants = [v for v in CCP.variants if v in CCP.trained_variants(params.ccp)]
    figures.variants_figure(
        inputs.map_at_r,
        list(params.ccp.losses),
        variants,
        fig / "ccp_loss_proxy_vs_ccp.png",
        "Loss on batches vs Loss-Proxy (one proxy-DML) vs CCP (CCP Fig. 4a)",
    )
    figures.steps_figure(inputs.alternating_rows, fig / "ccp_steps_per_projection.png")
    figures.subproblems_figure(inputs.alternating_rows, fig / "ccp_subproblems.png")
    _write_subproblems(params, inputs, out, context)


def _write_subproblems(params, inputs, out: Path, context: str) -> None:
    rows, decimals = inputs.subproblems, params.report.decimals
    detail = ""
    if inputs.alternating_runs and not rows.empty:
        detail = "\n## Every sub-problem of the first model\n\n" + "\n".join(
            detail_markdown(rows, r, *model_ids(params)[0], decimals) for r in inputs.alternating_runs
        )
    text = render(
        "ccp_subproblems.md.j2",
        context=context,
        proxy_lr=f"{params.train.lr * params.ccp.proxy_lr_multiplier:g}",
        moments="reset" if params.ccp.reset_proxy_optimizer else "kept",
        summary=summary_markdown(rows, decimals),
        detail=detail,
    )
    write_text(out / "ccp_subproblems.md", text)


def _paragraphs(params, inputs) -> list[str]:
    poc = inputs.poc
    paragraphs = []
    frame = inputs.map_at_r.value
    fig4a = ", ".join(
        f"{loss.upper()} "
        + " / ".join(f"{frame[f'{loss}_{v}']:.1f}" for v in ("batch", "loss_proxy", "ccp") if f"{loss}_{v}" in frame)
        for loss in params.ccp.losses
    )
    paragraphs.append(
        f"**Loss-Proxy vs CCP (CCP Fig. 4a)** — `figures/ccp_loss_proxy_vs_ccp.png`: separated MAP@R "
        f"of batch / Loss-Proxy / CCP per loss: {fig4a}."
    )
    ccp_rows = inputs.alternating_rows
    if len(ccp_rows):
        first, last = (ccp_rows.groupby(["run", "model"]).covering_radius_max.agg(f).mean() for f in ("first", "last"))
        paragraphs.append(
            f"**Steps per projection (CCP Fig. 4b)** — `figures/ccp_steps_per_projection.png`: {len(ccp_rows)} "
            f"sub-problems, median {ccp_rows.steps.median():.0f} steps, {int((ccp_rows.steps <= 50).sum())} of them "
            f"50 steps or fewer. **Covering radius and validation MAP@R over sub-problems** — "
            f"`figures/ccp_subproblems.png`: the covering radius (max over classes, mean over runs and folds) goes "
            f"from {first:.3f} after the first sub-problem to {last:.3f} after the last."
        )
    paragraphs.append(
        f"**2-D proof of concept (CCP Fig. 2)** — `figures/ccp_poc.png`: test MAP@R Loss-Proxy "
        f"{100 * poc['loss_proxy']['mean']['test_map_at_r']:.1f}%, "
        f"CCP {100 * poc['ccp']['mean']['test_map_at_r']:.1f}%, sample-based "
        f"CCP {100 * poc['sample_ccp']['mean']['test_map_at_r']:.1f}%; covering radius of the converged proxies (max) "
        f"{poc['loss_proxy']['mean']['covering_radius_max']:.3f} / {poc['ccp']['mean']['covering_radius_max']:.3f} / "
        f"{poc['sample_ccp']['mean']['covering_radius_max']:.3f}."
    )
    return paragraphs


register_page(
    Page(
        name="ccp",
        order=60,
        reads=("map_at_r", "alternating_rows", "alternating_runs", "subproblems", "poc"),
        outputs=("ccp_subproblems.md",),
        write=_write,
        figures=("ccp_loss_proxy_vs_ccp", "ccp_steps_per_projection", "ccp_subproblems"),
        shows=("ccp_poc",),
        links=lambda params, result: ["[ccp_subproblems.md](ccp_subproblems.md): CCP sub-problem diagnostics"],
        paragraphs=_paragraphs,
    )
)
