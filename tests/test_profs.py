"""PROFS: M = ceil(rho/p(y)), representative batches, projections every M steps, HNCM."""

import numpy as np
import pytest
import torch

from pipeline.config import ParamsError, params_from_dict
from pipeline.experiment import fold_rows, frozen_data, train_fold
from pipeline.methods.profs import PROFSObjective, hard_negative_classes, projection_steps
from pipeline.models.embedder import Embedder, build_head
from pipeline.training import TrainContext
from tests.conftest import merge

CPU = torch.device("cpu")


@pytest.mark.parametrize("rho,b,i,l,expected", [
    (6, 32, 4, 37, 28),      # p(y) = 32 / 148: 6 / 0.2162 = 27.75
    (6, 32, 2, 100, 38),     # 37.5
    (6, 128, 4, 98, 19),     # 18.375
    (6, 60, 2, 11318, 2264),  # SOP-size: 2263.6
    (6, 32, 4, 8, 6),        # exact: no rounding up
    (1, 32, 4, 2, 1),        # every class in every batch
])
def test_projection_steps(rho, b, i, l, expected):
    assert projection_steps(rho, b, i, l) == expected


def test_hncm_picks_nearest_stored_classes():
    memory = torch.tensor([[0.0, 0.0], [1.0, 0.0], [5.0, 0.0], [1.2, 0.0]])
    assert hard_negative_classes(memory, torch.tensor([0, 2]), 1).tolist() == [[1], [3]]
    assert hard_negative_classes(memory, torch.tensor([1]), 2).tolist() == [[3, 0]]  # never itself


@pytest.fixture
def profs_setup(tiny_dict, tiny_data):
    params = params_from_dict(merge(tiny_dict, {"profs": {"m_mode": "fixed", "m": 3}}))
    manifest, features = tiny_data
    data = frozen_data(features, fold_rows(manifest, 0))
    model = Embedder(None, build_head(features.features.shape[1], 8, 0), "l2")
    return params, data, model


def make_objective(params, data, model, variant):
    num_classes = len(np.unique(data.train_labels))
    objective = PROFSObjective(params.profs, "ms", variant, num_classes, 8, 8, 4)
    ctx = TrainContext(model, torch.optim.SGD(model.parameters(), lr=0.1), data, params.train, CPU)
    objective.begin(ctx)
    return objective


@pytest.mark.parametrize("variant", ["profs", "profs_hncm"])
def test_batches_hold_the_representatives_which_change_every_m_steps(profs_setup, variant):
    params, data, model = profs_setup
    objective = make_objective(params, data, model, variant)
    seen_reps, fed = [], []
    original = objective._inputs

    def recording(classes):
        fed.append([int(objective.reps[int(c)]) for c in classes])
        return original(classes)

    objective._inputs = recording
    labels = torch.as_tensor(data.train_labels)
    for step in range(10):
        batch = torch.cat([torch.nonzero(labels == c).flatten()[:4] for c in (0, 1)])  # classes 0 and 1
        x, y = data.train.tensors[0][batch], labels[batch]
        objective.batch_loss(model, x, y).backward()
        seen_reps.append(objective.reps.copy())
        reps_fed = set(fed[-1])
        assert {int(objective.reps[0]), int(objective.reps[1])} <= reps_fed  # the batch's own classes
        assert reps_fed <= set(objective.reps.tolist())  # only this projection's representatives
    assert objective.projection_starts == [0, 3, 6, 9]
    assert all(np.array_equal(seen_reps[s], seen_reps[s - 1]) for s in range(1, 10) if s % 3)
    for r, c in zip(objective.reps, range(len(objective.reps))):
        assert data.train_labels[r] == c  # one representative per class, of that class


def test_hncm_adds_the_nearest_classes(profs_setup):
    params, data, model = profs_setup
    objective = make_objective(params, data, model, "profs_hncm")
    objective.memory = torch.zeros_like(objective.memory)
    objective.memory[:, 0] = torch.arange(len(objective.memory), dtype=torch.float32) * 10
    objective.memory[2, 0] = 1.0  # class 2 sits next to class 0
    # stored embeddings on a line: class 0 at 0, class 2 at 1, class 1 at 10, class 3 at 30
    assert objective.representative_classes(torch.tensor([0, 0, 0, 0])).tolist() == [0, 2]
    assert objective.representative_classes(torch.tensor([3, 3])).tolist() == [1, 3]


def test_plain_variant_is_the_ordinary_loss(profs_setup):
    params, data, model = profs_setup
    objective = make_objective(params, data, model, "plain")
    x, y = data.train.tensors[0][:8], torch.as_tensor(data.train_labels[:8])
    assert torch.equal(objective.batch_loss(model, x, y), objective.loss(model(x), y))


@pytest.mark.parametrize("override,message", [
    ({"rho": 0.0}, "params.yaml: profs.rho: must be > 0.0, got 0.0"),
    ({"m": 0}, "params.yaml: profs.m: must be >= 1, got 0"),
    ({"lambda": -1e-3}, "params.yaml: profs.lambda: must be >= 0.0, got -0.001"),
    ({"losses": ["softmax"]}, "params.yaml: profs.losses: 'softmax' is not one of"),
])
def test_bad_profs_params(tiny_dict, override, message):
    with pytest.raises(ParamsError) as err:
        params_from_dict(merge(tiny_dict, {"profs": override}))
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("loss", ["contrastive", "triplet", "margin", "ms", "lifted", "angular", "npair", "softtriple"])
def test_every_profs_loss_trains(tiny_dict, tiny_data, loss):
    manifest, features = tiny_data
    params = params_from_dict(merge(tiny_dict, {"train": {"max_epochs": 2}, "profs": {"losses": [loss]}}))
    result = train_fold(params, f"{loss}_profs_hncm", 0, manifest, features, CPU)
    assert np.isfinite(result.test_embeddings).all()
    assert all(np.isfinite(h["train_loss"]) for h in result.fit.history[1:])


def test_npair_with_representatives_hand_computed():
    from pipeline.methods.profs import RepresentativeNPairLoss

    reps = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    examples = torch.tensor([[0.8, 0.6], [0.6, 0.8], [1.0, 0.0]])
    labels = torch.tensor([0, 1, 5])  # class 5 has no representative in R': left out
    logits = examples[:2] @ reps.T
    expected = (-torch.log_softmax(logits, dim=1)[[0, 1], [0, 1]]).mean()
    got = RepresentativeNPairLoss()(reps, torch.tensor([0, 1]), ref_emb=examples, ref_labels=labels)
    assert float(got) == pytest.approx(float(expected))


def test_softtriple_profs_is_the_loss_plus_the_step_regulariser(profs_setup):
    params, data, model = profs_setup
    num_classes = len(np.unique(data.train_labels))
    objective = PROFSObjective(params.profs, "softtriple", "profs", num_classes, 8, 8, 4)
    ctx = TrainContext(model, torch.optim.SGD(model.parameters(), lr=0.1), data, params.train, CPU)
    objective.begin(ctx)
    assert objective.m == 1
    x, y = data.train.tensors[0][:8], torch.as_tensor(data.train_labels[:8])
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5)  # move away from theta^(k)
    expected = objective.loss(model(x), y) + 0.5 * params.profs.lambda_ * sum(
        ((p - q) ** 2).sum() for p, q in zip(model.parameters(), objective.theta_k))
    assert float(objective.batch_loss(model, x, y).detach()) == pytest.approx(float(expected.detach()), rel=1e-5)
    objective.batch_loss(model, x, y)
    assert objective.projection_starts == [0, 1]  # a new theta^(k) every step
