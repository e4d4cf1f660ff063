"""pipeline/infra/console.py: a stage's log file named after its DVC stage, DEBUG lines there and not on the console,
faiss's loader silenced, and the running jobs' notes beside the stage's one bar, from worker processes too."""

import subprocess
import sys
import time

from pipeline.infra import console
from pipeline.infra.parallel import Workers
from tests.conftest import ROOT


def test_the_log_file_is_named_after_the_dvc_stage(monkeypatch, tmp_path):
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("DVC_STAGE", "train_ccp@c2-ccp")
    assert console.stage_log("train") == tmp_path / "data" / "logs" / "train_ccp-c2-ccp.log"
    monkeypatch.setenv("DVC_STAGE", "sub/dvc.yaml:embed")
    assert console.stage_log("embed") == tmp_path / "data" / "logs" / "embed.log"
    monkeypatch.delenv("DVC_STAGE")
    monkeypatch.delenv("DVC_ROOT")
    assert str(console.stage_log("train")) == "data/logs/train.log"  # outside DVC: the module's name


def test_debug_lines_go_to_the_file_only_and_the_faiss_loader_is_quiet(tmp_path):
    script = (
        "import logging, sys; from pathlib import Path; from pipeline.infra.console import configure_logging; "
        "configure_logging(Path(sys.argv[1])); "
        "logging.getLogger('pipeline.training.loop').debug('ms-0: epoch 3 loss 0.5'); "
        "logging.getLogger('pipeline.studies.tuning').info('a decision'); "
        "logging.getLogger('faiss.loader').info('Could not load library with AVX512 support')"
    )
    log = tmp_path / "stage.log"
    done = subprocess.run([sys.executable, "-c", script, str(log)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "a decision" in done.stderr and "epoch 3" not in done.stderr and "AVX512" not in done.stderr
    written = log.read_text()
    assert "ms-0: epoch 3 loss 0.5" in written and "a decision" in written and "AVX512" not in written


def note_epochs(job):
    """A job that reports two epochs and ends, as pipeline/training/loop.py fit does."""
    name, wait = job
    for epoch in (1, 2):
        console.note(name, f"epoch {epoch}")
        time.sleep(wait)
    console.note(name, "")
    return name


def test_notes_reach_the_bar_from_this_process_and_from_workers(monkeypatch):
    shown = []
    monkeypatch.setattr(
        console, "_show", lambda job, text, real=console._show: (shown.append((job, text)), real(job, text))
    )
    with Workers(1, 1) as here:
        assert here.run(note_epochs, [("a", 0.0)]) == ["a"]
    assert shown == [("a", "epoch 1"), ("a", "epoch 2"), ("a", "")]
    shown.clear()
    with Workers(2, 1) as two:
        assert two.run(note_epochs, [("b", 0.3), ("c", 0.3)]) == ["b", "c"]
    assert {("b", "epoch 2"), ("c", "epoch 2")} <= set(shown)  # relayed from the workers to this process's bar
    assert not console._running and console._bar is None  # nothing left beside a closed bar


def test_the_bar_shows_the_running_jobs_in_name_order():
    with console.jobs_bar(3, "ms") as bar:
        console.note("ms-1", "epoch 7")
        console.note("ms-0", "epoch 12")
        assert bar.postfix == "ms-0 epoch 12, ms-1 epoch 7"
        console.note("ms-0", "")
        assert bar.postfix == "ms-1 epoch 7"


def test_the_stage_log_folder_ignores_itself_in_any_repository(tmp_path):
    """A project without /data/ in its .gitignore (the end-to-end tests' copy; a fork) sees no log in `git status`,
    so `dvc exp run` never takes one into an experiment's commit."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    script = "from pipeline.infra.console import start_stage_log; print(start_stage_log('train'))"
    env = {"PATH": "/usr/bin:/bin", "DVC_STAGE": "train@ms", "DVC_ROOT": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "data" / "logs" / "train-ms.log").is_file() and "log: " in done.stderr
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path, capture_output=True
    )
    assert status.stdout == b""


def test_the_evaluate_stage_draws_one_bar_for_all_its_models(monkeypatch, tmp_path, tiny_dict):
    """One bar for the stage, not a kNN bar per model."""
    import argparse
    import json

    import numpy as np
    import tqdm

    from pipeline.params.root import params_from_dict
    from pipeline.runs import all_runs, model_ids, model_name
    from stages import evaluate
    from tests.conftest import merge

    params = params_from_dict(merge(tiny_dict, {"eval": {"workers": 1}}))
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 10)
    for run in all_runs(params):
        for fold, seed in model_ids(params):
            folder = tmp_path / "models" / run / model_name(fold, seed)
            folder.mkdir(parents=True)
            np.savez(folder / "test_embeddings.npz", embeddings=rng.normal(size=(40, 8)), labels=labels)
            (folder / "summary.json").write_text(json.dumps({"best_val_map_at_r": 0.5}))
    bars = []
    monkeypatch.setattr(
        tqdm.tqdm,
        "__init__",
        lambda self, *a, real=tqdm.tqdm.__init__, **k: (bars.append(k.get("desc")), real(self, *a, **k))[1],
    )
    reference = {"test": {"map_at_r": 0.3, "precision_at_1": 0.6}, "validation": {"map_at_r": 0.4}}
    monkeypatch.setattr(evaluate, "evaluate_backbone", lambda job: reference)  # the features' row: no models, no bar
    args = argparse.Namespace(
        models=str(tmp_path / "models"),
        data=str(tmp_path / "prepared"),
        features=str(tmp_path / "features"),
        backbone=str(tmp_path / "backbone.json"),
        out=str(tmp_path / "metrics"),
        spectra=str(tmp_path / "spectra"),
        per_class=str(tmp_path / "per_class"),
        headline=str(tmp_path / "headline.json"),
    )
    evaluate.main(params, args)
    assert bars == ["evaluate"]
    assert len(json.loads((tmp_path / "headline.json").read_text())) == len(all_runs(params)) + 1  # + backbone
