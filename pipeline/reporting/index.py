"""reports/README.md, the index of the report's pages (pipeline/reporting/pages): the claims' verdicts, what was run,
each page's links and figures, and the paragraphs that say what the figures show."""

from __future__ import annotations

import hashlib
import json
import platform
from importlib.metadata import PackageNotFoundError, version

from pipeline import numerics
from pipeline.config import to_dict
from pipeline.params.root import Params
from pipeline.reporting.claims import interval_text, verdict_counts
from pipeline.reporting.names import label
from pipeline.reporting.render import render

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


def index_markdown(params, inputs, context: str, parts: list, figures: tuple[str, ...]) -> str:
    """reports/README.md from the pages in report order, each given as (page, the inputs it reads, what its `write`
    returned), and the figures they list: the claims' verdicts, what was run, each page's links, every figure and
    picture, and what the figures show."""
    claims = next(result for page, _, result in parts if page.name == "claims")
    summary, summary_holm = verdict_counts(claims)
    rows = "\n".join(
        f"| {r.claim} | {r.source} | {interval_text(r, 'map_at_r', params.report.decimals, 't')} | **{r.verdict}**"
        + (" (fragile)" if r.fragile else "")
        + f" | {r.verdict_holm} |"
        for _, r in claims.iterrows()
    )
    panels = forest_panels(params)
    return render(
        "index.md.j2",
        panels=" and ".join(f"`{name}`" for name in panels) + " side by side" if len(panels) > 1 else f"`{panels[0]}`",
        data=params.data.name,
        summary=summary,
        summary_holm=summary_holm,
        claims=len(claims),
        verdicts=rows,
        context=context,
        params_hash=params_hash(params),
        runs=list(inputs.metrics),
        fold=params.ablation.fold,
        lanml=params.lanml.datasets,
        software=versions(),
        pinned=", ".join(f"`{k}={v}`" for k, v in numerics.settings().items()),
        links=[line for page, _, result in parts for line in page.links(params, result)],
        figures=figures,
        pictures=pictures_markdown(params, inputs),
        paragraphs=[p for page, seen, _ in parts for p in page.paragraphs(params, seen)],
    )
