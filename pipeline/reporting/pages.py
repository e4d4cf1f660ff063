"""The report's pages: each `write_*` renders one page of reports/ (markdown, CSV, LaTeX, figures) from the
inputs the report stage read (pipeline/reporting/inputs.py); `write_report` writes them all."""

from pathlib import Path

import pandas as pd

from pipeline.infra.io import write_text
from pipeline.reporting import budgets, comparison, figures, forest, index, tuning
from pipeline.reporting.claims import (
    RANGE_END,
    STILL_IMPROVING,
    claim_differences,
    claims_markdown,
    claims_table,
    compared_runs,
    flagged_runs_note,
    paper_claims,
)
from pipeline.reporting.families import family_reports
from pipeline.reporting.inputs import ReportInputs, context_lines
from pipeline.reporting.lanml_table import anml_table2, lanml_markdown, table2_claims, table2_claims_markdown
from pipeline.reporting.reference import paper_dataset
from pipeline.reporting.tables import markdown_table, results_frame
from pipeline.studies import ablation


def figure_names() -> tuple[str, ...]:
    """Every figure the report draws (reports/figures/<name>.png), in the index's order: after the training curves, the
    families' ablation figures (their records, pipeline/families), then their own (pipeline/reporting/families)."""
    ablations = tuple(f.file for name in ablation.studies() for f in ablation.study(name).figures)
    return (
        "tuning_history",
        "validation_curves",
        *ablations,
        *(name for report in family_reports() for name in report.figures),
        "spectrum",
    )


def write_results(params, inputs: ReportInputs, out: Path, context: str) -> None:
    frame = results_frame(inputs.metrics, params.eval.recall_at, params.train.embedding_dim)
    order = ["_last"] + ([params.report.sort_by] if params.report.sort_by != "none" else [])
    frame = (
        frame.assign(_last=frame["protocol"].str.startswith("concatenated"))
        .sort_values(order, ascending=[True] + [False] * (len(order) - 1), kind="stable")
        .drop(columns="_last")
    )
    header = (
        "# Results\n\n"
        + context
        + "- runs: baselines `"
        + "`, `".join(params.experiment.methods)
        + "`; CCP family `<loss>_<variant>` "
        "(batch: the loss on in-batch pairs; loss_proxy: one proxy-DML, Loss-Proxy of CCP Fig. 4a; "
        "ccp: Algorithm 1; sample_ccp: sample anchors); PROFS family `<loss>_<variant>` (plain: the loss on "
        "ordinary batches; profs: Algorithm 1 with class representatives; profs_hncm: with hard negative class "
        "mining)\n"
        "- metrics in %, mean ± half-width of the 95% t interval; separated: over the fold x seed models; "
        "concatenated: each seed's fold models' L2-normalised embeddings concatenated, over the seeds; "
        "best mean per protocol in bold (sample std, and each model's and seed's metrics: results.csv and "
        "reports/metrics/<run>.json)\n\n"
    )
    write_text(out / "results.md", header + markdown_table(frame, params.eval.recall_at, params.report.decimals))
    write_text(out / "results.csv", frame.to_csv(index=False, float_format="%.4f"))


def write_claims(params, inputs: ReportInputs, out: Path, context: str) -> pd.DataFrame:
    """reports/claims.md and .csv: every testable claim of the papers with its paired difference and verdict."""
    claims = paper_claims(params)
    table = claims_table(
        claims,
        inputs.metrics,
        inputs.poc,
        inputs.per_class,
        params.report.bootstrap_samples,
        params.seed,
        budgets.failed_models(inputs.budgets),
        inputs.budgets.groupby("run").cut_while_improving.sum().to_dict(),
        claim_differences(params, claims),
        {r["run"]: r for r in inputs.tuning},
    )
    counts, holm_counts = table.verdict.value_counts(), table.verdict_holm.value_counts()
    shown = ("reproduced", "contradicted", "inconclusive", "untuned", "tuning unfinished", "not tested", "not run")
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in shown)
    summary += f" ({int(table.fragile.sum())} of the reproduced or contradicted fragile)"
    summary_holm = ", ".join(f"{holm_counts.get(v, 0)} {v}" for v in shown[:3])
    models = len(params.experiment.folds) * len(params.experiment.seeds)
    text = (
        "# Do the papers' claims hold here?\n\n"
        + context
        + f"- each row compares two runs trained on the same {len(params.experiment.folds)} MLRC folds with the same "
        f"{len(params.experiment.seeds)} replicate seeds: {models} paired models; the difference is claimed-better "
        "minus base, separated test metric, in points (%); the 2-D proof of concept pairs its variants over "
        f"{len(params.poc.seeds)} seeds (`poc.seeds`)\n"
        "- the runs of a claim start from the same initial network and see the same batches until their methods "
        "differ (common random numbers); every run has the same budget rule (see [budgets.md](budgets.md))\n"
        "- the unit is the fold: a fold's seeds share its classes and fail together, so the models of a claim are "
        f"{len(params.experiment.folds)} observations, not {models}. Two 95% intervals of the mean difference: the t "
        "interval over the fold means, and a cluster bootstrap that resamples the folds, then the test classes "
        f"({params.report.bootstrap_samples} resamples; the claims are about classes the models never saw). Verdict, "
        "on MAP@R: **reproduced** when both intervals lie above 0, **contradicted** when both lie below, "
        "**inconclusive** otherwise; **Holm**: the same verdicts after Holm's adjustment over the claims tested "
        "on the MLRC runs here (each with the larger of its two p-values), for a family of claims read together\n"
        "- a compared model **failed** when it kept epoch 0 or 1 or its validation MAP@R never rose above the "
        "untrained network's ([budgets.md](budgets.md)); such models are named, the claim is measured again "
        "without their pairs, and where that changes the verdict the claim is **not tested** (its difference rests "
        "on a failure); so is a claim with more than one model of an arm cut by a cap while improving (the epoch "
        "cap or ccp.max_subproblems: raise it for the data set), the 2-D proof of concept's seeds by the same rule "
        "(poc.max_epochs, poc.max_subproblems); a claim whose runs are not configured is **not run**\n"
        "- equal tuning effort (MLRC): a claim reads **untuned** unless both arms were tuned by a study of their own "
        "with the same number of trials ([tuning.md](tuning.md); an arm at params.yaml's values, or at values another "
        "run's study chose, is untuned), and **tuning unfinished** when an arm's chosen value lies at an end of its "
        "search range or its study found its best among its last trials; either replaces the verdict, the "
        "intervals stay in the table, and column *failed models, caps, tuning* says why. The 2-D proof of concept "
        "trains every variant at the paper's Fig. 2 settings and is a Holm family of its own\n"
        "- **fragile**: a reproduced or contradicted verdict whose sign flips (or reaches 0) when any one fold (2-D: "
        "seed) is left out in turn, or whose P@1 difference has the other sign; the verdict keeps its rule, the mark "
        "says it hangs on one fold or on the metric (column *leave one out, P@1*)\n"
        "- *the arms differ in*: the recorded settings of the two runs that differ "
        "(pipeline/runs.py run_record); for a method family's runs, the variant\n"
        "- the papers measured these claims on CUB200 / Cars196 / SOP / In-shop (and MNIST for the 2-D case); a "
        "verdict here is about this data set and these settings, not about theirs\n\n"
        f"**{summary}** of {len(table)} claims; after Holm's adjustment **{summary_holm}**.\n\n"
        + claims_markdown(table, params.report.decimals)
        + _failed_note(table)
        + _cut_note(table, inputs.budgets)
        + flagged_runs_note(table, tuning.runs_at_range_ends(params, inputs.tuning), RANGE_END)
        + flagged_runs_note(table, tuning.runs_still_improving(inputs.tuning), STILL_IMPROVING)
    )
    write_text(out / "claims.md", text)
    write_text(out / "claims.csv", table.to_csv(index=False, float_format="%.4f"))
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


def write_budgets(params, inputs: ReportInputs, out: Path, context: str) -> None:
    """reports/budgets.md / .csv: best and stop epoch, sub-problems / projections, runs cut while improving."""
    models = inputs.budgets
    text = (
        "# Training budgets: did every run get the same rule, and did its curves flatten?\n\n"
        + context
        + "- one rule for every run: training may stop once `patience` epochs have passed without a better "
        "validation MAP@R (by more than train.min_delta), and stops at `max epochs`; CCP takes the stop only at the "
        "end of a sub-problem (a sub-problem ends after ccp.patience epochs without improvement), PROFS only at "
        "the end of an epoch in which a projection ended; the best epoch's weights are kept\n"
        "- epochs of train.steps_per_epoch steps; best and stop epoch per model: median (min-max) over the "
        "fold x seed models; sub-problems (CCP, Loss-Proxy: 1) or projections (PROFS) reached per model\n"
        "- **cut while improving**: a model that stopped fewer than `patience` epochs after its best epoch "
        "(at the epoch cap or ccp.max_subproblems), so its curve may not have flattened; a claim with more than one "
        "such model in an arm is not tested ([claims.md](claims.md))\n"
        "- **failed models**: kept epoch 0 or 1, or never rose above the untrained network's validation MAP@R "
        "(epoch 0); named in the claims they take part in, which are measured again without them\n"
        "- the curves: [figures/validation_curves.png](figures/validation_curves.png)\n\n"
        + budgets.budget_markdown(models, inputs.patience, inputs.max_epochs)
        + "\n## The 2-D proof of concept (CCP Fig. 2): where each seed stopped\n\n"
        f"The same rule with poc.max_epochs {params.poc.max_epochs}, poc.max_subproblems {params.poc.max_subproblems} "
        f"and train.patience {params.train.patience}; a claim with more than one seed of a variant cut while "
        "improving is not tested ([claims.md](claims.md)).\n\n"
        + budgets.poc_markdown(inputs.poc)
        + "\n## Would a shorter patience have changed what was kept?\n\n"
        "A model's training does not depend on its patience, only where it stops, so early stopping with a "
        "shorter patience can be replayed on each logged curve (with the CCP / PROFS stopping points): how many "
        "models would have kept an earlier epoch, and the validation MAP@R (points) lost against the epoch kept "
        "here. Small losses at shorter patience mean the curves had flattened well before the stop; patience 20 "
        "is the rule before issue 62 ([docs/results.md](../docs/results.md#the-stopping-rule)).\n\n"
        + budgets.replay_markdown(
            budgets.replay_shorter_patience(inputs.logs, inputs.patience, params.train.min_delta),
            params.report.decimals,
        )
    )
    write_text(out / "budgets.md", text)
    write_text(out / "budgets.csv", models.to_csv(index=False))


def write_comparisons(params, inputs: ReportInputs, out: Path, context: str, claims: pd.DataFrame) -> list[str]:
    """The comparison tables per protocol (md, csv, tex) and, on a data set no paper reports, the
    orientation and rank-agreement tables. Returns the markdown files written."""
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
        runs = list(inputs.metrics)
        orient = comparison.orientation(runs, published)
        text = (
            f"# Published numbers for the runs measured here\n\n{context}\n"
            "## What the papers report for these runs on the real benchmarks (%, for orientation only)\n\n"
            "MAP@R: the CCP supplement's MLRC tables, separated 128-D, BN-Inception. R@1: the first conventional "
            "table in reference/published.csv that reports the run (CCP Tables 1-2, PROFS Tables 1-2, ANML Tables "
            "3-6, Revisiting supplement Tables 4-9). Measured values on this data set are in the tables beside.\n\n"
            + orient.to_markdown(floatfmt=f".{decimals}f").replace("nan", "-")
            + "\n\n"
            "## Does CCP help here where the papers say it does? (signs, per loss)\n\n"
            "CCP - batch: ours against the CCP supplement's CCP-L - batch on each of its data sets (MLRC, separated "
            "128-D MAP@R, points); CCP - Loss-Proxy: ours with the verdict of its claim ([claims.md](../claims.md)) "
            "against CCP Fig. 4a, which claims a gain for every loss without giving numbers. A sign is evidence only "
            "as far as its claim's interval goes.\n\n"
            + comparison.sign_agreement(inputs.map_at_r.value, published, claims, [loss for loss in params.ccp.losses])
            + "\n## Do the runs come out in the same order here as in the papers?\n\n"
            "Spearman's rank correlation between our measured value (this data set, same column: separated mean or "
            "concatenated) and the published one, over the runs both report (at least 3), with its two-sided "
            "p-value (no association). The ceiling is the range of the same correlation between the paper's own "
            "data sets over the same runs: how well the benchmarks agree with each other, the most that a stand-in "
            "data set can be expected to reach. With 8 runs, rho must exceed about 0.74 for p < 0.05; a rho "
            "within the ceiling's range is agreement as good as the benchmarks', not proof that the methods rank "
            "the same here.\n\n" + ranks.drop(columns="run_names").to_markdown(index=False, floatfmt=".2f") + "\n"
        )
        write_text(out / "tables" / "published_vs_measured.md", text)
        write_text(out / "tables" / "rank_agreement.csv", ranks.to_csv(index=False, float_format="%.4f"))
        written.append("published_vs_measured.md")
    return written


def write_tuning(params, inputs: ReportInputs, out: Path, context: str) -> None:
    """reports/tuning.md: MLRC's tuning step per run (values used, written values, ranges, best validation MAP@R)."""
    text = (
        "# Hyperparameters tuned on the validation folds (MLRC's step)\n\n"
        + context
        + f"- each study: Optuna {params.tune.sampler.upper()} sampler, {params.tune.startup_trials} random trials "
        "first, seeded; a trial trains the run on every MLRC fold with the first replicate seed at the same budget "
        "rule as the final runs, and scores the mean over the folds of the best validation MAP@R; the test "
        "classes are never read (pipeline/studies/tuning.py)\n"
        "- a family's variants share its loss keys: the base variant tunes them, the others train at them "
        '("from" rows) and search only their own keys (`tune.inherit`)\n'
        "- the best validation MAP@R is the study's own selection, optimistic for the value it picked; the test "
        "metrics of the runs trained at these values are in [results.md](results.md)\n"
        "- the optimisation history: [figures/tuning_history.png](figures/tuning_history.png)\n\n"
        + tuning.tuning_markdown(params, inputs.tuning, params.report.decimals)
    )
    write_text(out / "tuning.md", text)


def write_figures(params, inputs: ReportInputs, out: Path) -> None:
    fig = out / "figures"
    tuning.history_figure(inputs.tuning, params.tune.startup_trials, fig / "tuning_history.png")
    figures.curves_figure(inputs.logs, inputs.budgets, fig / "validation_curves.png")
    for name in ablation.studies():  # each family's ablation figures (its record)
        table = inputs.ablations[name]
        for f in ablation.study(name).figures:
            figures.sweep_figure(
                table[table.sweep == f.sweep],
                f.x,
                f.title(params),
                fig / f"{f.file}.png",
                series=f.series,
                xlabel=f.xlabel,
                lambda_axis=f.lambda_axis,
                mark=None if f.mark is None else f.mark(params),
            )
    spectra = {r: t.groupby("index").singular_value.mean().to_numpy() for r, t in inputs.spectra.items()}
    figures.spectrum_figure(spectra, inputs.spectral_decay, fig / "spectrum.png")


def write_lanml(params, inputs: ReportInputs, out: Path) -> None:
    cfg = params.lanml
    write_text(
        out / "lanml.md",
        (
            "# LANML on UCI data (ANML section 7.1)\n\n"
            f"- {cfg.repeats} random {100 - 100 * cfg.test_fraction:.0f}/{100 * cfg.test_fraction:.0f} splits; z-score "
            f"and PCA to {cfg.pca_dims} dims fitted on the training part; hyperparameters and K (1..{cfg.max_k}) "
            "chosen "
            f"by {cfg.cv_folds}-fold cross-validation on the training part\n"
            "- accuracy in %, mean ± sample std over the splits; the paper reports the best K on the test part, "
            "shown in its own column for a like-for-like comparison\n"
            "- fit times are clock readings, so they are not among these reproducible results: the lanml_timing "
            "stage measures LANML-, LANML+ and LMNN side by side in [lanml_timing.md](lanml_timing.md)\n\n"
            + table2_claims_markdown(table2_claims(inputs.lanml), params.report.decimals)
            + lanml_markdown(inputs.lanml, anml_table2(inputs.published), params.report.decimals)
        ),
    )


def write_report(params, inputs: ReportInputs, out: Path) -> None:
    """Every page, table and figure of reports/ but the published copies, each file replaced atomically."""
    context = context_lines(params, inputs)
    write_results(params, inputs, out, context)
    claims = write_claims(params, inputs, out, context)
    companions = dict(c.split("=", 1) for c in params.report.companions)
    forest.forest_figure(
        {params.data.name: claims, **{n: forest.read_companion(n, Path(p)) for n, p in companions.items()}},
        out / "figures" / "claims_forest.png",
    )
    write_budgets(params, inputs, out, context)
    write_tuning(params, inputs, out, context)
    tables = write_comparisons(params, inputs, out, context, claims)
    write_figures(params, inputs, out)
    for report in family_reports():  # each family's own figures and pages
        report.write(params, inputs, out, context)
    write_lanml(params, inputs, out)
    write_text(out / "README.md", index.index_markdown(params, inputs, context, tables, claims, figure_names()))
