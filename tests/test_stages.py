"""Stage CLIs on bad input: one line naming the key, exit code 2, earlier outputs untouched."""

import hashlib
import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, merge, write_params


def run_stage(module, params_path, *args):
    return subprocess.run(
        [sys.executable, "-m", f"stages.{module}", "--params", str(params_path), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def tree_digest(folder):
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        h.update(str(p.relative_to(folder)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def prepared(tmp_path, tiny_dict):
    out = tmp_path / "prepared"
    done = run_stage("prepare", write_params(tmp_path / "params.yaml", tiny_dict), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


BAD_PARAMS = [
    ({"data": {"images_per_clas": 8}}, "error: params.yaml: data.images_per_clas: unknown key"),
    ({"data": {"num_classes": "many"}}, "error: params.yaml: data.num_classes: must be a valid integer, got 'many'"),
    ({"data": {"images_per_class": 1}}, "error: params.yaml: data.images_per_class: must be >= 2, got 1"),
    ({"train": {"weight_decay": -1e-4}}, "error: params.yaml: train.weight_decay: must be >= 0.0, got -0.0001"),
    ({"experiment": {"methods": ["ms", "nope"]}}, "error: params.yaml: experiment.methods: unknown method 'nope'"),
]


@pytest.mark.parametrize("override,message", BAD_PARAMS)
def test_the_code_stage_stops_a_run_on_any_bad_value_and_keeps_its_output(tmp_path, tiny_dict, override, message):
    out = tmp_path / "code"
    assert run_stage("code", write_params(tmp_path / "params.yaml", tiny_dict), "--out", str(out)).returncode == 0
    before = tree_digest(out)
    done = run_stage("code", write_params(tmp_path / "params.yaml", merge(tiny_dict, override)), "--out", str(out))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(message)
    assert tree_digest(out) == before


@pytest.mark.parametrize("override,message", BAD_PARAMS)
def test_a_stage_checks_the_sections_it_reads_and_leaves_the_others_to_theirs(
    tmp_path, tiny_dict, prepared, override, message
):
    """prepare reads seed, data and experiment (stages/prepare.py): a bad data value stops it with the outputs
    untouched; a bad train value, or a method that names no baseline (a rule that reads baselines), is for the
    stages that read those sections, and the code stage, to report."""
    before = tree_digest(prepared)
    bad = write_params(tmp_path / "params.yaml", merge(tiny_dict, override))
    done = run_stage("prepare", bad, "--out", str(prepared))
    if "data" in override:
        assert done.returncode == 2
        assert done.stderr.strip().splitlines()[-1].startswith(message)
        assert tree_digest(prepared) == before
    else:
        assert done.returncode == 0, done.stderr


def test_train_refuses_a_method_not_listed(tmp_path, tiny_dict, prepared):
    out = tmp_path / "model"
    out.mkdir()
    (out / "keep").write_text("earlier output")
    params = write_params(tmp_path / "params.yaml", tiny_dict)
    done = run_stage(
        "train",
        params,
        "--method",
        "foo",
        "--data",
        str(prepared),
        "--out",
        str(out),
        "--train-logs",
        str(tmp_path / "logs"),
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "error: params.yaml: method 'foo' is not one of the configured runs (ms, proxy_anchor, c2_loss_proxy, c2_ccp, ms_plain,"
        )
    )
    assert (out / "keep").read_text() == "earlier output"


def test_report_names_a_missing_metrics_file(tmp_path, tiny_dict):
    params = write_params(tmp_path / "params.yaml", tiny_dict)
    done = run_stage("report", params, "--metrics", str(tmp_path / "none"), "--out", str(tmp_path / "rep"))
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"error: {tmp_path / 'none' / 'ms.json'}: metrics not found (run the evaluate stage)"
    assert not (tmp_path / "rep").exists()  # no partial report


def test_report_refuses_a_spectrum_run_that_is_not_trained(tmp_path, tiny_dict):
    params = write_params(tmp_path / "params.yaml", merge(tiny_dict, {"report": {"spectrum_runs": ["ms", "npair"]}}))
    done = run_stage("report", params, "--out", str(tmp_path / "rep"))
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("error: params.yaml: report.spectrum_runs: npair not among the trained runs (ms, proxy_anchor,")
    )
    assert not (tmp_path / "rep").exists()


def test_lanml_stage_names_an_unknown_data_set(tmp_path, tiny_dict):
    out = tmp_path / "x.json"
    done = run_stage(
        "lanml",
        write_params(tmp_path / "params.yaml", tiny_dict),
        "--dataset",
        "mnist",
        "--cache",
        str(tmp_path / "uci"),
        "--out",
        str(out),
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: unknown data set 'mnist' (valid: iris, wine,")
    assert not out.exists()


def test_report_names_missing_lanml_results(tmp_path, tiny_dict):
    metrics, ablations = tmp_path / "metrics", tmp_path / "ablations"
    metrics.mkdir()
    ablations.mkdir()
    for study in ("ccp", "profs"):
        (ablations / f"{study}.csv").write_text("sweep,test_map_at_r\n")
    (tmp_path / "backbone.json").write_text("{}")
    done = run_stage(
        "report",
        write_params(
            tmp_path / "params.yaml",
            merge(
                tiny_dict,
                {
                    "experiment": {"methods": []},
                    "ccp": {"losses": []},
                    "profs": {"losses": []},
                    "report": {"spectrum_runs": []},
                },
            ),
        ),
        "--metrics",
        str(metrics),
        "--ablations",
        str(ablations),
        "--backbone",
        str(tmp_path / "backbone.json"),
        "--lanml",
        str(tmp_path / "none"),
        "--out",
        str(tmp_path / "rep"),
    )
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and last.endswith("iris.json: LANML results not found (run lanml@paper-iris)")
    assert not (tmp_path / "rep").exists()  # nothing written before the check


def test_evaluate_names_missing_test_embeddings(tmp_path, tiny_dict):
    out = tmp_path / "metrics"
    done = run_stage(
        "evaluate",
        write_params(tmp_path / "params.yaml", tiny_dict),
        "--models",
        str(tmp_path / "models"),
        "--out",
        str(out),
        "--spectra",
        str(tmp_path / "spectra"),
        "--headline",
        str(tmp_path / "h.json"),
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: {tmp_path / 'models' / 'ms'}/fold-0-seed-0/test_embeddings.npz: test embeddings not found "
        "(run the train stage of ms)"
    )
    assert not out.exists() and not (tmp_path / "h.json").exists()


def test_a_terminated_stage_leaves_no_temporary_folder(tmp_path, tiny_dict, prepared):
    import os
    import signal
    import time

    params = write_params(
        tmp_path / "params.yaml", merge(tiny_dict, {"train": {"mode": "finetune", "max_epochs": 50, "patience": 50}})
    )
    features = tmp_path / "features"  # finetune: the embed stage writes the decode-once pixel store
    assert run_stage("embed", params, "--data", str(prepared), "--out", str(features)).returncode == 0
    assert (features / "pixels.u8").is_file() and not (features / "features.npz").exists()
    (tmp_path / "models").mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stages.train",
            "--params",
            str(params),
            "--method",
            "ms",
            "--data",
            str(prepared),
            "--features",
            str(features),
            "--out",
            str(tmp_path / "models" / "ms"),
            "--train-logs",
            str(tmp_path / "logs"),
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while not list((tmp_path / "models").glob(".ms.*.tmp")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, proc.stderr.read()
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert list((tmp_path / "models").iterdir()) == []


def test_finetune_stages_train_from_the_pixel_store_and_without_it_stop_with_one_line(tmp_path, tiny_dict, prepared):
    finetune = {
        "experiment": {"seeds": [0]},
        "backbone": {"name": "tiny_cnn", "input_size": 16},
        "train": {"mode": "finetune", "max_epochs": 1, "steps_per_epoch": 5},
    }
    params = write_params(tmp_path / "params.yaml", merge(tiny_dict, finetune))
    features = tmp_path / "features"
    assert run_stage("embed", params, "--data", str(prepared), "--out", str(features)).returncode == 0
    train = ["--method", "ms", "--data", str(prepared), "--train-logs", str(tmp_path / "logs")]
    done = run_stage("train", params, *train, "--features", str(features), "--out", str(tmp_path / "model"))
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "model").glob("*/model.pt"))) == 2  # 2 folds x 1 seed
    done = run_stage("train", params, *train, "--features", str(prepared), "--out", str(tmp_path / "other"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert _last_line(done) == (f"error: {prepared}: no pixel store (run the embed stage with train.augment_on=device)")
    assert not (tmp_path / "other").exists()


def _last_line(done):
    return done.stderr.strip().splitlines()[-1]


def test_a_truncated_feature_cache_is_one_line(tmp_path, tiny_dict, prepared):
    params = write_params(tmp_path / "params.yaml", tiny_dict)
    features = tmp_path / "features"
    assert run_stage("embed", params, "--data", str(prepared), "--out", str(features)).returncode == 0
    cache = features / "features.npz"
    cache.write_bytes(cache.read_bytes()[: cache.stat().st_size // 2])  # a copy cut short
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
        str(tmp_path / "model"),
        "--train-logs",
        str(tmp_path / "logs"),
    )
    assert done.returncode == 2, done.stderr
    assert _last_line(done).startswith(f"error: {cache}: unreadable (") and "dvc repro -f embed" in _last_line(done)
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_one_line(tmp_path, tiny_dict, prepared):
    params = write_params(tmp_path / "params.yaml", merge(tiny_dict, {"train": {"device": "cuda"}}))
    done = run_stage("embed", params, "--data", str(prepared), "--out", str(tmp_path / "features"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert _last_line(done) == ("error: train.device: cuda requested but no CUDA device is available (use auto or cpu)")


def test_an_empty_params_file_is_one_line(tmp_path):
    (tmp_path / "params.yaml").write_text("")
    done = run_stage("prepare", tmp_path / "params.yaml", "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert _last_line(done).startswith(f"error: {tmp_path / 'params.yaml'}: empty (")


def test_train_refuses_settings_other_than_those_the_values_stage_wrote(tmp_path, tiny_dict, prepared):
    """DVC reruns a run's train stage when its data/tuned/<run>.json changes, which holds the run's settings; a
    params.yaml whose settings for the run differ from that file's (edited after the values stage ran) stops the stage before
    it trains, naming the file."""
    from pipeline.params.root import params_from_dict
    from pipeline.runs import run_record
    from stages.values import trained_with

    tuned = tmp_path / "ms.json"
    written = trained_with(params_from_dict(tiny_dict), "ms", {})
    assert written["settings"] == json.loads(json.dumps(run_record(params_from_dict(tiny_dict), "ms")))
    tuned.write_text(json.dumps(written))
    edited = write_params(tmp_path / "params.yaml", merge(tiny_dict, {"baselines": {"ms": {"loss": {"alpha": 3.0}}}}))
    args = ("--method", "ms", "--data", str(prepared), "--tuned", str(tuned))
    done = run_stage("train", edited, *args, "--out", str(tmp_path / "m"), "--train-logs", str(tmp_path / "l"))
    assert done.returncode != 0 and not (tmp_path / "m").exists()
    assert (
        _last_line(done)
        == f"error: {tuned}: written for other settings of ms than params.yaml's (rerun the values stage)"
    )
