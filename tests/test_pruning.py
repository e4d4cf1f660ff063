"""Stopping hopeless tuning trials early (pipeline/training/pruning.py, pipeline/studies/tuning.py): the rule on
hand-made curves, the floors a study's completed trials set, pruned trials in a study, and a fit that a floor
never reaches trains exactly as without one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from pipeline.config.tune import PrunerConfig
from pipeline.infra.parallel import Workers
from pipeline.params.root import params_from_dict
from pipeline.runs import run_setup
from pipeline.studies.tuning import (
    TrialResult,
    completed_trials,
    holds_under,
    pruning_floors,
    run_study,
    study_name,
    study_record,
    validation_objective,
)
from pipeline.training.experiment import train_fold
from pipeline.training.pruning import Floor
from tests.conftest import merge

SPACE = {"baselines.ms.loss.base": {"low": 0.0, "high": 1.0}}
RULE = {"rule": "percentile", "percentile": 50.0, "warmup": 4, "interval": 2, "window": 2, "min_trials": 3}


def floor(values, warmup=4, interval=2, window=2) -> Floor:
    return Floor(tuple(values), warmup, interval, window)


def test_a_model_is_cut_only_at_checkpoints_below_the_floor_and_not_while_it_rises():
    flat = floor([0.5] * 10)
    # epochs 0..4: best 0.4 < 0.5, the last two epochs flat: cut at the first checkpoint (epoch 4)
    assert flat.cuts([0.1, 0.4, 0.3, 0.3, 0.3])
    assert not flat.cuts([0.1, 0.4, 0.3, 0.3])  # epoch 3: before the warm-up
    assert not flat.cuts([0.1, 0.4, 0.3, 0.3, 0.3, 0.3])  # epoch 5: between checkpoints (4, 6, 8, ...)
    assert flat.cuts([0.1, 0.4, 0.3, 0.3, 0.3, 0.3, 0.3])  # epoch 6
    # improving: its last value rose over the window (0.31 > epoch 2's 0.30, a climb back), or its best so far rose
    # within it (0.3 at epoch 3 > 0.25 before the window): not cut, though below the floor
    assert not flat.cuts([0.1, 0.4, 0.30, 0.2, 0.31])
    assert not flat.cuts([0.1, 0.2, 0.25, 0.3, 0.28])
    assert flat.cuts([0.1, 0.3, 0.29, 0.3, 0.28])  # best (0.3) reached before the window, last value down: cut
    # judged by its best so far, not its last value: a peak above the floor keeps a dipping curve
    assert not flat.cuts([0.1, 0.6, 0.3, 0.3, 0.2])
    # the floor's last value holds beyond its end; a best equal to the floor is not below it
    assert floor([0.9, 0.9, 0.2]).cuts([0.1, 0.15, 0.1, 0.1, 0.1])
    assert not floor([0.9, 0.9, 0.1]).cuts([0.1, 0.1, 0.1, 0.1, 0.1])


def test_the_first_fold_model_cut_stops_its_siblings(tmp_path):
    flag = tmp_path / "pruned"
    trailing = dataclasses.replace(floor([0.5] * 10), flag=str(flag))
    leading = dataclasses.replace(floor([0.0] * 10), flag=str(flag))
    rising = [0.1, 0.2, 0.3]
    assert not leading.cuts(rising) and not flag.exists()  # on its own it goes on
    assert trailing.cuts([0.1, 0.4, 0.3, 0.3, 0.3]) and flag.exists()
    assert leading.cuts(rising) and not leading.below(rising)  # stopped by its sibling, not by the rule


def test_a_pruned_trial_holds_under_its_cap_and_higher_ones_only():
    row = {"trial": 0, "val_map_at_r": None, "values": {}, "pruned": True, "max_epochs": 100, "capped": False}
    assert holds_under(row, 100) and holds_under(row, 400) and not holds_under(row, 50)


# Validation MAP@R of both fold-3 C2-Loss-Proxy models of the emoji run of the earlier protocol (reports/emoji/train_logs at
# commit 4c44ede, seeds 0 and 1, epochs 0-21): peak at epoch 1, dip, climb until the old 20-epoch patience stopped them
DIP_AND_CLIMB = (
    [
        0.221015,
        0.244943,
        0.2422,
        0.235027,
        0.225687,
        0.225197,
        0.227173,
        0.229955,
        0.22974,
        0.227279,
        0.228884,
        0.230574,
        0.230531,
        0.231706,
        0.234604,
        0.236289,
        0.234743,
        0.235277,
        0.236194,
        0.237089,
        0.238758,
        0.240515,
    ],
    [
        0.22888,
        0.249622,
        0.243566,
        0.241954,
        0.233031,
        0.227718,
        0.230728,
        0.228896,
        0.229515,
        0.233273,
        0.233431,
        0.232513,
        0.234288,
        0.234826,
        0.235547,
        0.237736,
        0.238633,
        0.241028,
        0.239955,
        0.241086,
        0.242862,
        0.24531,
    ],
)


def test_the_dip_and_climb_of_c2_loss_proxy_on_emoji_is_never_cut():
    """Both fold-3 C2-Loss-Proxy models of the earlier protocol's emoji run peak at epoch 1, dip and climb for 20
    epochs: under the default rule no floor, however high, cuts them, since they rise over the window at every
    checkpoint they reach."""
    rule = PrunerConfig()
    for curve in DIP_AND_CLIMB:
        high = Floor((1.0,), rule.warmup, rule.interval, rule.window)
        assert int(np.argmax(curve)) == 1 and len(curve) > rule.warmup
        assert not any(high.cuts(curve[: e + 1]) for e in range(len(curve)))


class Trial:
    """A completed Optuna trial as pruning_floors reads it."""

    def __init__(self, *curves):
        self.user_attrs = {"curves": [list(c) for c in curves]}


def test_the_floor_is_the_percentile_of_the_completed_trials_best_so_far_per_fold_and_epoch():
    rule = PrunerConfig(**RULE)
    trials = [
        Trial([0.1, 0.3, 0.2], [0.5, 0.4]),  # fold 0's best so far: 0.1 0.3 0.3; fold 1's: 0.5 0.5 (then held)
        Trial([0.2, 0.2, 0.6, 0.1], [0.1, 0.2, 0.3]),
        Trial([0.0, 0.1], [0.2, 0.6, 0.1]),
    ]
    floors = pruning_floors(trials, rule, folds=[0, 3])
    # fold 0: per epoch the median of (0.1, 0.2, 0.0), (0.3, 0.2, 0.1), (0.3, 0.6, 0.1), (0.3, 0.6, 0.1)
    assert floors[0].values == pytest.approx((0.1, 0.2, 0.3, 0.3))
    # fold 3 (the second curve of each trial): (0.5, 0.1, 0.2), (0.5, 0.2, 0.6), (0.5, 0.3, 0.6)
    assert floors[3].values == pytest.approx((0.2, 0.5, 0.5))
    assert (floors[0].warmup, floors[0].interval, floors[0].window) == (4, 2, 2)
    assert pruning_floors(trials[:2], rule, folds=[0, 3]) is None  # fewer than min_trials
    off = dataclasses.replace(rule, rule="none")
    assert pruning_floors(trials, off, folds=[0, 3]) is None


@pytest.fixture
def pruned_params(tiny_dict):
    tune = {"startup_trials": 3, "spaces": {"ms": SPACE}, "pruner": RULE}
    return params_from_dict(merge(tiny_dict, {"tune": tune, "experiment": {"folds": [0, 1]}}))


def simulated(values: dict, floors) -> TrialResult:
    """A trial whose fold models climb to a height set by `base` over 12 epochs, stopped by the floors as the
    training loop would stop them."""
    curves, pruned = [], []
    for fold in (0, 1):
        height = 1 - abs(values["baselines.ms.loss.base"] - 0.7) + 0.01 * fold
        curve = []
        for epoch in range(13):
            curve.append(height * min(epoch, 6) / 6)
            if floors is not None and floors[fold].cuts(curve):
                pruned.append(epoch)
                break
        curves.append(tuple(curve))
    return TrialResult(
        float(np.mean([max(c) for c in curves])), max(len(c) - 1 for c in curves), False, bool(pruned), tuple(curves)
    )


def test_pruned_trials_count_among_the_trials_are_recorded_and_never_chosen(pruned_params, tmp_path):
    study = run_study(pruned_params, "ms", simulated, tmp_path / "a.journal", trials=12)
    history = completed_trials(study)
    assert len(history) == 12 and [t["trial"] for t in history] == list(range(12))
    pruned = [t for t in history if t["val_map_at_r"] is None]
    assert pruned and all(t["trial"] >= 3 for t in pruned)  # nothing before min_trials completed
    assert all(t["pruned"] and t["max_epochs"] == pruned_params.train.max_epochs for t in pruned)
    assert all("pruned" not in t for t in history if t["val_map_at_r"] is not None)
    record = study_record({"inherited": {}}, study.study_name, history)
    assert record["pruned"] == len(pruned) and record["best_trial"] not in {t["trial"] for t in pruned}
    assert record["best_val_map_at_r"] == max(t["val_map_at_r"] for t in history if t["val_map_at_r"] is not None)
    # the same params give the same study, and an interrupted one resumes to it
    assert completed_trials(run_study(pruned_params, "ms", simulated, tmp_path / "b.journal", trials=12)) == history
    run_study(pruned_params, "ms", simulated, tmp_path / "c.journal", trials=7)
    assert completed_trials(run_study(pruned_params, "ms", simulated, tmp_path / "c.journal", trials=12)) == history


def test_the_rule_is_in_the_study_name_only_when_it_is_on(pruned_params, tiny_dict):
    tune = {"startup_trials": 3, "spaces": {"ms": SPACE}}
    plain = params_from_dict(merge(tiny_dict, {"tune": tune, "experiment": {"folds": [0, 1]}}))
    off = params_from_dict(
        merge(tiny_dict, {"tune": {**tune, "pruner": {**RULE, "rule": "none"}}, "experiment": {"folds": [0, 1]}})
    )
    assert study_name(off, "ms") == study_name(plain, "ms")  # every study recorded before pruning keeps its name
    assert study_name(pruned_params, "ms") != study_name(plain, "ms")
    other = params_from_dict(
        merge(tiny_dict, {"tune": {**tune, "pruner": {**RULE, "percentile": 25.0}}, "experiment": {"folds": [0, 1]}})
    )
    assert study_name(other, "ms") != study_name(pruned_params, "ms")


def test_a_floor_the_model_stays_above_changes_nothing_and_one_it_trails_prunes_it(tiny_params, tiny_data):
    manifest, features = tiny_data
    cpu = torch.device("cpu")
    setup = run_setup(tiny_params, "ms")
    free = train_fold(setup, 0, manifest, features, cpu, test=False)
    assert free.fit.stop_reason != "pruned" and len(free.fit.history) > 3
    low = train_fold(setup, 0, manifest, features, cpu, test=False, prune=Floor((-1.0,), 1, 1, 1))
    assert pd.DataFrame(low.fit.history).equals(pd.DataFrame(free.fit.history))
    for key, value in free.model.state_dict().items():
        assert torch.equal(value, low.model.state_dict()[key]), key
    high = train_fold(setup, 0, manifest, features, cpu, test=False, prune=Floor((2.0,), 2, 1, 1))
    assert high.fit.stop_reason == "pruned"
    # cut at epoch 2, or at 3 if it rose at 2: the same model and curve as the free one up to there
    assert len(high.fit.history) - 1 in (2, 3)
    assert pd.DataFrame(high.fit.history).equals(pd.DataFrame(free.fit.history[: len(high.fit.history)]))


def test_a_study_through_the_training_loop_prunes_trials_and_keeps_their_siblings_short(tiny_dict, tiny_data, tmp_path):
    """The tuning objective on the tiny data, a floor at the first trial's best: a later trial is pruned unless
    it keeps up, and once a fold model is cut its sibling stops after its next epoch."""
    manifest, features = tiny_data
    (tmp_path / "features").mkdir()
    features.save(tmp_path / "features" / "features.npz")
    rule = {"rule": "percentile", "percentile": 99.0, "warmup": 1, "interval": 1, "window": 1, "min_trials": 1}
    settings = merge(
        tiny_dict, {"tune": {"startup_trials": 2, "pruner": rule}, "train": {"max_epochs": 6, "patience": 6}}
    )
    settings["tune"]["spaces"] = {"ms": SPACE}  # this space alone, not merged into the project's
    params = params_from_dict(settings)
    epochs = []
    with Workers(1, 1) as workers:
        objective = validation_objective(params, "ms", str(manifest.root), str(tmp_path / "features"), workers)

        def counted(values, floors):
            result = objective(values, floors)
            epochs.append([len(c) - 1 for c in result.curves])
            return result

        history = completed_trials(run_study(params, "ms", counted, tmp_path / "s.journal", trials=3))
    assert history[0]["val_map_at_r"] is not None and epochs[0] == [6, 6]  # nothing to compare with: it completes
    assert any(t.get("pruned") for t in history[1:]), (history, epochs)
    for trial, trained in zip(history[1:], epochs[1:]):
        # pruned unless it beat the first trial at every epoch: then it completed all 6 epochs
        assert trial.get("pruned") or trained == [6, 6], (trial, trained)
        if trial.get("pruned"):  # the folds run one after the other here: once fold 0 is cut, fold 1 stops at once
            assert min(trained) < 6 and (trained[0] == 6 or trained[1] == 1), trained
