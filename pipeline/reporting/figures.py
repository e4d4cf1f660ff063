"""Figures rendered from stage outputs."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from pipeline.io import atomic_path  # noqa: E402


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
        ax.set_title(f"{title}\ncovering radius of converged anchors: max {r['covering_radius_max']:.3f}, "
                     f"mean {r['covering_radius_mean']:.3f}\nof the next K-center proxies: max {r['next_radius_max']:.3f}, "
                     f"mean {r['next_radius_mean']:.3f}; test MAP@R {100 * r['test_map_at_r']:.1f}%", fontsize=10)
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
    fig.tight_layout(rect=(0, 0.1, 1, 0.93))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
