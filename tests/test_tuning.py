"""MLRC's tuning step (pipeline/studies/tuning.py): values applied, seeded and resumable studies, no test class read."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from pipeline.config import ParamsError, apply_values
from pipeline.config.tune import SearchDim
from pipeline.models.features import FeatureCache
from pipeline.params.root import params_from_dict
from pipeline.reporting.selection import Noise
from pipeline.runs import run_setup
from pipeline.studies.tuning import TrialResult, completed_trials, run_study, study_name
from pipeline.training.experiment import train_fold
from tests.conftest import ROOT, merge, project_params
from tests.test_stages import run_stage

SPACE = {
    "baselines.ms.loss.alpha": {"low": 0.01, "high": 100.0, "log": True},
    "baselines.ms.loss.base": {"low": 0.0, "high": 1.0},
    "ccp.pool_size": {"low": 3, "high": 9, "integer": True},
}


@pytest.fixture
def tune_params(tiny_dict):
    return params_from_dict(merge(tiny_dict, {"tune": {"startup_trials": 4, "spaces": {"ms": SPACE}}}))


def bowl(values: dict, floors=None, epochs_run: int = 10, capped: bool = False) -> TrialResult:
    """A cheap objective with its maximum inside the space: the sampler must move towards it."""
    value = (
        -((np.log10(values["baselines.ms.loss.alpha"]) - 1) ** 2)
        - (values["baselines.ms.loss.base"] - 0.3) ** 2
        - 0.01 * (values["ccp.pool_size"] - 5) ** 2
    )
    return TrialResult(value, epochs_run, capped)


def test_apply_values_sets_the_keys_and_keeps_everything_else(tune_params):
    tuned = apply_values(tune_params, {"baselines.ms.loss.alpha": 7.5, "ccp.pool_size": 6})
    assert tuned.baselines["ms"].loss.alpha == 7.5 and tuned.ccp.pool_size == 6
    assert tuned.baselines["ms"].loss.beta == tune_params.baselines["ms"].loss.beta
    assert tuned.train == tune_params.train and tuned.ccp.c2 == tune_params.ccp.c2
    with pytest.raises(ParamsError, match=r"tuned values: baselines.ms.loss.alpah: not a params key"):
        apply_values(tune_params, {"baselines.ms.loss.alpah": 1.0})
    with pytest.raises(ParamsError, match=r"ccp.pool_size: must be >= ccp.proxies_per_class"):
        apply_values(tune_params, {"ccp.pool_size": 1})


@pytest.mark.parametrize(
    "dim,message",
    [
        (
            {"baselines.ms.loss.alpah": {"low": 0.1, "high": 1.0}},
            "tune.spaces.ms.baselines.ms.loss.alpah: not a numeric params key",
        ),
        (
            {"baselines.ms.loss.alpha": {"low": 2.0, "high": 1.0}},
            r"tune.spaces.ms.baselines.ms.loss.alpha: need low < high",
        ),
        ({"baselines.ms.loss.base": {"low": 0.0, "high": 1.0, "log": True}}, "a log range needs low > 0"),
        ({"train.mode": {"low": 0.0, "high": 1.0}}, "tune.spaces.ms.train.mode: not a numeric params key"),
        (
            {"ccp.c2.beta": {"above": "ccp.c2.alpha"}, "ccp.c2.alpha": {"low": 0.01}},
            r"tune.spaces.ms.ccp.c2.beta: above: ccp.c2.alpha is not a key listed before it in tune.spaces.ms",
        ),
        (
            {"ccp.c2.alpha": {"low": 0.01}, "ccp.c2.beta": {"low": -0.1, "above": "ccp.c2.alpha"}},
            r"tune.spaces.ms.ccp.c2.beta: a range above ccp.c2.alpha is its excess over it: need low >= 0",
        ),
    ],
)
def test_bad_search_spaces_name_the_key(tiny_dict, dim, message):
    with pytest.raises(ParamsError, match=message):
        params_from_dict(merge(tiny_dict, {"tune": {"spaces": {"ms": dim}}}))


@pytest.mark.parametrize(
    "inherit,spaces,message",
    [
        ({"c2_ccp": "c2_ccp"}, {}, r"tune.inherit.c2_ccp: inherits from itself \(c2_ccp -> c2_ccp\)"),
        ({"c2_ccp": "c2_batch", "c2_batch": "c2_ccp"}, {}, "inherits from itself"),
        (
            {"c2_ccp": "c2_batch"},
            {
                "c2_batch": {"ccp.lambda": {"low": 0.1, "high": 1.0}},
                "c2_ccp": {"ccp.lambda": {"low": 0.1, "high": 1.0}},
            },
            r"tune.inherit.c2_ccp: c2_ccp -> c2_batch search the same key twice \(ccp.lambda\)",
        ),
    ],
)
def test_inheritance_is_a_forest_of_disjoint_searches(tiny_dict, inherit, spaces, message):
    raw = merge(tiny_dict, {})
    raw["tune"].update(inherit=inherit, spaces=spaces)
    with pytest.raises(ParamsError, match=message):
        params_from_dict(raw)


def test_the_same_params_give_the_same_trials_and_a_resumed_study_the_same_as_an_uninterrupted_one(
    tune_params, tmp_path
):
    whole = completed_trials(run_study(tune_params, "ms", bowl, tmp_path / "a.journal", trials=14))
    assert len(whole) == 14
    assert completed_trials(run_study(tune_params, "ms", bowl, tmp_path / "b.journal", trials=14)) == whole
    # interrupted twice: after 3 trials, then with a trial left running (its process killed), then resumed
    resumed = tmp_path / "c.journal"
    run_study(tune_params, "ms", bowl, resumed, trials=3)
    study = run_study(tune_params, "ms", bowl, resumed, trials=6)
    study.ask()  # a trial that never reports back
    assert completed_trials(run_study(tune_params, "ms", bowl, resumed, trials=14)) == whole
    # the model-based trials found a better point than the random start
    values = [t["val_map_at_r"] for t in whole]
    assert max(values[4:]) > max(values[:4])
    assert all(3 <= t["values"]["ccp.pool_size"] <= 9 and isinstance(t["values"]["ccp.pool_size"], int) for t in whole)


C2_SPACE = {  # the emoji default's C2 search: alpha, and beta by its excess m+ = beta - alpha (CCP eq. 4.2)
    "ccp.c2.alpha": {"low": 0.01, "high": 1.0},
    "ccp.c2.beta": {"low": 0.0, "high": 1.0, "above": "ccp.c2.alpha"},
}


def only_space(tiny_dict, space: dict):
    """The tiny params with `space` the only one (the ms run's), 4 random trials first."""
    raw = merge(tiny_dict, {"tune": {"startup_trials": 4}})
    raw["tune"]["spaces"] = {"ms": space}
    return params_from_dict(raw)


def test_a_key_kept_above_another_is_searched_by_its_excess(tiny_dict, tmp_path):
    """SearchDim.above: the sampler draws beta - alpha, so every trial has beta >= alpha (a box of both keys would
    propose points the params check rejects); the record keeps the draws (a replay gives the same study) and the
    run trains at the params values."""
    from pipeline.studies.tuning import applied, kept_study, space_dict, study_record

    params = only_space(tiny_dict, C2_SPACE)
    seen = []

    def ridge(values: dict, floors=None) -> TrialResult:  # best at alpha 0.5, m+ 0.2: beyond the old box's alpha 0.3
        seen.append(values)
        apply_values(params, values)  # a valid point: beta >= alpha
        return TrialResult(-((values["ccp.c2.alpha"] - 0.5) ** 2) - (values["ccp.c2.beta"] - 0.7) ** 2, 10, False)

    study = run_study(params, "ms", ridge, tmp_path / "a.journal", trials=12)
    trials = completed_trials(study)
    assert all(set(t["values"]) == {"ccp.c2.alpha", "ccp.c2.beta - ccp.c2.alpha"} for t in trials)
    space = params.tune.spaces["ms"]
    assert [applied(t["values"], space) for t in trials] == seen  # the objective saw the params values
    assert all(v["ccp.c2.beta"] >= v["ccp.c2.alpha"] for v in seen) and max(v["ccp.c2.alpha"] for v in seen) > 0.3
    base = {"run": "ms", "inherited": {}, "space": space_dict(space)}
    record = study_record(base, study.study_name, trials)
    best = trials[record["best_trial"]]["values"]
    assert record["values"] == {
        "ccp.c2.alpha": best["ccp.c2.alpha"],
        "ccp.c2.beta": best["ccp.c2.alpha"] + best["ccp.c2.beta - ccp.c2.alpha"],
    }
    assert base["space"]["ccp.c2.beta"]["above"] == "ccp.c2.alpha" and "above" not in base["space"]["ccp.c2.alpha"]
    # a record replayed into an empty journal goes on as the uninterrupted study
    short = run_study(params, "ms", ridge, tmp_path / "b.journal", trials=6)
    kept = (short.study_name, completed_trials(short))
    elsewhere = run_study(params, "ms", ridge, tmp_path / "c.journal", trials=12, kept=kept)
    assert completed_trials(elsewhere) == trials
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / f"{study.study_name}.json").write_text(json.dumps(record))
    assert kept_study(tmp_path / "kept", params, "ms") == (study.study_name, trials)


def test_applied_adds_each_excess_to_the_key_it_is_kept_above():
    """By hand: beta = alpha + m+, a chain in space order, keys drawn as themselves kept, in their order."""
    from pipeline.studies.tuning import applied

    space = {"a": {"low": 0.0}, "b": {"low": 0.0, "above": "a"}, "c": {"low": 0.0, "above": "b"}, "d": {}}
    draws = {"a": 0.25, "b - a": 0.5, "c - b": 0.125, "d": 3.0}
    assert list(applied(draws, space).items()) == [("a", 0.25), ("b", 0.75), ("c", 0.875), ("d", 3.0)]
    assert applied({"d": 3.0}, {}) == {"d": 3.0}


def test_a_space_without_above_keeps_its_study_name(tiny_dict):
    """`above` came after studies were recorded: a space that does not set it hashes as before (the committed
    studies keep their names), one that sets it is another study."""
    from pipeline.studies.tuning import space_dict

    assert space_dict(only_space(tiny_dict, SPACE).tune.spaces["ms"]) == {
        key: {
            "low": dim["low"],
            "high": dim["high"],
            "log": dim.get("log", False),
            "integer": dim.get("integer", False),
        }
        for key, dim in SPACE.items()
    }
    boxed = {key: {k: v for k, v in dim.items() if k != "above"} for key, dim in C2_SPACE.items()}
    names = [study_name(only_space(tiny_dict, space), "ms") for space in (C2_SPACE, boxed)]
    assert names[0] != names[1]


def with_cap(params, cap: int):
    return dataclasses.replace(params, train=dataclasses.replace(params.train, max_epochs=cap))


def test_a_new_epoch_cap_reruns_only_the_studies_it_alters(tune_params, tmp_path):
    """Trials whose models all stopped below the cap hold under a higher one: the study goes on. A study with a trial
    the cap cut, or one that trained beyond a lowered cap, runs again under a name with the cap."""
    journal = tmp_path / "s.journal"
    first = run_study(with_cap(tune_params, 60), "ms", lambda v, f: bowl(v, epochs_run=40), journal, trials=5)
    before = completed_trials(first)
    higher = run_study(with_cap(tune_params, 200), "ms", lambda v, f: bowl(v, epochs_run=120), journal, trials=7)
    assert higher.study_name == first.study_name == study_name(tune_params, "ms")  # the cap is not in the name
    trials = completed_trials(higher)
    assert [t["max_epochs"] for t in trials] == [60] * 5 + [200] * 2 and trials[:5] == before
    lower = run_study(with_cap(tune_params, 100), "ms", lambda v, f: bowl(v, epochs_run=30), journal, trials=7)
    assert lower.study_name == f"{first.study_name}-epochs100"  # trials 5 and 6 trained 120 epochs
    assert completed_trials(lower)[:5] == before  # trials 0-4 stopped at 40 epochs under both caps: taken over
    assert [t["max_epochs"] for t in completed_trials(lower)] == [60] * 5 + [100] * 2
    cut = tmp_path / "cut.journal"
    run_study(with_cap(tune_params, 60), "ms", lambda v, f: bowl(v, epochs_run=60, capped=True), cut, trials=2)
    assert run_study(with_cap(tune_params, 400), "ms", bowl, cut, trials=2).study_name.endswith("-epochs400")
    assert run_study(with_cap(tune_params, 60), "ms", bowl, cut, trials=2).study_name == first.study_name


def test_a_raised_cap_reruns_a_study_from_the_trials_it_does_not_alter(tune_params, tmp_path):
    """A study with a trial the cap cut (trial 3 of 5) runs again at a raised cap as ``<name>-epochs<cap>``, beside
    its journal or from its committed record alone (which is kept, not overwritten), starting from its trials 0-2:
    the same trials a fresh run would repeat (the bowl is deterministic), then new ones."""
    from pipeline.studies.tuning import finished_study, kept_study, study_record

    def cut_at_3(values, floors=None):
        cut_at_3.n += 1
        return bowl(values, epochs_run=60 if cut_at_3.n == 4 else 40, capped=cut_at_3.n == 4)

    cut_at_3.n = 0
    cut = run_study(with_cap(tune_params, 60), "ms", cut_at_3, tmp_path / "a", trials=5)
    old = completed_trials(cut)
    folder = tmp_path / "kept"
    folder.mkdir()
    (folder / f"{cut.study_name}.json").write_text(json.dumps(study_record({"inherited": {}}, cut.study_name, old)))
    raised = with_cap(tune_params, 400)
    raised = dataclasses.replace(raised, tune=dataclasses.replace(raised.tune, trials=6))
    kept = kept_study(folder, raised, "ms")
    assert kept == (f"{cut.study_name}-epochs400", old[:3]) and finished_study(folder, raised, "ms") is None
    again = run_study(raised, "ms", bowl, tmp_path / "elsewhere.journal", trials=6, kept=kept)
    beside = run_study(raised, "ms", bowl, tmp_path / "a", trials=6)  # the journal that holds the cut trials
    fresh = completed_trials(run_study(raised, "ms", bowl, tmp_path / "fresh.journal", trials=6))
    assert again.study_name == beside.study_name == f"{cut.study_name}-epochs400"
    assert completed_trials(again) == completed_trials(beside) and completed_trials(again)[:3] == old[:3]
    assert [t["values"] for t in completed_trials(again)] == [t["values"] for t in fresh]  # as if run from trial 0
    assert json.loads((folder / f"{cut.study_name}.json").read_text())["history"] == old
    (folder / f"{again.study_name}.json").write_text(
        json.dumps(study_record({"inherited": {}}, again.study_name, completed_trials(again)))
    )
    assert finished_study(folder, raised, "ms") == (again.study_name, completed_trials(again))
    assert kept_study(folder, with_cap(tune_params, 60), "ms")[0] == cut.study_name  # the old cap: the old study


def test_a_finished_study_is_taken_from_its_record_only_when_it_is_what_the_study_would_give(tune_params, tmp_path):
    """finished_study follows run_study's rules: the same study name, at least tune.trials trials (all of them: a
    study extended past tune.trials counts its extra trials; its first trials are the shorter study, trial for
    trial), the epoch cap rule; an unreadable record names its file."""
    from pipeline.infra.errors import PipelineError
    from pipeline.infra.io import write_json
    from pipeline.studies.tuning import finished_study, study_record

    def asking(params, trials: int, cap: int = 60):
        return dataclasses.replace(with_cap(params, cap), tune=dataclasses.replace(params.tune, trials=trials))

    study = run_study(
        asking(tune_params, 5), "ms", lambda v, f: bowl(v, epochs_run=40), tmp_path / "a.journal", trials=5
    )
    base = {"run": "ms", "inherited": {}}
    write_json(
        tmp_path / "kept" / f"{study.study_name}.json", study_record(base, study.study_name, completed_trials(study))
    )
    assert finished_study(tmp_path / "kept", asking(tune_params, 5), "ms") == (
        study.study_name,
        completed_trials(study),
    )
    shorter = run_study(
        asking(tune_params, 3), "ms", lambda v, f: bowl(v, epochs_run=40), tmp_path / "b.journal", trials=3
    )
    assert finished_study(tmp_path / "kept", asking(tune_params, 3), "ms") == (
        study.study_name,
        completed_trials(study),
    )
    assert completed_trials(study)[:3] == completed_trials(shorter)
    assert finished_study(tmp_path / "kept", asking(tune_params, 7), "ms") is None  # two trials short
    assert finished_study(tmp_path / "kept", asking(tune_params, 5, cap=30), "ms") is None  # trained beyond the cap
    assert finished_study(tmp_path / "kept", asking(tune_params, 5, cap=200), "ms") is not None  # stopped below it
    other = dataclasses.replace(tune_params, seed=tune_params.seed + 1)
    assert finished_study(tmp_path / "kept", asking(other, 5), "ms") is None  # another study
    (tmp_path / "kept" / f"{study.study_name}.json").write_text("{")
    with pytest.raises(PipelineError, match=f"{study.study_name}.json: not a study's record"):
        finished_study(tmp_path / "kept", asking(tune_params, 5), "ms")


def test_a_study_goes_on_from_its_record_where_its_journal_is_not(tune_params, tmp_path):
    """run_study `kept`: a record (finished at fewer trials, or in progress) replayed into an empty journal gives the
    uninterrupted study's trials, the sampler's model-based ones after it included (startup_trials 4)."""
    from pipeline.studies.tuning import finished_study, kept_study, study_record

    whole = completed_trials(run_study(tune_params, "ms", bowl, tmp_path / "a.journal", trials=10))
    first = run_study(tune_params, "ms", bowl, tmp_path / "b.journal", trials=6)
    kept = (first.study_name, completed_trials(first))
    elsewhere = run_study(tune_params, "ms", bowl, tmp_path / "elsewhere.journal", trials=10, kept=kept)
    assert completed_trials(elsewhere) == whole
    # a journal that holds the study already goes on from itself (the record is not replayed twice)
    assert completed_trials(run_study(tune_params, "ms", bowl, tmp_path / "b.journal", trials=10, kept=kept)) == whole
    # kept_study finds a record short of tune.trials, which finished_study leaves
    study_record_path = tmp_path / "kept" / f"{first.study_name}.json"
    study_record_path.parent.mkdir()
    study_record_path.write_text(json.dumps(study_record({"run": "ms", "inherited": {}}, *kept)))
    asking = dataclasses.replace(tune_params, tune=dataclasses.replace(tune_params.tune, trials=10))
    assert (
        kept_study(tmp_path / "kept", asking, "ms") == kept and finished_study(tmp_path / "kept", asking, "ms") is None
    )


def test_dml_tune_records_completed_trials_only_and_goes_on_from_the_record(tune_params, tmp_path, monkeypatch):
    """pipeline/studies/tune_command.py: after each trial the study in progress is `<study>.partial.json` (every
    completed trial, never the one that was running), the finished one `<study>.json`; a tune stopped mid-study goes
    on from the committed partial record on a machine without its journal, to the trials of one never stopped."""
    import pipeline.studies.tune_command as command

    monkeypatch.setattr(command, "validation_objective", lambda *args: bowl)

    def on(machine: str, kept: str) -> tuple:
        return ("", "", tmp_path / machine, tmp_path / kept)  # data, features, journals, studies

    for folder in ("a", "b", "c", "kept-a", "kept-b"):
        (tmp_path / folder).mkdir()
    whole = command._tune_one(tune_params, "ms", {}, 7, [], on("a", "kept-a"), None)
    assert [p.name for p in (tmp_path / "kept-a").iterdir()] == [f"{whole['study']}.json"]  # no partial left
    calls = []

    def stopped_at_the_third(values, floors=None):
        calls.append(values)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the machine went away during trial 2
        return bowl(values)

    monkeypatch.setattr(command, "validation_objective", lambda *args: stopped_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        command._tune_one(tune_params, "ms", {}, 7, [], on("b", "kept-b"), None)
    (record,) = (tmp_path / "kept-b").glob("*.json")
    assert record.name == f"{whole['study']}.partial.json"  # .dvcignore: dvc status does not see it
    assert json.loads(record.read_text())["history"] == whole["history"][:2]  # what a commit would keep
    monkeypatch.setattr(command, "validation_objective", lambda *args: bowl)
    assert command._tune_one(tune_params, "ms", {}, 7, [], on("c", "kept-b"), None)["history"] == whole["history"]
    assert [p.name for p in (tmp_path / "kept-b").iterdir()] == [f"{whole['study']}.json"]
    assert "*.partial.json" in (ROOT / ".dvcignore").read_text().splitlines()


def test_changed_settings_start_a_new_study_and_more_trials_continue_one(tune_params):
    more = dataclasses.replace(tune_params, tune=dataclasses.replace(tune_params.tune, trials=50))
    assert study_name(more, "ms") == study_name(tune_params, "ms")
    reported = dataclasses.replace(tune_params, report=dataclasses.replace(tune_params.report, decimals=3))
    assert study_name(reported, "ms") == study_name(tune_params, "ms")
    faster = dataclasses.replace(tune_params, train=dataclasses.replace(tune_params.train, lr=0.01))
    assert study_name(faster, "ms") != study_name(tune_params, "ms")
    more_processes = dataclasses.replace(tune_params, train=dataclasses.replace(tune_params.train, workers=7))
    assert study_name(more_processes, "ms") == study_name(tune_params, "ms")  # no number depends on them
    other_run = dataclasses.replace(tune_params, ccp=dataclasses.replace(tune_params.ccp, lambda_=0.03))
    assert study_name(other_run, "ms") == study_name(tune_params, "ms")
    moved = dataclasses.replace(tune_params, data=dataclasses.replace(tune_params.data, download_dir="/elsewhere"))
    assert study_name(moved, "ms") == study_name(tune_params, "ms")  # where the files are is not what they hold
    assert study_name(tune_params, "ms", {"ccp.c2.beta": 0.3}) != study_name(tune_params, "ms", {"ccp.c2.beta": 0.4})
    assert study_name(tune_params, "ms", {}) == study_name(tune_params, "ms")
    # a searched key's value is no trial's (each trial sets it): the study of the run that searches it stays, and so
    # does that of a run that does not read it (Loss-Proxy has no lambda); a key the run reads and does not search
    # names a new study, for that run alone
    assert "ccp.lambda" in tune_params.tune.spaces["c2_ccp"]
    for run in ("c2_ccp", "c2_loss_proxy"):
        assert study_name(other_run, run) == study_name(tune_params, run)
    patient = dataclasses.replace(tune_params, ccp=dataclasses.replace(tune_params.ccp, patience=5))
    assert study_name(patient, "c2_ccp") != study_name(tune_params, "c2_ccp")
    assert study_name(patient, "c2_loss_proxy") == study_name(tune_params, "c2_loss_proxy")
    hard = dataclasses.replace(tune_params, profs=dataclasses.replace(tune_params.profs, m_mode="fixed"))
    assert study_name(hard, "ms_plain") == study_name(tune_params, "ms_plain")  # plain has no projections
    assert study_name(hard, "ms_profs_hncm") != study_name(tune_params, "ms_profs_hncm")
    assert study_name(tune_params, "danml") != study_name(tune_params, "ms")


def test_tuning_never_reads_the_test_classes(tune_params, tiny_data):
    """The fold models a trial trains see no test row: with every test feature replaced by NaN, training
    without test classes gives the same weights and validation curve, and trains at all."""
    manifest, features = tiny_data
    test = features.split == "test"
    poisoned = FeatureCache(
        np.where(test[:, None], np.nan, features.features).astype(np.float32),
        features.labels,
        features.split,
        features.fold,
    )
    cpu = torch.device("cpu")
    clean = train_fold(run_setup(tune_params, "ms"), 0, manifest, features, cpu, test=False)
    dirty = train_fold(run_setup(tune_params, "ms"), 0, manifest, poisoned, cpu, test=False)
    assert clean.test_embeddings is None and dirty.test_embeddings is None
    assert pd.DataFrame(clean.fit.history).equals(pd.DataFrame(dirty.fit.history))  # epoch 0's loss is NaN in both
    assert np.isfinite(dirty.fit.best_val_map_at_r) and len(dirty.fit.history) > 1
    for key, value in clean.model.state_dict().items():
        assert torch.equal(value, dirty.model.state_dict()[key]), key
    # and with the test classes the poison shows, so the check above can fail
    with_test = train_fold(run_setup(tune_params, "ms"), 0, manifest, poisoned, cpu)
    assert np.isnan(with_test.test_embeddings).all()


def dml(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True, cwd=cwd)


def test_dml_tune_makes_the_studies_the_values_stage_reads_and_train_applies_them(tmp_path, tiny_dict):
    """Stages and the tuning command end to end on the tiny data. The values stage runs no trial: a missing study
    stops it with one line naming the runs and `dml tune`. `dml tune` searches `ms` (3 trials), c2_batch whose
    values c2_loss_proxy and c2_ccp inherit (`tune.inherit`, an option off by default), and c2_ccp's own lambda with
    those values fixed; again it runs nothing; `--trials 4` extends one study by a trial from its journal. The values
    stage then records every run (no values for a run without a space) and `train --tuned` trains ms at the best
    trial's alpha. A number set for a searched key beats the study, and no trial runs for it."""
    from pipeline.infra.io import read_json
    from tests.conftest import write_params

    space = {"baselines.ms.loss.alpha": {"low": 0.5, "high": 8.0, "log": True}}
    raw = merge(
        tiny_dict,
        {
            "experiment": {"methods": ["ms", "proxy_anchor"], "seeds": [0]},
            "profs": {"losses": []},
            "tune": {"trials": 3, "startup_trials": 2},
        },
    )
    raw["tune"]["spaces"] = {
        "ms": space,
        "c2_batch": {"ccp.c2.beta": {"low": 0.3, "high": 0.6}},
        "c2_ccp": {"ccp.lambda": {"low": 1e-5, "high": 1e-2, "log": True}},
    }
    raw["tune"]["inherit"] = {"c2_loss_proxy": "c2_batch", "c2_ccp": "c2_batch"}  # the option, not the default
    params = write_params(tmp_path / "params.yaml", raw)
    prepared, features, tuned, records = (tmp_path / name for name in ("prepared", "features", "tuned", "records"))
    studies, journals = tmp_path / "studies", tmp_path / "journals"
    values_args = ("--data", prepared, "--studies", studies, "--out", tuned, "--records", records)
    for module, args in (("prepare", ("--out", prepared)), ("embed", ("--data", prepared, "--out", features))):
        done = run_stage(module, params, *map(str, args))
        assert done.returncode == 0, done.stderr
    missing = run_stage("values", params, *map(str, values_args))
    assert missing.returncode == 2 and not tuned.exists()
    assert (
        missing.stderr.strip()
        .splitlines()[-1]
        .startswith(
            f"error: no finished study in {studies}/ for ms, c2_batch, c2_ccp: run `dml tune ms c2_batch c2_ccp`"
        )
    )
    where = ("--params", str(params), "--data", str(prepared), "--features", str(features))
    where += ("--journals", str(journals), "--studies", str(studies))
    done = dml("tune", *where)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("validation MAP@R") == 9  # one log line per trial: ms, c2_batch, c2_ccp
    assert dml("tune", *where).stderr.count("validation MAP@R") == 0  # finished: nothing runs again
    done = run_stage("values", params, *map(str, values_args))
    assert done.returncode == 0, done.stderr
    ms, other = read_json(records / "ms.json"), read_json(records / "proxy_anchor.json")
    # what train reads: the values and the run's settings with them (the one file of its own settings it depends on)
    alpha = ms["values"]["baselines.ms.loss.alpha"]
    assert read_json(tuned / "ms.json")["values"] == ms["values"]
    assert read_json(tuned / "ms.json")["settings"]["loss"]["alpha"] == alpha
    assert read_json(tuned / "proxy_anchor.json")["values"] == {}
    assert ms["trials"] == 3 and len(ms["history"]) == 3 and (journals / "ms.journal").is_file()
    best = max(ms["history"], key=lambda t: t["val_map_at_r"])
    assert ms["values"] == best["values"] and 0.5 <= ms["values"]["baselines.ms.loss.alpha"] <= 8.0
    assert ms["best_val_map_at_r"] == best["val_map_at_r"] and ms["space"] == {
        k: {**v, "integer": False} for k, v in space.items()
    }
    assert other["trials"] == 0 and other["values"] == {} and ms["user_set"] == {}
    # inheritance: Loss-Proxy trains at c2_batch's beta; c2_ccp searched lambda with that beta fixed
    batch, proxy, ccp = (read_json(records / f"{run}.json") for run in ("c2_batch", "c2_loss_proxy", "c2_ccp"))
    assert set(batch["values"]) == {"ccp.c2.beta"} and batch["trials"] == 3
    assert proxy["trials"] == 0 and proxy["inherits"] == "c2_batch" and proxy["values"] == batch["values"]
    assert ccp["inherited"] == batch["values"] and ccp["trials"] == 3
    assert ccp["values"] == {**batch["values"], **max(ccp["history"], key=lambda t: t["val_map_at_r"])["values"]}
    assert read_json(tuned / "c2_ccp.json")["values"] == ccp["values"]
    # each finished study's record is kept under its study name; the values stage's record is it with user_set
    # and its README (`dml studies`) names them, c2_ccp's study found under the values it inherits
    assert sorted(p.name for p in studies.iterdir()) == sorted(
        ["README.md", *(f"{r['study']}.json" for r in (ms, batch, ccp))]
    )
    current = (studies / "README.md").read_text().split("## Other records")[0]
    assert all(f"| {r['run']} | `{r['study']}` | 3 |" in current for r in (ms, batch, ccp)), current
    assert {**read_json(studies / f"{ms['study']}.json"), "user_set": {}} == ms
    # one study extended by a trial: resumed from its journal, its first 3 trials as they were; counted whole
    done = dml("tune", "ms", "--trials", "4", *where)
    assert done.returncode == 0 and done.stderr.count("validation MAP@R") == 1 and "ms: trial 3 " in done.stderr
    assert read_json(studies / f"{ms['study']}.json")["history"][:3] == ms["history"]
    assert run_stage("values", params, *map(str, values_args)).returncode == 0
    assert read_json(records / "ms.json")["trials"] == 4
    # on another machine (no journal), with the records committed: nothing runs
    shutil.rmtree(journals)
    assert dml("tune", *where, "--trials", "3").stderr.count("validation MAP@R") == 0
    # a number set for a searched key: trained at it, its study kept, no trial
    raw["baselines"]["ms"]["loss"]["alpha"] = 3.0
    user = write_params(tmp_path / "user.yaml", raw)
    done = run_stage("values", user, *map(str, values_args))
    assert done.returncode == 0 and "validation MAP@R" not in done.stderr, done.stderr
    assert read_json(records / "ms.json")["user_set"] == {"baselines.ms.loss.alpha": 3.0}
    assert (
        read_json(tuned / "ms.json")["values"] == {}
        and read_json(tuned / "ms.json")["settings"]["loss"]["alpha"] == 3.0
    )
    assert run_stage("values", params, *map(str, values_args)).returncode == 0
    done = run_stage(
        "train",
        params,
        "--method",
        "ms",
        "--data",
        str(prepared),
        "--features",
        str(features),
        "--out",
        str(tmp_path / "models"),
        "--train-logs",
        str(tmp_path / "logs"),
        "--tuned",
        str(tuned / "ms.json"),
    )
    assert done.returncode == 0, done.stderr
    summary = read_json(tmp_path / "models" / "fold-0-seed-0" / "summary.json")
    assert summary["params"]["loss"]["alpha"] == read_json(records / "ms.json")["values"]["baselines.ms.loss.alpha"]


def _marked(mark: str) -> list[int]:
    """The live processes whose environment holds `mark` (every child of a process started with it inherits it)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if mark.encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").is_file(), reason="reads /proc (Linux)")
def test_sigterm_stops_dml_tune_and_its_workers_and_leaves_only_completed_trials(tmp_path, tiny_dict):
    """SIGTERM during `dml tune` (a scheduler, or a user's kill) stops the command and its worker processes (none
    is left running: the trials' processes inherit a marker in their environment), and the record in progress holds
    completed trials only."""
    import os
    import signal
    import time

    from tests.conftest import write_params

    raw = merge(tiny_dict, {"tune": {"trials": 50, "startup_trials": 2}, "train": {"workers": 2}})
    raw["tune"]["spaces"] = {"ms": {"baselines.ms.loss.alpha": {"low": 0.5, "high": 8.0, "log": True}}}
    params = write_params(tmp_path / "params.yaml", raw)
    prepared, features, studies = tmp_path / "prepared", tmp_path / "features", tmp_path / "studies"
    for module, args in (("prepare", ("--out", prepared)), ("embed", ("--data", prepared, "--out", features))):
        assert run_stage(module, params, *map(str, args)).returncode == 0
    mark = f"DML_TEST_MARK={tmp_path.name}"
    where = ["--params", str(params), "--data", str(prepared), "--features", str(features), "--studies", str(studies)]
    log = tmp_path / "tune.log"
    with open(log, "w") as err:  # a file, not a pipe: the command never blocks on a full one
        tune = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli", "tune", "ms", *where, "--journals", str(tmp_path / "journals")],
            stderr=err,
            env={**os.environ, "DML_TEST_MARK": tmp_path.name},
        )
    deadline = time.time() + 120
    while "ms: trial 0 validation MAP@R" not in log.read_text() and time.time() < deadline:
        time.sleep(0.2)  # the first trial done: the workers are up and on the next one
    time.sleep(0.5)
    assert len(_marked(mark)) > 1  # the command and its workers
    tune.send_signal(signal.SIGTERM)
    assert tune.wait(timeout=60) == 128 + signal.SIGTERM, log.read_text()[-2000:]
    deadline = time.time() + 30
    while _marked(mark) and time.time() < deadline:
        time.sleep(0.2)
    assert not _marked(mark), "worker processes left running"
    (record,) = studies.glob("*.json")
    assert record.name.endswith(".partial.json")
    history = json.loads(record.read_text())["history"]
    assert 1 <= len(history) < 50 and all(t["val_map_at_r"] is not None for t in history)


def test_an_error_raised_while_sigterm_unwinds_still_ends_dml_tune_as_sigterm():
    """The signal can cut a journal lock's acquisition; its release then fails (no lock file). The exit code stays
    SIGTERM's, and the handler is the one before once the command is done."""
    import os
    import signal
    import time

    from pipeline.studies.tune_command import stopped_by_sigterm

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stop:
        with stopped_by_sigterm():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            finally:
                raise FileNotFoundError("ms.journal.lock: no such file")  # noqa: B012
    assert stop.value.code == 128 + signal.SIGTERM and signal.getsignal(signal.SIGTERM) is before
    with pytest.raises(FileNotFoundError), stopped_by_sigterm():  # without the signal an error stays an error
        raise FileNotFoundError("missing")


def test_the_tuning_report_shows_used_written_and_inherited_values(tiny_params, tmp_path):
    from pipeline.reporting.tuning import history_figure, runs_at_range_ends, tuning_frame, tuning_markdown

    space = {"ccp.c2.beta": {"low": 0.3, "high": 0.6, "log": False, "integer": False}}
    history = [
        {"trial": 0, "val_map_at_r": 0.41, "values": {"ccp.c2.beta": 0.5}},
        {"trial": 1, "val_map_at_r": 0.45, "values": {"ccp.c2.beta": 0.35}},
    ]
    records = [
        {
            "run": "c2_batch",
            "space": space,
            "inherits": None,
            "inherited": {},
            "trials": 2,
            "values": {"ccp.c2.beta": 0.35},
            "best_trial": 1,
            "best_val_map_at_r": 0.45,
            "history": history,
        },
        {
            "run": "c2_ccp",
            "space": {},
            "inherits": "c2_batch",
            "inherited": {"ccp.c2.beta": 0.35},
            "trials": 0,
            "values": {"ccp.c2.beta": 0.35},
            "best_val_map_at_r": None,
            "history": [],
        },
        {
            "run": "ms",
            "space": {},
            "inherits": None,
            "inherited": {},
            "trials": 0,
            "values": {},
            "best_val_map_at_r": None,
            "history": [],
        },
    ]
    frame = tuning_frame(tiny_params, records)
    assert frame[["run", "key", "written", "used", "range", "trials", "range_end"]].values.tolist() == [
        ["c2_batch", "ccp.c2.beta", "study", 0.35, "[0.3, 0.6]", 2, ""],
        ["c2_ccp", "ccp.c2.beta", "study", 0.35, "from `c2_batch`", 0, ""],
    ]
    assert frame.best_val_map_at_r.iloc[0] == pytest.approx(45.0) and np.isnan(frame.best_val_map_at_r.iloc[1])
    text = tuning_markdown(tiny_params, records, 2, None)
    assert "| `c2_batch` | `ccp.c2.beta` | study | **0.35** | [0.3, 0.6] | 45.00 | 2 (1) |" in text
    assert "| `c2_ccp` | `ccp.c2.beta` | study | **0.35** | from `c2_batch` |  |  |" in text
    assert text.endswith("a key that reads `study` takes its `tune.start` value): `ms`.\n")
    user = [{**records[0], "values": {}, "user_set": {"ccp.c2.beta": 0.5}}, *records[1:]]  # -S ccp.c2.beta=0.5
    shown = tuning_markdown(tiny_params, user, 2, None)
    assert "| `c2_batch` | `ccp.c2.beta` | 0.5 | **0.5** | set in params.yaml |  |  |" in shown
    assert "instead of their studies'" in shown and "`c2_batch` (ccp.c2.beta = 0.5)" in shown
    assert "at its" not in text and "Best value within" not in text and not runs_at_range_ends(tiny_params, records)
    assert tuning_markdown(tiny_params, records[2:], 2, None).startswith("No run was tuned")
    records[0]["values"] = records[1]["values"] = {"ccp.c2.beta": 0.595}  # 98 % of the range: flagged
    flagged = tuning_markdown(tiny_params, records, 2, None)
    assert (
        "| `c2_batch` | `ccp.c2.beta` | study | **0.595** | [0.3, 0.6] **at its high end** | 45.00 | 2 (1) |" in flagged
    )
    assert "| `c2_ccp` | `ccp.c2.beta` | study | **0.595** | from `c2_batch` **at its high end** |  |  |" in flagged
    assert (
        "Best value within 5% of an end of its range (on the sampler's scale): `c2_batch` `ccp.c2.beta` (high), "
        "`c2_ccp` `ccp.c2.beta` (high)." in flagged.replace("\n", " ")
    )
    assert runs_at_range_ends(tiny_params, records) == {"c2_batch": ["ccp.c2.beta"], "c2_ccp": ["ccp.c2.beta"]}
    records[0]["limits"] = {"ccp.c2.beta": [None, 0.6]}  # were 0.6 the key's own limit: the loss's edge
    at_limit = tuning_markdown(tiny_params, records, 2, None)
    assert "| [0.3, 0.6] at its high end, the key's own limit | 45.00 |" in at_limit
    assert "from `c2_batch` at its high end, the key's own limit |" in at_limit
    assert "Best value within 5% of an end of its range" not in at_limit
    assert "range end that is the key's own limit" in at_limit and not runs_at_range_ends(tiny_params, records)
    records[0]["limits"] = {"ccp.c2.beta": [0.0, None]}
    records[0]["values"] = records[1]["values"] = {"ccp.c2.beta": 0.305}  # at the low end, 0 its schema's limit
    assert runs_at_range_ends(tiny_params, records) == {"c2_batch": ["ccp.c2.beta"], "c2_ccp": ["ccp.c2.beta"]}
    records[0]["inert_while"] = {"ccp.c2.beta": {"ccp.c2.beta": 0.31}}  # were every value <= 0.31 one model (rho)
    assert "at its low end, the key's own limit" in tuning_markdown(tiny_params, records, 2, None)
    assert not runs_at_range_ends(tiny_params, records)
    records[0]["inert_while"] = {"ccp.c2.beta": {"ccp.c2.beta": 0.3}}  # the best value above it: it may matter
    assert runs_at_range_ends(tiny_params, records) == {"c2_batch": ["ccp.c2.beta"], "c2_ccp": ["ccp.c2.beta"]}
    records[0]["values"] = records[1]["values"] = {"ccp.c2.beta": 0.595, "ccp.c2.alpha": 0.1}
    records[0]["inert_while"] = {"ccp.c2.beta": {"ccp.c2.alpha": 0.2}}  # were beta inert while alpha <= 0.2 (lambda)
    assert not runs_at_range_ends(tiny_params, records)  # at either end
    records[0]["inert_while"] = {"ccp.c2.beta": {"ccp.c2.alpha": 0.05}}
    assert runs_at_range_ends(tiny_params, records) == {"c2_batch": ["ccp.c2.beta"], "c2_ccp": ["ccp.c2.beta"]}
    history_figure(records, 1, tmp_path / "history.png")
    history_figure(records[2:], 1, tmp_path / "none.png")
    assert (tmp_path / "history.png").stat().st_size > 10_000 and (tmp_path / "none.png").is_file()


@pytest.mark.parametrize(
    "value, dim, end",
    [
        (0.02, {"low": 2e-6, "high": 2e-2, "log": True}, "high"),  # the emoji CCP lambdas' old end
        (0.0155, {"low": 2e-6, "high": 2e-2, "log": True}, "high"),  # log position 0.972
        (0.0155, {"low": 2e-6, "high": 2.0, "log": True}, ""),  # log position 0.639
        (2e-6, {"low": 2e-6, "high": 2.0, "log": True}, "low"),
        (0.049, {"low": 0.0, "high": 1.0, "log": False}, "low"),
        (0.051, {"low": 0.0, "high": 1.0, "log": False}, ""),
        (16, {"low": 4, "high": 16, "log": False}, "high"),
        (10, {"low": 4, "high": 16, "log": False}, ""),
    ],
)
def test_a_best_value_at_an_end_of_its_range_is_flagged_on_the_samplers_scale(value, dim, end):
    from pipeline.reporting.rules import range_end

    assert range_end(value, dim) == end


def test_a_keys_limits_are_the_bounds_its_schema_puts_on_it(tiny_params):
    """pipeline/studies/tuning.py key_limits: pydantic's ge / gt and le / lt of the field a dotted key names."""
    from pipeline.studies.tuning import key_limits

    assert key_limits(tiny_params, "baselines.r_margin_d.loss.margin") == (0.0, None)  # Field(ge=0.0)
    assert key_limits(tiny_params, "baselines.anml_lifted.loss.lambda2") == (-1.0, 1.0)  # a cosine radius
    assert key_limits(tiny_params, "ccp.lambda") == (0.0, None)  # a YAML key that is a Python keyword
    assert key_limits(tiny_params, "ccp.c2.beta") == (0.0, None)  # Field(gt=0.0): a bound no range reaches
    # a floor set by another key: the pool holds at least ccp.proxies_per_class (2 in the tiny config) a class
    assert key_limits(tiny_params, "ccp.pool_size") == (tiny_params.ccp.proxies_per_class, None)
    assert key_limits(apply_values(tiny_params, {"ccp.proxies_per_class": 3}), "ccp.pool_size") == (3, None)
    # a ceiling set by another section's key: an HNCM batch keeps a seed class among train.classes_per_batch
    assert key_limits(tiny_params, "profs.hard_classes") == (1, tiny_params.train.classes_per_batch - 1)
    assert key_limits(apply_values(tiny_params, {"train.classes_per_batch": 8}), "profs.hard_classes") == (1, 7)
    # a contrastive margin beyond every distance of the unit ball: 2 under l2 (PROFS's) or lipschitz, none unnormalised
    assert key_limits(tiny_params, "profs.contrastive.neg_margin") == (0.0, 2.0)
    assert key_limits(tiny_params, "profs.contrastive.pos_margin") == (0.0, 2.0)
    unnormalised = apply_values(tiny_params, {"profs.embedding_norm": "none"})
    assert key_limits(unnormalised, "profs.contrastive.neg_margin") == (0.0, None)
    # the top of the paper's reading of a key: PROFS's small lambda (eq. 2.4), not a bound the schema enforces
    assert key_limits(tiny_params, "profs.lambda") == (0.0, 1.0)
    assert apply_values(tiny_params, {"profs.lambda": 5.0}).profs.lambda_ == 5.0
    # a key drawn as its excess over another: the draw's floor 0 (beta = alpha), whatever the key's own bounds
    assert key_limits(tiny_params, "ccp.c2.beta", SearchDim(0.0, 1.0, above="ccp.c2.alpha")) == (0.0, None)
    project = params_from_dict(project_params())  # every range of the default lies within its key's limits
    for space in project.tune.spaces.values():  # (the tiny batches of 2 classes leave HNCM no hard class)
        for key, dim in space.items():
            low, high = key_limits(project, key, dim)
            assert (low is None or low <= dim.low) and (high is None or dim.high <= high), (key, dim)


def test_a_key_kept_above_another_is_placed_in_its_range_by_its_draw(tiny_params):
    """pipeline/reporting/rules.py: beta searched by its excess over alpha is at a range end when beta - alpha is,
    whatever beta's own value; its low end 0 (beta = alpha) is the draw's own limit (key_limits)."""
    from pipeline.reporting.rules import study_flaw
    from pipeline.reporting.tuning import tuning_markdown

    dim = {"low": 0.0, "high": 1.0, "log": False, "integer": False}
    record = {
        "run": "c2_batch",
        "space": {"ccp.c2.alpha": {**dim, "low": 0.01}, "ccp.c2.beta": {**dim, "above": "ccp.c2.alpha"}},
        "limits": {"ccp.c2.alpha": [0.0, None], "ccp.c2.beta": [0.0, None]},
        "inherits": None,
        "inherited": {},
        "trials": 1,
        "values": {"ccp.c2.alpha": 0.5, "ccp.c2.beta": 0.98},  # m+ 0.48: inside, though beta is at 98 % of [0, 1]
        "best_trial": 0,
        "best_val_map_at_r": 0.4,
        "history": [
            {"trial": 0, "val_map_at_r": 0.4, "values": {"ccp.c2.alpha": 0.5, "ccp.c2.beta - ccp.c2.alpha": 0.48}}
        ],
    }
    assert study_flaw(record, 0.5) == ("", [])
    assert "| `ccp.c2.beta` | study | **0.98** | [0, 1] above `ccp.c2.alpha` | 40.00 | 1 (0) |" in tuning_markdown(
        tiny_params, [record], 2, None
    )
    record["values"]["ccp.c2.beta"] = 0.51  # m+ 0.01: its low end, beta = alpha, the draw's own limit
    assert study_flaw(record, 0.5) == ("", [])
    assert "above `ccp.c2.alpha` at its low end, the key's own limit" in tuning_markdown(tiny_params, [record], 2, None)
    record["values"]["ccp.c2.beta"] = 1.47  # m+ 0.97: its high end, a clipped search
    assert study_flaw(record, 0.5) == ("tuning unfinished", ["ccp.c2.beta at its high end"])


def test_profs_rho_and_lambda_change_nothing_where_every_fold_takes_one_step_a_projection(tiny_params):
    """pipeline/studies/tuning.py inert_while: PROFS's rho sets only M = ceil(rho / p(y)), p(y) = B / (I L), which is 1
    for every rho <= p(y) on the fold with the most training classes, and at M = 1 lambda's proximal term is 0;
    other keys, or a fixed M, always matter."""
    from pipeline.studies.tuning import inert_while

    one_step = {"profs.rho": pytest.approx(tiny_params.train.classes_per_batch / 38)}
    assert inert_while(tiny_params, "profs.rho", [37, 38]) == one_step
    assert inert_while(tiny_params, "profs.lambda", [37, 38]) == one_step
    assert inert_while(tiny_params, "profs.triplet.margin", [37, 38]) == {}
    assert inert_while(apply_values(tiny_params, {"profs.m_mode": "fixed"}), "profs.rho", [37, 38]) == {}


def _study(run: str, scores: list[float], inherits: str | None = None, values: bool = True) -> dict:
    """A tuning record whose trial t scored scores[t] (validation MAP@R fractions)."""
    best = int(np.argmax(scores)) if scores else None
    return {
        "run": run,
        "space": {"ccp.c2.beta": {"low": 0.3, "high": 0.6, "log": False, "integer": False}} if scores else {},
        "inherits": inherits,
        "inherited": {},
        "trials": len(scores),
        "values": {"ccp.c2.beta": 0.45} if values else {},
        "best_trial": best,
        "best_val_map_at_r": max(scores) if scores else None,
        "history": [{"trial": t, "val_map_at_r": v, "values": {"ccp.c2.beta": 0.45}} for t, v in enumerate(scores)],
    }


def test_studies_not_converged_are_flagged_with_the_runs_that_inherit_them(tiny_params):
    from pipeline.reporting.rules import late_gain, unconverged_chain
    from pipeline.reporting.tuning import convergence_markdown

    flat = [0.30, 0.40, 0.35, 0.38, 0.39, 0.36, 0.37, 0.39, 0.38, 0.37]  # best at trial 1 of 10
    edge = [0.30, 0.40, 0.35, 0.38, 0.39, 0.36, 0.37, 0.42, 0.38, 0.37]  # best at trial 7: before the last 2
    late = [0.30, 0.40, 0.35, 0.38, 0.39, 0.36, 0.37, 0.42, 0.45, 0.37]  # trial 8 gained 3 points over trial 7
    records = [
        _study("a", late),
        _study("b", edge),
        _study("c", [], inherits="a"),  # trains at a's values
        _study("d", flat, inherits="a"),  # its own study settled, its inherited one did not
        _study("e", []),  # untuned
        _study("f", flat, values=False),
    ]
    assert [r["run"] for r in records if late_gain(r)] == ["a"]
    assert late_gain(records[0]) == {"best_trial": 8, "trials": 10, "window": 2, "gain": pytest.approx(3.0)}
    assert unconverged_chain(records, 0.5) == {"a": ["a"], "c": ["a"], "d": ["a"]}
    assert unconverged_chain(records, 5.0) == {}  # a gain within the noise
    noisy, quiet = (Noise(sigma, 29, 24, -0.96) for sigma in (0.5, 5.0))
    text = convergence_markdown(records[:2], noisy, 2, 1.0)
    assert "(sigma = 0.50 points," in text and "| `b` |" not in text
    assert "| `a` | 8 (10) | +3.00 (last 2) | **no**: more trials may still gain |" in text
    assert "| `a` | 8 (10) | +3.00 (last 2) | yes: within the noise |" in convergence_markdown(
        records[:2], quiet, 2, 1.0
    )
    assert "every study had converged" in convergence_markdown(records[1:2], noisy, 2, 1.0)


def test_where_finetunings_augmentation_runs_names_only_finetuned_studies(tiny_dict):
    """train.augment_on came after the frozen studies in studies/ were recorded: a head on cached features reads no
    image, so its study keeps its name; a finetuned run's inputs depend on it (a resize's rounding)."""

    def name(mode, augment_on):
        return study_name(params_from_dict(merge(tiny_dict, {"train": {"mode": mode, "augment_on": augment_on}})), "ms")

    assert name("frozen", "device") == name("frozen", "loader")
    assert name("finetune", "device") != name("finetune", "loader")


def test_the_studies_catalogue_names_the_study_each_run_trains_at_and_how_older_ones_differ(tiny_dict, tmp_path):
    """`dml studies`: the record the values stage would read heads the first table; an earlier search of the same run
    goes to the second, with the range it searched beside today's; a study in progress is not listed."""
    from pipeline.cli import main
    from pipeline.studies.catalogue import space_change
    from tests.conftest import write_params

    data = merge(tiny_dict, {"tune": {"spaces": {"ms": SPACE}}})
    name = study_name(params_from_dict(data), "ms")
    space = {
        k: {"low": d["low"], "high": d["high"], "log": d.get("log", False), "integer": d.get("integer", False)}
        for k, d in SPACE.items()
    }
    old_space = {**space, "baselines.ms.loss.base": {**space["baselines.ms.loss.base"], "high": 0.5}}
    cap = params_from_dict(data).train.max_epochs  # trials that held under today's epoch cap
    history = [
        {"trial": t, "val_map_at_r": 0.5 + t / 100, "values": {"baselines.ms.loss.alpha": 2.0 + t}}
        | {"max_epochs": cap, "epochs_run": 1, "capped": False}
        for t in range(3)
    ]
    folder = tmp_path / "studies"
    folder.mkdir()
    for study, kept, trials in ((name, space, 3), ("ms-0123456789ab", old_space, 2)):
        record = {
            "run": "ms",
            "study": study,
            "space": kept,
            "trials": trials,
            "history": history[:trials],
            "best_trial": trials - 1,
            "best_val_map_at_r": history[trials - 1]["val_map_at_r"],
            "values": {"baselines.ms.loss.alpha": 2.0 + trials - 1},
        }
        (folder / f"{study}.json").write_text(json.dumps(record))
    (folder / f"{name}.partial.json").write_text("{}")  # in progress: never read
    main(["studies", "--params", str(write_params(tmp_path / "params.yaml", data)), "--studies", str(folder)])
    current, other = (folder / "README.md").read_text().split("## Other records")
    assert f"| ms | `{name}` | 3 | 2 | 0.5200 | alpha 4 |" in current
    assert (
        "| ms | `ms-0123456789ab` | 2 | 1 | 0.5100 | alpha 3 | baselines.ms.loss.base [0, 0.5] (now [0, 1]) |" in other
    )
    assert space_change(space, space) == "the same space, other settings"
    assert space_change({}, {"a.b": {"low": 1, "high": 10, "log": True}}) == "a.b not searched (now [1, 10] log)"
