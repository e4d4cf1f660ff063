"""Figures rendered from stage outputs."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402

from pipeline.infra.io import atomic_path  # noqa: E402


def poc_figure(runs: dict[str, dict], path: Path) -> None:
    """CCP Fig. 2: training samples (dots) and proxies (squares) in 2-D, one panel per run."""
    fig, axes = plt.subplots(1, len(runs), figsize=(6.2 * len(runs), 7.0), squeeze=False)
    cmap = plt.get_cmap("tab10")
    for ax, (title, r) in zip(axes[0], runs.items()):
        ax.add_patch(plt.Circle((0, 0), 1.0, fill=False, ls="--", lw=0.8, color="grey"))
        for c in range(10):
            e = r["embeddings"][r["labels"] == c]
            ax.scatter(e[:, 0], e[:, 1], s=6, alpha=0.35, color=cmap(c), label=f"digit {c}")
            p = r["proxies"][r["proxy_labels"] == c]
            ax.scatter(p[:, 0], p[:, 1], s=70, marker="s", color=cmap(c), edgecolors="black", linewidths=1.0)
            n = r["next_proxies"][r["proxy_labels"] == c]
            ax.scatter(n[:, 0], n[:, 1], s=45, marker="o", facecolors="none", edgecolors=cmap(c), linewidths=1.5)
        ax.set_title(
            f"{title}\ncovering radius of converged anchors: max {r['covering_radius_max']:.3f}, "
            f"mean {r['covering_radius_mean']:.3f}\nof the next K-center proxies: max {r['next_radius_max']:.3f}, "
            f"mean {r['next_radius_mean']:.3f}; test MAP@R {100 * r['test_map_at_r']:.1f}%",
            fontsize=10,
        )
        ax.set_xlabel("embedding dimension 1")
        ax.set_ylabel("embedding dimension 2")
        ax.set_aspect("equal")
        ax.set_xlim(-1.1, 1.1)
        ax.set_ylim(-1.1, 1.1)
    handles, labels = axes[0][0].get_legend_handles_labels()
    handles.append(plt.Line2D([], [], marker="s", ls="", color="white", markeredgecolor="black", markersize=8))
    labels.append("converged proxy (anchor sample in sample-based CCP)")
    handles.append(plt.Line2D([], [], marker="o", ls="", color="white", markeredgecolor="black", markersize=7))
    labels.append("next proxy (K-center)")
    fig.legend(handles, labels, loc="lower center", ncol=min(12, 6 * len(runs)), markerscale=2, fontsize=9)
    fig.suptitle("CCP proof of concept (CCP Fig. 2): 2-D embeddings of the ten digit classes, training samples")
    save(fig, path, rect=(0, 0.1, 1, 0.93))


def save(fig, path: Path, rect=(0, 0, 1, 1), dpi: int = 110, colors: int | None = None) -> None:
    """Lay out (within `rect` of the figure), write the PNG under a temporary name, rename, close.

    With `colors`, a palette PNG of that many colours (median cut, no dithering: the same bytes on every
    machine), a fraction of a full-colour PNG's size in git (the pictures of pipeline/reporting/pictures.py).
    """
    fig.tight_layout(rect=rect)
    if colors is None:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format="png")
    else:
        buffer = io.BytesIO()
        fig.savefig(buffer, dpi=dpi, format="png")
        with Image.open(buffer) as image:
            rgb = image.convert("RGB")
            small = rgb.quantize(colors=colors, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        with atomic_path(path) as tmp:
            small.save(tmp, format="PNG", optimize=True)
    plt.close(fig)


def _lambda_axis(ax, values) -> None:
    """Lambda on a symmetric-log axis, so that lambda = 0 is shown beside the powers of ten."""
    positive = [v for v in values if v > 0]
    ax.set_xscale("symlog", linthresh=min(positive) if positive else 1e-6)
    ax.set_xlabel("regulariser weight λ (symmetric log scale; 0 = no regulariser)")


def sweep_figure(
    table,
    x: str,
    title: str,
    path: Path,
    series: str | None = None,
    xlabel: str = "",
    lambda_axis: bool = False,
    mark=None,
) -> None:
    """Test MAP@R (solid) and best validation MAP@R (dashed) of an ablation sweep against `x`, one line
    per value of `series`; `mark` = the x value the pipeline's own runs use (dotted line)."""
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    groups = table.groupby(series, sort=True) if series else [(None, table)]
    for i, (key, t) in enumerate(groups):
        t = t.sort_values(x)
        color = plt.get_cmap("tab10")(i)
        label = f"{series.replace('_', ' ')} = {key}: " if series else ""
        ax.plot(t[x], 100 * t.test_map_at_r, "o-", color=color, label=f"{label}test MAP@R (unseen classes)")
        ax.plot(t[x], 100 * t.best_val_map_at_r, "s--", color=color, alpha=0.6, label=f"{label}best validation MAP@R")
    if lambda_axis:
        _lambda_axis(ax, list(table[x]))
    else:
        ax.set_xlabel(xlabel)
    if mark is not None:
        ax.axvline(mark, ls=":", color="grey", label=f"pipeline's value ({mark:g})")
    ax.set_ylabel("MAP@R (%)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, path)


def variants_figure(frame, losses: list[str], variants: list[str], path: Path, title: str) -> None:
    """Separated MAP@R (mean +- std over the fold x seed models) of each loss x variant as grouped bars
    (CCP Fig. 4a)."""
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    width = 0.8 / len(variants)
    for j, variant in enumerate(variants):
        rows = [frame.loc[f"{loss}_{variant}"] for loss in losses]
        xs = [i + (j - (len(variants) - 1) / 2) * width for i in range(len(losses))]
        ax.bar(xs, [r.value for r in rows], width, yerr=[r["std"] for r in rows], capsize=3, label=variant)
        for x, r in zip(xs, rows):
            ax.text(x, r.value + r["std"] + 0.3, f"{r.value:.1f}", ha="center", fontsize=7)
    ax.set_xticks(range(len(losses)), [loss.upper() for loss in losses])
    ax.set_xlabel("loss")
    ax.set_ylabel("MAP@R, separated (%), mean ± std over fold x seed models")
    ax.set_title(title, fontsize=10)
    ax.legend(title="variant", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    save(fig, path)


def _nothing_to_show(path: Path, text: str) -> None:
    fig, ax = plt.subplots(figsize=(7.0, 2.0))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=11)
    save(fig, path)


NO_ALTERNATING_RUN = "no CCP run with re-initialised proxies (variant ccp or sample_ccp) in ccp.alternating"


def steps_figure(rows, path: Path) -> None:
    """Distribution of the steps of each projection (sub-problem) of the CCP runs (CCP Fig. 4b)."""
    if rows.empty:
        return _nothing_to_show(path, NO_ALTERNATING_RUN)
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    runs = list(dict.fromkeys(rows.run))
    ax.hist([rows[rows.run == r].steps for r in runs], bins=20, stacked=True, label=runs)
    ax.set_xlabel("training steps in one projection (sub-problem)")
    ax.set_ylabel("number of sub-problems (all folds)")
    ax.set_title(
        f"Steps per projection problem (CCP Fig. 4b): {len(rows)} sub-problems, median {rows.steps.median():.0f} steps",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    save(fig, path)


def subproblems_figure(rows, path: Path) -> None:
    """Covering radius (max over classes) and best validation MAP@R per sub-problem, mean over the models."""
    if rows.empty:
        return _nothing_to_show(path, NO_ALTERNATING_RUN)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.4))
    for run, t in rows.groupby("run", sort=False):
        mean = t.groupby("subproblem")[["covering_radius_max", "initial_radius_max", "best_val_map_at_r"]].mean()
        (line,) = left.plot(mean.index, mean.covering_radius_max, "o-", label=f"{run}: end of sub-problem")
        left.plot(mean.index, mean.initial_radius_max, "x:", color=line.get_color(), label=f"{run}: after K-center")
        right.plot(mean.index, 100 * mean.best_val_map_at_r, "o-", label=run)
    left.set_xlabel("sub-problem (projection) index")
    left.set_ylabel("covering radius, max over classes")
    left.set_title(
        "Covering radius over sub-problems (CCP Prop. 4.2),\nmean over the models that reach the index", fontsize=10
    )
    right.set_xlabel("sub-problem (projection) index")
    right.set_ylabel("best validation MAP@R in the sub-problem (%)")
    right.set_title("Validation MAP@R over sub-problems,\nmean over the models that reach the index", fontsize=10)
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, path)


def spectrum_figure(spectra: dict, decay: dict, path: Path) -> None:
    """Normalised singular values of the test embeddings (mean over the models) per run, log scale
    (Revisiting section 5 and its Fig. 8); rho(Phi) in the legend."""
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    for run, values in spectra.items():
        ax.plot(range(1, len(values) + 1), values, label=f"{run} (ρ(Φ) = {decay[run]:.3f})")
    ax.set_yscale("log")
    ax.set_xlabel("singular value index (largest first)")
    ax.set_ylabel("normalised singular value (sums to 1)")
    ax.set_title(
        "Singular value spectrum of the test embeddings (Revisiting section 5, main paper Fig. 8),\n"
        "mean over the models",
        fontsize=10,
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    save(fig, path)


def curves_figure(logs, models, path: Path, columns: int = 6) -> None:
    """Validation MAP@R per epoch of every run, one panel per run and one line per model, the best epoch
    marked (dot) and a model cut while improving drawn red: did the curves flatten before training stopped?"""
    runs = list(dict.fromkeys(logs.run))
    rows = -(-len(runs) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.0 * columns, 2.3 * rows), squeeze=False, sharey=True)
    for ax, run in zip(axes.flat, runs):
        for model, t in logs[logs.run == run].groupby("model", sort=False):
            m = models[(models.run == run) & (models.model == model)].iloc[0]
            color = "tab:red" if m.cut_while_improving else "tab:blue"
            ax.plot(t.epoch, 100 * t.val_map_at_r, lw=0.8, alpha=0.7, color=color)
            ax.plot(m.best_epoch, 100 * t.val_map_at_r.max(), "o", ms=3, color=color)
        ax.set_title(run, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(runs) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("val MAP@R (%)")
    for ax in axes[-1]:
        ax.set_xlabel("epoch")
    fig.suptitle(
        "Validation MAP@R per epoch, one line per fold x seed model (dot: best epoch; red: stopped "
        "before its patience ran out)",
        fontsize=11,
    )
    save(fig, path, rect=(0, 0, 1, 0.97))
