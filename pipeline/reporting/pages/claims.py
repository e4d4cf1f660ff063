"""reports/claims.md and claims.csv: every testable claim of the papers with its paired difference, intervals and
verdict; figures/claims_forest.png draws them beside report.companions' claims."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipeline.infra.io import write_text
from pipeline.reporting import budgets, forest, rules, selection, tuning
from pipeline.reporting.claims import (
    NOT_CONVERGED,
    RANGE_END,
    claim_differences,
    claims_markdown,
    claims_table,
    compared_runs,
    flagged_runs_note,
    paper_claims,
    verdict_counts,
)
from pipeline.reporting.pages import Page, register_page
from pipeline.reporting.render import render


def write(params, inputs, out: Path, context: str, done: dict) -> pd.DataFrame:
    claims = paper_claims(params)
    noise = selection.tolerance(selection.noise(inputs.reruns), params.report.convergence_sigmas)
    table = claims_table(
        claims,
        inputs.metrics,
        inputs.poc,
        inputs.per_class,
        params.report.bootstrap_samples,
        params.seed,
        budgets.failed_models(inputs.budgets),
        inputs.budgets.groupby("run").cut_while_improving.sum().to_dict(),
        claim_differences(claims, inputs.settings),
        {r["run"]: r for r in inputs.tuning},
        noise,
    )
    summary, summary_holm = verdict_counts(table)
    folds, seeds = len(params.experiment.folds), len(params.experiment.seeds)
    notes = (
        _failed_note(table)
        + _cut_note(table, inputs.budgets)
        + flagged_runs_note(table, tuning.runs_at_range_ends(params, inputs.tuning), RANGE_END)
        + flagged_runs_note(table, rules.unconverged_chain(inputs.tuning, noise), NOT_CONVERGED)
    )
    text = render(
        "claims.md.j2",
        context=context,
        folds=folds,
        seeds=seeds,
        models=folds * seeds,
        poc_seeds=len(params.poc.seeds),
        bootstrap=params.report.bootstrap_samples,
        summary=summary,
        summary_holm=summary_holm,
        claims=len(table),
        table=claims_markdown(table, params.report.decimals),
        notes=notes,
    )
    write_text(out / "claims.md", text)
    write_text(out / "claims.csv", table.to_csv(index=False, float_format="%.4f"))
    companions = dict(c.split("=", 1) for c in params.report.companions)
    sigmas = params.report.convergence_sigmas
    forest.forest_figure(
        {params.data.name: table, **{n: forest.read_companion(n, Path(p), sigmas) for n, p in companions.items()}},
        out / "figures" / "claims_forest.png",
    )
    return table


def _failed_note(claims: pd.DataFrame) -> str:
    """The failed models of every claim that has any, by name (the table gives their count)."""
    rows = claims[claims.flagged_models != ""]
    if rows.empty:
        return "\nNo compared model failed ([budgets.md](budgets.md)).\n"
    lines = [f"- {r.claim}: {', '.join(f'`{m}`' for m in r.flagged_models.split())}" for _, r in rows.iterrows()]
    lead = "\n**Failed models** (kept epoch 0 or 1, or never above the untrained network):\n\n"
    return lead + "\n".join(lines) + "\n"


def _cut_note(claims: pd.DataFrame, models: pd.DataFrame) -> str:
    """A line naming the compared runs with models cut while improving (budgets.md), if any."""
    cut = set(models[models.cut_while_improving].run)
    flagged = sorted(set(compared_runs(claims)) & cut)
    if not flagged:
        return (
            "\nEvery model of every compared run stopped after its patience ran out (none was cut while "
            "improving; [budgets.md](budgets.md)).\n"
        )
    return (
        f"\n**Runs with models cut while still improving** (a verdict on them may change with more epochs; "
        f"[budgets.md](budgets.md)): {', '.join(f'`{r}`' for r in flagged)}.\n"
    )


register_page(
    Page(
        name="claims",
        order=20,
        reads=("metrics", "poc", "per_class", "budgets", "tuning", "settings", "reruns"),
        outputs=("claims.md", "claims.csv", "figures/claims_forest.png"),
        write=write,
    )
)
