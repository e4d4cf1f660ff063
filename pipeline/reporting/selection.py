"""What MLRC's selection does to a validation score, and the noise of one trial's score.

A study keeps its best trial, and the final run's first replicate seed reproduces it (the same folds, seed and
values: pipeline/studies/tuning.py trains every trial at ``experiment.seeds[0]``). The other seeds rerun the chosen
configuration. Their fold-mean validation MAP@R beside the chosen one shows the winner's curse: the best of many
noisy trials is biased up, so a tuned validation score is not an unbiased one (the test classes are never selected
on). The reruns also measure the noise: with d = rerun - chosen per run, sigma = sd(d) / sqrt(2) is the standard
deviation of one trial's score (two independent scores differ by sqrt(2) sigma). The selection shifts d's mean (the
winner's curse) and may change its spread either way, so sigma is an estimate, not a bound: reports/tuning.md prints
it with every run it comes from, and the convergence rule it feeds (pipeline/reporting/rules.py) says which studies
it decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

SEED = r"seed-(\d+)$"  # a model's seed in its name (pipeline/runs.py model_name: fold-<k>-seed-<s>)


@dataclass(frozen=True)
class Noise:
    """The noise of one trial's fold-mean validation MAP@R, in points, and what measured it."""

    sigma: float  # sd(rerun - chosen) / sqrt(2) over `runs`
    runs: int  # runs with a rerun seed
    below: int  # of them, runs whose rerun scored below the chosen score
    mean_diff: float  # mean rerun - chosen (points): the winner's curse, where the runs were selected


def kept_scores(models: pd.DataFrame, logs: pd.DataFrame) -> pd.DataFrame:
    """Per (run, model): the validation MAP@R of the epoch early stopping kept (`models`: pipeline/reporting/budgets.py
    per_model, its `best_epoch`; `logs`: every epoch row, read_logs), with the model's seed."""
    kept = models[["run", "model", "best_epoch"]].merge(
        logs[["run", "model", "epoch", "val_map_at_r"]],
        left_on=["run", "model", "best_epoch"],
        right_on=["run", "model", "epoch"],
        validate="one_to_one",
    )
    return kept.assign(seed=kept.model.str.extract(SEED)[0].astype(int))[["run", "model", "seed", "val_map_at_r"]]


def reruns(scores: pd.DataFrame) -> pd.DataFrame:
    """Per run with more than one seed: `chosen`, the fold-mean validation MAP@R (points) of its first seed (its
    study's chosen trial, reproduced), `rerun`, the mean of its other seeds' fold means, and `diff` = rerun - chosen."""
    means = 100 * scores.groupby(["run", "seed"], sort=False).val_map_at_r.mean().unstack("seed")
    means = means.reindex(columns=sorted(means.columns))
    if means.shape[1] < 2:
        return pd.DataFrame(columns=["run", "chosen", "rerun", "diff"])
    out = pd.DataFrame({"chosen": means.iloc[:, 0], "rerun": means.iloc[:, 1:].mean(axis=1)}).dropna()
    return out.assign(diff=out.rerun - out.chosen).rename_axis("run").reset_index()


def noise(table: pd.DataFrame) -> Noise | None:
    """The noise the reruns measure (module docstring); None with fewer than two runs to measure it on."""
    if len(table) < 2:
        return None
    d = table["diff"]
    return Noise(float(d.std(ddof=1) / math.sqrt(2)), len(d), int((d < 0).sum()), float(d.mean()))


def tolerance(measured: Noise | None, sigmas: float) -> float | None:
    """The gain a converged study's last trials may still show (rules.unconverged): `sigmas` (report.convergence_sigmas)
    times the measured sigma, in points; None when no rerun measured the noise."""
    return None if measured is None else sigmas * measured.sigma


def read_reruns(folder: Path) -> pd.DataFrame:
    """`reruns` of a committed report folder (a companion's): its budgets.csv and train_logs/<run>/<model>.csv."""
    models = pd.read_csv(folder / "budgets.csv")
    logs = pd.concat(
        [
            pd.read_csv(folder / "train_logs" / run / f"{model}.csv").assign(run=run, model=model)
            for run, model in zip(models.run, models.model)
        ],
        ignore_index=True,
    )
    return reruns(kept_scores(models, logs))
