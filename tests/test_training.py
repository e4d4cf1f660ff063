import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from pipeline.config import to_dict
from pipeline.config.params import params_from_dict
from pipeline.evaluation.protocol import evaluate_embeddings
from pipeline.methods import build_objective
from pipeline.models.backbones import BackboneError, build_backbone
from pipeline.training.experiment import train_fold
from pipeline.training.loop import TrainingError
from pipeline.training.runs import run_setup
from tests.conftest import merge

CPU = torch.device("cpu")


@pytest.mark.parametrize("method", ["ms", "proxy_anchor"])
def test_same_params_give_identical_results(tiny_params, tiny_data, method):
    manifest, features = tiny_data
    a = train_fold(run_setup(tiny_params, method), 0, manifest, features, CPU)
    b = train_fold(run_setup(tiny_params, method), 0, manifest, features, CPU)
    assert np.array_equal(a.test_embeddings, b.test_embeddings)
    assert pd.DataFrame(a.fit.history).equals(pd.DataFrame(b.fit.history))
    ma = evaluate_embeddings(a.test_embeddings, a.test_labels, tiny_params.eval, 0)
    mb = evaluate_embeddings(b.test_embeddings, b.test_labels, tiny_params.eval, 0)
    assert ma == mb
    assert np.isfinite(a.test_embeddings).all()
    assert np.allclose(np.linalg.norm(a.test_embeddings, axis=1), 1.0, atol=1e-5)  # l2 normalisation


def test_training_improves_validation_and_keeps_best(tiny_dict, tiny_data):
    manifest, features = tiny_data
    params = params_from_dict(merge(tiny_dict, {"train": {"max_epochs": 6, "patience": 6, "steps_per_epoch": 10}}))
    result = train_fold(run_setup(params, "ms"), 1, manifest, features, CPU)
    history = result.fit.history
    assert [h["epoch"] for h in history] == list(range(7))
    best = max(h["val_map_at_r"] for h in history)
    assert result.fit.best_val_map_at_r == pytest.approx(best)
    assert best > history[0]["val_map_at_r"]  # training helps on the held-out fold


def test_early_stopping_uses_patience(tiny_dict, tiny_data):
    manifest, features = tiny_data
    # lr so small that nothing improves by min_delta: stops after `patience` epochs
    params = params_from_dict(
        merge(tiny_dict, {"train": {"lr": 1e-12, "max_epochs": 20, "patience": 2, "min_delta": 0.5}})
    )
    result = train_fold(run_setup(params, "ms"), 0, manifest, features, CPU)
    assert len(result.fit.history) == 1 + 2 and result.fit.best_epoch == 0
    assert result.fit.stop_reason == "patience"


def _no_progress(tiny_dict, **sections) -> dict:
    """Nothing improves by min_delta: the shared rule would stop after train.patience = 1 epoch."""
    return merge(
        tiny_dict,
        {"train": {"lr": 1e-12, "max_epochs": 30, "patience": 1, "min_delta": 0.5, "steps_per_epoch": 4}, **sections},
    )


def test_ccp_takes_the_stop_only_at_the_end_of_a_sub_problem(tiny_dict, tiny_data):
    manifest, features = tiny_data
    params = params_from_dict(_no_progress(tiny_dict, ccp={"patience": 3}))
    result = train_fold(run_setup(params, "c2_ccp"), 0, manifest, features, CPU)
    epochs = len(result.fit.history) - 1
    # the first sub-problem's first epoch improves on -inf, then 3 stale epochs end it: 4 epochs, then the stop
    assert [r["epochs"] for r in result.diagnostics] == [4] and epochs == 4
    assert result.fit.stop_reason == "patience"
    assert [h["subproblem"] for h in result.fit.history] == [1] * 5
    loss_proxy = train_fold(run_setup(params, "c2_loss_proxy"), 0, manifest, features, CPU)
    assert len(loss_proxy.fit.history) - 1 == 1  # no sub-problems to finish: the shared rule alone


def test_profs_takes_the_stop_only_at_the_end_of_a_projection(tiny_dict, tiny_data):
    manifest, features = tiny_data
    params = params_from_dict(_no_progress(tiny_dict, profs={"m_mode": "fixed", "m": 10}))
    result = train_fold(run_setup(params, "ms_profs"), 0, manifest, features, CPU)
    epochs = len(result.fit.history) - 1
    assert epochs == 3  # steps 4, 8, 12: the first projection (10 steps) ends in epoch 3
    assert [h.get("projection") for h in result.fit.history] == [1, 1, 1, 2]
    plain = train_fold(run_setup(params, "ms_plain"), 0, manifest, features, CPU)
    assert len(plain.fit.history) - 1 == 1 and plain.fit.stop_reason == "patience"


def test_profs_budget_of_the_protocols(tiny_dict, tiny_data):
    """profs.max_epochs / profs.patience give the whole PROFS family, plain included, its own budget."""
    from pipeline.training.runs import run_train_config

    params = params_from_dict(merge(tiny_dict, {"profs": {"max_epochs": 100, "patience": 100}}))
    for run in ("ms_plain", "ms_profs_hncm"):
        assert (run_train_config(params, run).max_epochs, run_train_config(params, run).patience) == (100, 100)
    assert run_train_config(params, "ms") is params.train


def test_a_job_carries_only_its_runs_sections(tiny_dict, tiny_data):
    """A training job holds the run's setup, not params: a change to a key no training of the run reads (another
    run's section, the report, LANML, the tuning) leaves its setup equal, and the setup trains the same model."""
    import pickle

    from pipeline.training.jobs import FoldJob

    manifest, features = tiny_data
    params = params_from_dict(tiny_dict)
    elsewhere = params_from_dict(
        merge(
            tiny_dict,
            {
                "baselines": {"proxy_anchor": {"loss": {"margin": 0.2}}},
                "ccp": {"lambda": 0.5},
                "report": {"decimals": 3},
                "lanml": {"datasets": ["iris"]},
                "tune": {"trials": 3},
            },
        )
    )
    assert run_setup(elsewhere, "ms") == run_setup(params, "ms")
    assert run_setup(elsewhere, "c2_ccp") != run_setup(params, "c2_ccp")  # its own section changed
    assert run_setup(elsewhere, "c2_ccp").record() != run_setup(params, "c2_ccp").record()
    assert run_setup(elsewhere, "c2_loss_proxy").record() == run_setup(params, "c2_loss_proxy").record()
    job = FoldJob(run_setup(params, "ms"), 0, "data", "features")
    assert len(pickle.dumps(job)) < len(pickle.dumps(to_dict(params))) / 2  # params' values, as a plain tree
    a = train_fold(run_setup(params, "ms"), 0, manifest, features, CPU)
    b = train_fold(run_setup(elsewhere, "ms"), 0, manifest, features, CPU)
    assert np.array_equal(a.test_embeddings, b.test_embeddings)


def test_epoch_cap_is_the_stop_reason(tiny_dict, tiny_data):
    manifest, features = tiny_data
    params = params_from_dict(merge(tiny_dict, {"train": {"max_epochs": 2, "patience": 5}}))
    assert train_fold(run_setup(params, "ms"), 0, manifest, features, CPU).fit.stop_reason == "max_epochs"


def test_folds_train_and_validate_on_disjoint_classes(tiny_params, tiny_data):
    from pipeline.training.experiment import fold_rows

    manifest, _ = tiny_data
    train, val, test = (set(manifest.labels[r]) for r in fold_rows(manifest, 1))
    assert train and val and test
    assert not train & val and not train & test and not val & test


def test_finetune_mode_with_tiny_cnn(tiny_dict, tiny_data):
    from pipeline.infra.runtime import derive_seed, seed_everything

    manifest, _ = tiny_data
    params = params_from_dict(
        merge(
            tiny_dict,
            {
                "backbone": {"name": "tiny_cnn", "input_size": 16},
                "train": {"mode": "finetune", "max_epochs": 2, "min_delta": 0.0},
            },
        )
    )
    seed_everything(derive_seed(params.seed, "proxy_anchor", 0))
    initial = build_backbone(params.backbone).state_dict()  # the same draw train_fold makes
    result = train_fold(run_setup(params, "proxy_anchor"), 0, manifest, None, CPU)
    assert result.test_embeddings.shape == (len(manifest.rows("test")), params.train.embedding_dim)
    assert result.fit.best_epoch >= 1
    trained = result.model.backbone.state_dict()
    assert not torch.allclose(
        trained["trunk.features.0.weight"], initial["trunk.features.0.weight"]
    )  # backbone trained


def test_non_finite_loss_stops_with_the_step(tiny_dict, tiny_data, monkeypatch):
    manifest, features = tiny_data
    params = params_from_dict(tiny_dict)
    import pipeline.training.experiment as experiment

    def exploding(setup, num_classes):
        objective = build_objective(setup, num_classes)
        original = objective.forward
        objective.forward = lambda e, y: original(e, y) * float("nan")
        return objective

    monkeypatch.setattr(experiment, "build_objective", exploding)
    with pytest.raises(TrainingError, match="non-finite loss .* at epoch 1 step 1"):
        train_fold(run_setup(params, "ms"), 0, manifest, features, CPU)


def test_torchvision_backbone_by_name_with_local_weights(tmp_path, tiny_params):
    from torchvision.models import get_model

    weights = tmp_path / "resnet18.pt"
    reference = get_model("resnet18", weights=None)
    torch.save(reference.state_dict(), weights)
    cfg = dataclasses.replace(tiny_params.backbone, name="resnet18", weights=str(weights))
    model = build_backbone(cfg).eval()
    x = torch.randn(2, 3, 32, 32)
    reference.fc = torch.nn.Identity()
    assert torch.allclose(model(x), reference.eval()(x))
    with pytest.raises(BackboneError, match="backbone.name: unknown backbone 'resnet9000'"):
        build_backbone(dataclasses.replace(cfg, name="resnet9000"))
    with pytest.raises(BackboneError, match="backbone.weights: file not found"):
        build_backbone(dataclasses.replace(cfg, weights=str(tmp_path / "missing.pt")))
    torch.save({"conv1.weight": torch.zeros(1)}, tmp_path / "wrong.pt")
    with pytest.raises(BackboneError, match="does not match the model"):
        build_backbone(dataclasses.replace(cfg, weights=str(tmp_path / "wrong.pt")))
