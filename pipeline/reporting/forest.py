"""The claims forest: each claim's mean difference with its two intervals, a row per claim, the data sets side by side.

One panel per data set (this report's claims table first, then the companions of ``report.companions``, e.g. the
emoji default's committed reports/emoji/claims.csv), one row per claim: the point is the mean paired MAP@R
difference, the thin bar the t interval over fold means, the thick bar the fold-cluster bootstrap interval
(pipeline/reporting/claims.py), coloured by the verdict, an open point for a fragile verdict (its sign flips as a fold
is left out, or P@1 disagrees); the zero line is where a claim changes sign. A claim
measured once for every data set (the 2-D proof of concept) is drawn in the first panel only.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from pipeline.reporting.figures import save  # noqa: E402

COLOURS = {
    "reproduced": "#1a9850",
    "contradicted": "#d73027",
    "inconclusive": "#7f7f7f",
    "not tested": "#fdae61",
    "untuned": "#8073ac",
    "tuning unfinished": "#b2abd2",
    "user values": "#fee08b",
}
# what a companion claims table must hold (the format of pipeline/reporting/claims.py claims_table)
COLUMNS = ("claim", "compared_over", "map_at_r_diff", "map_at_r_t_low", "map_at_r_t_high", "verdict", "verdict_holm")


def read_companion(name: str, path: Path, sigmas: float) -> pd.DataFrame:
    """A companion data set's claims table, checked for the columns the figure reads, under this version's tuning
    rules (rules.decide, with the tuning records in the `tuning` folder beside the table and the noise its
    budgets.csv and train_logs measure, selection.read_reruns): a companion committed before the rules shows the
    verdicts they give it, not the ones its own pages print."""
    from pipeline.infra.io import read_json
    from pipeline.reporting.claims import with_holm
    from pipeline.reporting.rules import decide
    from pipeline.reporting.selection import noise, read_reruns, tolerance

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: claims table of {name} not found (report.companions.{name})")
    table = pd.read_csv(path)
    missing = [c for c in (*COLUMNS, "base", "better", "p", "p1_disagrees") if c not in table]
    if missing:
        raise ValueError(f"{path}: not a claims table of this version (no {', '.join(missing)}); run its report again")
    records = sorted((path.parent / "tuning").glob("*.json"))
    if not records:
        raise FileNotFoundError(f"{path.parent / 'tuning'}: no tuning records beside the claims table of {name}")
    bound = tolerance(noise(read_reruns(path.parent)), sigmas)
    return with_holm(decide(table, {(r := read_json(f))["run"]: r for f in records}, bound))


def forest_figure(tables: dict[str, pd.DataFrame], path: Path) -> None:
    """Panels per data set (dict order), rows per claim (the first table's order, then any new ones)."""
    claims = list(dict.fromkeys(c for t in tables.values() for c in t.claim))
    once = set().union(*(set(t.claim[t.compared_over == "poc seeds"]) for t in tables.values()))
    fig, axes = plt.subplots(
        1, len(tables), figsize=(5.2 * len(tables) + 3.5, 0.42 * len(claims) + 1.8), sharey=True, squeeze=False
    )
    y = {c: len(claims) - 1 - i for i, c in enumerate(claims)}
    for k, (ax, (name, table)) in enumerate(zip(axes[0], tables.items())):
        for _, r in table.iterrows():
            if r.claim in once and k > 0 or np.isnan(r.map_at_r_diff):
                continue
            colour = COLOURS.get(r.verdict, "black")
            ax.hlines(y[r.claim], r.map_at_r_t_low, r.map_at_r_t_high, color=colour, lw=1.2)
            if "map_at_r_boot_low" in table and not np.isnan(r.map_at_r_boot_low):
                ax.hlines(y[r.claim], r.map_at_r_boot_low, r.map_at_r_boot_high, color=colour, lw=4.5, alpha=0.55)
            marker = "o" if r.verdict_holm == r.verdict else "D"
            fragile = r.get("fragile", False)  # older companion tables have no such column
            fill = "white" if isinstance(fragile, (bool, np.bool_)) and fragile else colour
            ax.plot(r.map_at_r_diff, y[r.claim], marker, color=colour, mfc=fill, ms=6, mec="black", mew=0.6)
        ax.axvline(0, color="black", lw=0.8)
        ax.set_title(name)
        ax.set_xlabel("MAP@R difference, claimed-better minus base (points)")
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks([y[c] for c in claims])
    axes[0][0].set_yticklabels(claims, fontsize=8)
    handles = [plt.Line2D([], [], color=c, lw=4, label=v) for v, c in COLOURS.items()]
    handles += [
        plt.Line2D([], [], color="grey", lw=1.2, label="t interval over fold means"),
        plt.Line2D([], [], color="grey", lw=4.5, alpha=0.55, label="fold-cluster bootstrap"),
        plt.Line2D([], [], marker="D", ls="", color="grey", mec="black", label="verdict changed by Holm"),
        plt.Line2D([], [], marker="o", ls="", color="grey", mfc="white", mec="black", label="fragile verdict"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8)  # two rows: one panel is narrower than 7
    fig.suptitle("Claims of the papers: mean paired difference with its 95% intervals (reports/*claims.md)")
    save(fig, path, rect=(0, 0.08, 1, 0.97))
