"""reports/README.md: what was run, links to every table and figure, and what they show (each ablation's paragraphs
are its family's, pipeline/families)."""

from __future__ import annotations

import hashlib
import json
import platform
from importlib.metadata import PackageNotFoundError, version

import pandas as pd

from pipeline import numerics
from pipeline.config import to_dict
from pipeline.params.root import Params
from pipeline.reporting.families import family_reports
from pipeline.reporting.names import label
from pipeline.studies import ablation

PACKAGES = ("torch", "pytorch-metric-learning", "faiss-cpu", "scikit-learn", "metric-learn", "cvxpy", "numpy", "dvc")


def params_hash(params: Params) -> str:
    """First 12 hex digits of the SHA-256 of the validated params (sorted JSON): equal hashes, equal settings."""
    return hashlib.sha256(json.dumps(to_dict(params), sort_keys=True, default=str).encode()).hexdigest()[:12]


def versions() -> str:
    found = []
    for name in PACKAGES:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            pass
    return f"Python {platform.python_version()}, " + ", ".join(found)


def pictures_markdown(params, inputs: dict) -> str:
    """Links to every run's retrieval grid and t-SNE map (stage pictures)."""
    cfg = params.report
    rows = "\n".join(
        f"| {label(run)} | [top-{cfg.retrieval_k}](pictures/retrieval/{run}.png) | [map](pictures/maps/{run}.png) |"
        for run in inputs.metrics
    )
    return (
        "## Pictures: what each run retrieves\n\n"
        f"Per run, from the model of fold {params.experiment.folds[0]} and seed {params.experiment.seeds[0]}: "
        f"the top-{cfg.retrieval_k} neighbours of {cfg.retrieval_queries} fixed test queries (the same images for "
        "every run; red frames: another class), and a t-SNE map of the test embeddings of "
        f"{cfg.map_classes} test classes, one colour each.\n\n| run | retrieval | map |\n|---|---|---|\n{rows}\n\n"
    )


def forest_panels(params) -> list[str]:
    """The data sets figures/claims_forest.png shows: this one, then report.companions."""
    return [params.data.name, *(c.split("=", 1)[0] for c in params.report.companions)]


def index_markdown(
    params, inputs: dict, context: str, tables: list[str], claims: pd.DataFrame, figures: tuple[str, ...]
) -> str:
    """reports/README.md: the claims' verdicts, what was run, links to every table, figure and picture, and what
    the figures show."""
    a = params.ablation
    paragraphs = [
        p for name in ablation.studies() for p in ablation.study(name).paragraphs(inputs.ablations[name], params)
    ]
    paragraphs += [p for report in family_reports() for p in report.paragraphs(params, inputs)]
    paragraphs.append(
        "**Singular value spectrum (Revisiting section 5)** — `figures/spectrum.png`: ρ(Φ) "
        + ", ".join(f"{r} {v:.3f}" for r, v in inputs.spectral_decay.items())
        + "; the Revisiting paper links lower ρ (a flatter spectrum) to better generalisation."
    )
    links = "\n".join(
        f"- [{t}](tables/{t}) (also .csv and .tex beside it)"
        if not t.startswith("published")
        else f"- [{t}](tables/{t})"
        for t in tables
    )
    figs = "\n".join(f"- [{f}.png](figures/{f}.png)" for f in (*figures, "ccp_poc"))
    verdicts = "\n".join(
        f"- {r.claim} ({r.source}): **{r.verdict}**"
        + (" (fragile)" if r.fragile else "")
        + (f" (Holm: {r.verdict_holm})" if r.verdict_holm != r.verdict else "")
        for _, r in claims.iterrows()
    )
    pinned = ", ".join(f"`{k}={v}`" for k, v in numerics.settings().items())
    return (
        "# Reports index\n\n![every claim's difference with its intervals](figures/claims_forest.png)\n\n"
        "[figures/claims_forest.png](figures/claims_forest.png): every claim's mean paired MAP@R difference with "
        "its two 95% intervals, "
        + (
            " and ".join(f"`{name}`" for name in panels) + " side by side"
            if len(panels := forest_panels(params)) > 1
            else f"`{panels[0]}`"
        )
        + ", coloured by verdict (an open point: a fragile verdict).\n\n## Claims: [claims.md](claims.md) (and "
        "claims.csv)\n\n"
        "Each claim of the papers that this default can test, with the paired difference over the fold x seed "
        f"models (the folds are the unit), its 95% intervals, a verdict (fragile: its sign flips as one fold is "
        "left out, or P@1 has the other sign) and the verdict after Holm's adjustment:"
        f"\n\n{verdicts}\n\n"
        "Every run had the same budget rule, and [budgets.md](budgets.md) shows whether its curves had "
        "flattened. Which verdicts changed when the methods were made to run as their authors ran them, and "
        f"why: docs/results.md and CHANGELOG.md.\n\n## What was run\n\n{context}"
        f"- params hash: `{params_hash(params)}` (SHA-256 of the validated params.yaml; equal hashes, "
        "equal settings)\n"
        f"- runs: {len(inputs.metrics)} ({', '.join(inputs.metrics)}); ablations on fold {a.fold}; LANML on "
        f"{', '.join(params.lanml.datasets)}\n- software: {versions()} (installed from requirements-lock.txt)\n"
        f"- CPU numerics pinned in every stage (pipeline/numerics.py), so the CPU default gives these numbers on any "
        f"x86-64 CPU: {pinned}\n\n"
        "## Tables\n\n- [results.md](results.md): every metric of every run (and results.csv)\n"
        "- [budgets.md](budgets.md): every run's best and stop epochs, sub-problems / projections, and the "
        "models cut while improving (and budgets.csv)\n"
        "- [tuning.md](tuning.md): the hyperparameters each run trained at, tuned on the validation folds\n"
        f"{links}\n- [ccp_subproblems.md](ccp_subproblems.md): CCP sub-problem diagnostics\n"
        "- [lanml.md](lanml.md): LANML on UCI data beside ANML Table 2; "
        "[lanml_timing.md](lanml_timing.md): LANML and LMNN fit times (clock readings, the one output "
        "that differs between machines and runs)\n\n"
        f"## Figures\n\n{figs}\n- training curves: `dvc plots show` (reports/train_logs, validation MAP@R per "
        "epoch)\n\n"
        + pictures_markdown(params, inputs)
        + "## What the figures show\n\n"
        + "\n\n".join(paragraphs)
        + "\n"
    )
