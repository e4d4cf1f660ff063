"""reports/README.md: what was run, links to every table and figure, and what each ablation shows."""

from __future__ import annotations

import hashlib
import json
import platform
from importlib.metadata import PackageNotFoundError, version

import pandas as pd

from pipeline import numerics
from pipeline.config import to_dict
from pipeline.params.root import Params
from pipeline.reporting.names import label

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


def _best(table: pd.DataFrame) -> pd.Series:
    """The point of a sweep a user would pick without the test set: the highest validation MAP@R (issue 62; the
    test MAP@R it is reported with decides nothing)."""
    return table.loc[table.best_val_map_at_r.idxmax()]


def _point(row: pd.Series) -> str:
    return f"validation {100 * row.best_val_map_at_r:.1f}%, test {100 * row.test_map_at_r:.1f}%"


def _span(table: pd.DataFrame) -> str:
    return f"{100 * table.test_map_at_r.min():.1f}-{100 * table.test_map_at_r.max():.1f}%"


def ccp_paragraphs(table: pd.DataFrame, loss: str, fold: int) -> list[str]:
    """What the CCP ablation figures show, with numbers."""
    grid = table[table.sweep == "proxies_pool"]
    lam = table[table.sweep == "lambda"]
    out = []
    if len(grid):
        best = _best(grid)
        random = grid[grid.pool_size == grid.proxies_per_class]
        rand_text = ""
        if len(random):
            gain = [
                100 * (_best(grid[grid.proxies_per_class == p]).test_map_at_r - r)
                for p, r in zip(random.proxies_per_class, random.test_map_at_r)
            ]
            rand_text = (
                " Against random proxy selection (b = #proxy), the pool size of each #proxy with the best validation "
                "MAP@R gains "
                + ", ".join(f"{g:+.1f}" for g in gain)
                + " points (#proxy = "
                + ", ".join(str(p) for p in random.proxies_per_class)
                + ")."
            )
        out.append(
            f"**#proxy x pool size (CCP Fig. 5)** — `figures/ccp_proxies_pool.png`: {loss.upper()}-CCP on fold {fold}, "
            f"test MAP@R spans {_span(grid)}; the best point by validation MAP@R is #proxy = "
            f"{best.proxies_per_class}, b = {best.pool_size} ({_point(best)}).{rand_text} The paper reports that "
            "both more proxies and a larger pool help on CUB and Cars196; differences below about 2 points are within "
            "the fold-to-fold spread of this data set (see the std columns of the results table)."
        )
    if len(lam):
        best = _best(lam)
        zero = lam[lam["lambda"] == 0]
        zero_text = f"; λ = 0 gives {100 * zero.test_map_at_r.iloc[0]:.1f}%" if len(zero) else ""
        out.append(
            f"**CCP λ sweep** — `figures/ccp_lambda.png`: test MAP@R spans {_span(lam)}, best by validation MAP@R "
            f"at λ = {best['lambda']:g} ({_point(best)}){zero_text}."
        )
    return out


def profs_paragraphs(table: pd.DataFrame, loss: str, fold: int) -> list[str]:
    """What the PROFS ablation figures show, with numbers."""
    out = []
    lam = table[table.sweep == "lambda"]
    m = table[table.sweep == "m"]
    if len(lam):
        best = _best(lam)
        out.append(
            f"**PROFS λ sweep (PROFS Fig. 3)** — `figures/profs_lambda.png`: {loss}-PROFS on fold {fold}, "
            f"test MAP@R spans {_span(lam)}, best by validation MAP@R at λ = {best['lambda']:g} ({_point(best)}). "
            "The paper finds similar results for λ in [1e-4, 1e-2] and drops outside."
        )
    if len(m):
        best = _best(m)
        out.append(
            f"**PROFS steps per projection M (PROFS Fig. 2)** — `figures/profs_m.png`: fixed M, test MAP@R "
            f"spans {_span(m)}, best by validation MAP@R at M = {best.m:.0f} ({_point(best)}). The paper sees "
            "performance rise with M up to a data-set-dependent value and then fall."
        )
    return out


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
    poc = inputs.poc
    a = params.ablation
    paragraphs = ccp_paragraphs(inputs.ablations["ccp"], a.ccp.loss, a.fold) + profs_paragraphs(
        inputs.ablations["profs"], a.profs.loss, a.fold
    )
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
