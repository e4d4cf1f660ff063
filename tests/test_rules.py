"""The verdict rules (pipeline/reporting/rules.py) and the noise they are measured against
(pipeline/reporting/selection.py), each on a small hand-made record: when a rule fires and when it does not."""

import math

import pandas as pd
import pytest

from pipeline.params.root import params_from_dict
from pipeline.reporting.rules import (
    cap_decides,
    claim_tuning,
    failed,
    late_gain,
    study_flaw,
    unconverged,
    unconverged_chain,
)
from pipeline.reporting.selection import Noise, kept_scores, noise, read_reruns, reruns, tolerance
from pipeline.reporting.tuning import convergence_markdown
from tests.conftest import project_params

NOISE = 0.5  # points: the noise of one trial's score these tests measure a study against


def study(run: str, trials: int, values: dict, best_trial: int = 0, inherits: str | None = None) -> dict:
    """A tuning record (reports/tuning/<run>.json) whose keys were searched on [0, 10] (inherited: not searched);
    trial t scored 0.1 + t / 1000, except the best one at 0.5."""
    inherited = values if inherits else {}
    space = {} if inherits else {k: {"low": 0.0, "high": 10.0, "log": False, "integer": False} for k in values}
    history = [{"trial": t, "val_map_at_r": 0.5 if t == best_trial else 0.1 + t / 1000} for t in range(trials)]
    return {
        "run": run,
        "trials": trials,
        "values": values,
        "space": space,
        "inherited": inherited,
        "inherits": inherits,
        "history": history,
        "best_trial": best_trial if trials else None,
        "best_val_map_at_r": 0.5 if trials else None,
    }


def test_a_claim_is_untuned_unless_both_arms_ran_studies_of_their_own_with_the_same_trials():
    a, b = study("a", 20, {"x": 5.0}, best_trial=3), study("b", 20, {"x": 5.0, "y": 4.0}, best_trial=10)
    assert claim_tuning({"a": a, "b": b}, "a", "b", NOISE) == ("", "")
    assert claim_tuning({"a": a, "b": study("b", 0, {})}, "a", "b", NOISE) == (
        "untuned",
        "b: no study (trained at params.yaml's values)",
    )
    assert claim_tuning({"a": a, "b": study("b", 0, {"x": 5.0}, inherits="a")}, "a", "b", NOISE) == (
        "untuned",
        "b: x from a's study, no study of its own",
    )
    assert claim_tuning({"a": a, "b": study("b", 10, {"x": 5.0, "y": 4.0}, best_trial=3)}, "a", "b", NOISE) == (
        "untuned",
        "a: 20 trials, b: 10",
    )
    assert claim_tuning({"b": b}, "a", "b", NOISE) == ("untuned", "a: no tuning record")


def test_a_claim_is_untuned_unless_its_arms_search_the_keys_they_share_over_the_same_ranges():
    """The better arm searches every family key the base arm searches, over the same range (MS-CCP's beta on
    [0.01, 1000] beside Loss-Proxy's [0.01, 100] is not equal effort); its variant keys are its own to add, and
    keys under an arm's own `baselines.<run>.` are not shared."""
    a = study("a", 20, {"ccp.ms.beta": 5.0}, best_trial=3)
    b = study("b", 20, {"ccp.ms.beta": 5.0, "ccp.lambda": 4.0}, best_trial=3)
    assert claim_tuning({"a": a, "b": b}, "a", "b", NOISE) == ("", "")
    b["space"]["ccp.ms.beta"] = {"low": 0.0, "high": 20.0, "log": False, "integer": False}
    assert claim_tuning({"a": a, "b": b}, "a", "b", NOISE) == (
        "untuned",
        "ccp.ms.beta searched on [0, 10] by a, [0, 20] by b",
    )
    skipped = study("b", 20, {"ccp.lambda": 4.0}, best_trial=3)
    assert claim_tuning({"a": a, "b": skipped}, "a", "b", NOISE) == (
        "untuned",
        "b: ccp.ms.beta not searched (a searched it)",
    )
    own_a = study("a", 20, {"baselines.a.loss.margin": 5.0}, best_trial=3)
    own_b = study("b", 20, {"baselines.b.loss.margin": 5.0}, best_trial=3)
    assert claim_tuning({"a": own_a, "b": own_b}, "a", "b", NOISE) == ("", "")


def test_a_search_at_a_range_end_or_not_converged_leaves_the_tuning_unfinished():
    a = study("a", 20, {"x": 5.0}, best_trial=3)
    at_end = study("b", 20, {"x": 5.0, "y": 9.6}, best_trial=3)  # within 5% of 10
    late = study("b", 20, {"x": 5.0, "y": 4.0}, best_trial=16)  # trials 16-19 gained 38.5 points
    assert claim_tuning({"a": a, "b": at_end}, "a", "b", NOISE) == ("tuning unfinished", "b: y at its high end")
    assert claim_tuning({"a": a, "b": late}, "a", "b", NOISE) == (
        "tuning unfinished",
        "b: its last 4 trials gained +38.50 points, more than the noise bound 0.50",
    )
    assert claim_tuning({"a": a, "b": study("b", 20, {"x": 5.0, "y": 4.0}, best_trial=15)}, "a", "b", NOISE) == ("", "")


def test_a_best_value_at_the_keys_own_limit_is_no_clipped_search():
    """A range end that is the bound the schema puts on the key (pipeline/studies/values.py `limits`) has nothing beyond it:
    the other end, or an end that is no limit, still counts."""
    a = study("a", 20, {"x": 5.0}, best_trial=3)
    floor = study("b", 20, {"x": 5.0, "y": 0.2}, best_trial=3)  # within 5% of the low end 0
    floor["limits"] = {"y": [0.0, None]}  # y >= 0, as a margin
    assert claim_tuning({"a": a, "b": floor}, "a", "b", NOISE) == ("", "")
    floor["limits"] = {"y": [None, 10.0]}  # a limit at the other end only
    assert claim_tuning({"a": a, "b": floor}, "a", "b", NOISE) == ("tuning unfinished", "b: y at its low end")
    floor["limits"] = {"y": [-1.0, None]}  # a limit below the range: the range stopped short of it
    assert claim_tuning({"a": a, "b": floor}, "a", "b", NOISE) == ("tuning unfinished", "b: y at its low end")


def test_a_study_with_a_trial_cut_by_the_epoch_cap_is_unfinished(monkeypatch):
    from pipeline.reporting import tuning
    from pipeline.reporting.tuning import tuning_markdown

    a = study("a", 20, {"ccp.lambda": 5.0}, best_trial=3)
    b = study("b", 20, {"ccp.lambda": 5.0, "profs.rho": 4.0}, best_trial=3)
    b["history"][5]["capped"] = b["history"][14]["capped"] = True
    assert claim_tuning({"a": a, "b": b}, "a", "b", NOISE) == (
        "tuning unfinished",
        "b: trials 5, 14 cut by the epoch cap",
    )
    text = tuning_markdown(params_from_dict(project_params()), [a, b], 2, None)
    assert "stopped at the epoch cap" in text and "`b` (trials 5, 14)" in text
    assert "a new study, `<study>-epochs<cap>` at the raised cap, runs every trial again" in text  # run_study's name
    counted = []
    monkeypatch.setattr(
        tuning, "capped_trials", lambda r, real=tuning.capped_trials: counted.append(r["run"]) or real(r)
    )
    assert tuning_markdown(params_from_dict(project_params()), [a, b], 2, None) == text and counted == [
        "a",
        "b",
    ]  # once per record


def curve(scores: list[float], run: str = "s", inherits: str | None = None) -> dict:
    """A study whose trial t scored scores[t] (validation MAP@R, a fraction), searched on one key."""
    best = max(range(len(scores)), key=scores.__getitem__)
    return {
        "run": run,
        "trials": len(scores),
        "values": {"x": 5.0},
        "space": {"x": {"low": 0.0, "high": 10.0, "log": False, "integer": False}},
        "inherited": {},
        "inherits": inherits,
        "history": [{"trial": t, "val_map_at_r": v} for t, v in enumerate(scores)],
        "best_trial": best,
        "best_val_map_at_r": scores[best],
    }


def test_a_converged_study_may_find_its_best_at_its_last_trial():
    """20 trials: the window is the last 4; the best is the last trial, 0.30 points over trials 0-15's best. Within
    a noise of 0.50 that is a tie (converged); against 0.20 it is a gain more trials may repeat."""
    record = curve([0.80] * 5 + [0.81] * 14 + [0.813])
    assert late_gain(record) == {"best_trial": 19, "trials": 20, "window": 4, "gain": pytest.approx(0.3)}
    assert unconverged(record, NOISE) == "" and study_flaw(record, NOISE) == ("", [])
    assert unconverged(record, 0.2) == "its last 4 trials gained +0.30 points, more than the noise bound 0.20"
    assert study_flaw(record, 0.2)[0] == "tuning unfinished"
    assert unconverged(record, 0.3 + 1e-9) == ""  # at most the noise: converged


def test_report_convergence_sigmas_scales_the_bound_a_late_gain_is_held_to():
    """The same late gain of 0.30 points against sigma 0.20: not converged at 1 sigma, converged at 2 (0.40)."""
    record, measured = curve([0.80] * 5 + [0.81] * 14 + [0.813]), Noise(sigma=0.2, runs=5, below=4, mean_diff=-0.1)
    assert tolerance(measured, 1.0) == pytest.approx(0.2) and tolerance(measured, 2.0) == pytest.approx(0.4)
    assert tolerance(None, 2.0) is None
    assert unconverged(record, tolerance(measured, 1.0)) and not unconverged(record, tolerance(measured, 2.0))
    assert "| `s` | 19 (20) | +0.30 (last 4) | **no**" in convergence_markdown([record], measured, 2, 1.0)
    shown = convergence_markdown([record], measured, 2, 2.0)
    assert "| `s` | 19 (20) | +0.30 (last 4) | yes: within the noise |" in shown and "at most 2 x the noise" in shown


def test_a_study_whose_best_came_before_its_last_trials_converged_whatever_the_noise():
    record = curve([0.70, 0.90] + [0.80] * 18)  # the best at trial 1 of 20
    assert late_gain(record) is None and unconverged(record, 0.0) == "" and unconverged(record, None) == ""


def test_without_a_measured_noise_any_late_gain_leaves_a_study_unconverged():
    record = curve([0.80] * 19 + [0.8001])
    assert (
        unconverged(record, None) == "its last 4 trials gained +0.01 points, more than 0 (no rerun measured the noise)"
    )


def test_the_window_is_at_least_the_last_trial_and_a_study_needs_an_earlier_one():
    assert late_gain(curve([0.5, 0.6])) == {"best_trial": 1, "trials": 2, "window": 1, "gain": pytest.approx(10.0)}
    assert late_gain(curve([0.5])) is None  # one trial: no history to judge
    pruned = curve([0.5, 0.6])
    pruned["history"][0]["val_map_at_r"] = None  # a pruned trial holds no score: nothing before the window
    assert late_gain(pruned) is None


def test_a_run_inheriting_from_an_unconverged_study_is_flagged_with_its_source():
    source = curve([0.80] * 19 + [0.85], run="a")
    heir = {**curve([0.80], run="b", inherits="a"), "trials": 0, "history": []}
    settled = curve([0.9, 0.8], run="c")
    assert unconverged_chain([source, heir, settled], NOISE) == {"a": ["a"], "b": ["a"]}
    assert unconverged_chain([source, heir, settled], 10.0) == {}


def test_the_failed_rule():
    """A model failed when it kept epoch 0 or 1, or never rose above the untrained network (epoch 0)."""

    def fails(curve, best):
        return failed(pd.Series(curve), best)

    assert fails([0.3, 0.2, 0.25], 0) and fails([0.3, 0.4, 0.35, 0.38], 1)  # kept epoch 0; kept epoch 1
    assert fails([0.3, 0.3, 0.3], 0) and fails([0.3], 0)  # never above the start; never trained
    assert fails([0.3, 0.2, 0.3], 2)  # equal to the start is not above it
    assert not fails([0.3, 0.31, 0.35], 2)


def test_the_cap_decides_a_claim_from_its_second_capped_model_of_an_arm():
    assert [cap_decides(n) for n in (0, 1, 2, 8)] == [False, False, True, True]


def _models_and_logs() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run r: two folds x seeds 0 and 1, each kept at epoch 1 or 2; the kept scores (points) are seed 0: 80, 84
    (mean 82), seed 1: 79, 82 (mean 80.5). Run q: seed 0 only."""
    kept = {("r", "fold-0-seed-0"): 0.80, ("r", "fold-1-seed-0"): 0.84, ("r", "fold-0-seed-1"): 0.79}
    kept |= {("r", "fold-1-seed-1"): 0.82, ("q", "fold-0-seed-0"): 0.5}
    models, logs = [], []
    for i, ((run, model), score) in enumerate(kept.items()):
        best = 1 + i % 2
        models.append({"run": run, "model": model, "best_epoch": best})
        for epoch in range(4):  # every other epoch scores lower than the kept one
            logs.append({"run": run, "model": model, "epoch": epoch, "val_map_at_r": score - (epoch != best) / 10})
    return pd.DataFrame(models), pd.DataFrame(logs)


def test_the_kept_epochs_scores_and_the_reruns_beside_the_chosen_score():
    models, logs = _models_and_logs()
    scores = kept_scores(models, logs)
    assert scores.set_index("model").loc["fold-1-seed-1"].tolist() == ["r", 1, pytest.approx(0.82)]
    table = reruns(scores)
    assert table.run.tolist() == ["r"]  # q has no rerun seed
    assert table.iloc[0][["chosen", "rerun", "diff"]].tolist() == pytest.approx([82.0, 80.5, -1.5])
    assert reruns(scores[scores.seed == 0]).empty


def test_the_noise_is_the_spread_of_rerun_minus_chosen_over_root_two():
    table = pd.DataFrame({"run": ["a", "b", "c"], "chosen": [80.0, 70.0, 60.0], "rerun": [79.0, 70.0, 58.0]})
    measured = noise(table.assign(diff=table.rerun - table.chosen))  # diffs -1, 0, -2: mean -1, sd 1
    assert measured.sigma == pytest.approx(1 / math.sqrt(2)) and (measured.runs, measured.below) == (3, 2)
    assert measured.mean_diff == pytest.approx(-1.0)
    assert noise(table.iloc[:1].assign(diff=[-1.0])) is None  # one run measures no spread


def test_a_committed_reports_reruns_are_read_from_its_budgets_and_training_logs(tmp_path):
    models, logs = _models_and_logs()
    models.to_csv(tmp_path / "budgets.csv", index=False)
    for (run, model), t in logs.groupby(["run", "model"]):
        (tmp_path / "train_logs" / run).mkdir(parents=True, exist_ok=True)
        t.drop(columns=["run", "model"]).to_csv(tmp_path / "train_logs" / run / f"{model}.csv", index=False)
    assert read_reruns(tmp_path).equals(reruns(kept_scores(models, logs)))
