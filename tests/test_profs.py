"""PROFS: M = ceil(rho/p(y)), representative batches, projections every M steps, HNCM."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from pipeline.config import ParamsError
from pipeline.methods.profs import (
    PROFSObjective,
    hard_negative_classes,
    hncm_classes,
    one_step_rho,
    projection_steps,
)
from pipeline.models.embedder import Embedder, build_head
from pipeline.params.root import params_from_dict
from pipeline.runs import run_setup
from pipeline.training.experiment import fold_rows, frozen_data, train_fold
from pipeline.training.loop import TrainContext
from tests.conftest import merge

CPU = torch.device("cpu")


@pytest.mark.parametrize(
    "rho,b,i,l,expected",
    [
        (6, 32, 4, 37, 28),  # p(y) = 32 / 148: 6 / 0.2162 = 27.75
        (6, 32, 2, 100, 38),  # 37.5
        (6, 128, 4, 98, 19),  # 18.375
        (6, 60, 2, 11318, 2264),  # SOP-size: 2263.6
        (6, 32, 4, 8, 6),  # exact: no rounding up
        (1, 32, 4, 2, 1),  # every class in every batch
    ],
)
def test_projection_steps(rho, b, i, l, expected):
    assert projection_steps(rho, b, i, l) == expected


@pytest.mark.parametrize("b,i,l", [(32, 4, 38), (32, 4, 37), (128, 4, 98), (32, 2, 100)])
def test_one_step_rho_is_the_largest_rho_whose_m_is_one(b, i, l):
    """p(y) = B / (I L) (section 5.4.1): 32 / (4 x 38) = 8 / 38; every rho up to it gives M = 1, M's floor."""
    rho = one_step_rho(b, i, l)
    assert rho == pytest.approx(b / (i * l))
    assert projection_steps(rho, b, i, l) == projection_steps(rho / 100, b, i, l) == 1
    assert projection_steps(rho * 1.001, b, i, l) == 2


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
    """The authors' sampler: B images, each class's representative in place of one of its examples; the
    representatives change every M batches, theta^(k) every M steps (Alg. 1)."""
    params, data, model = profs_setup
    objective = make_objective(params, data, model, variant)
    i, b = params.train.images_per_class, params.train.classes_per_batch * params.train.images_per_class
    draws = []
    original = objective._draw_representatives

    def recording():
        original()
        draws.append(objective.steps)

    objective._draw_representatives = recording
    sampler = objective.batch_sampler(data.train_labels, replace(params.train, steps_per_epoch=10), seed=0)
    labels = torch.as_tensor(data.train_labels)
    seen = []
    for _, batch in zip(range(10), sampler):
        batch = np.asarray(batch)
        assert len(batch) == b  # the batch keeps its size
        blocks = batch.reshape(-1, i)
        classes = data.train_labels[blocks[:, 0]]
        assert (data.train_labels[blocks] == classes[:, None]).all()  # class after class
        assert (blocks[:, 0] == objective.reps[classes]).all()  # each class's representative first
        seen.append(objective.reps.copy())
        x, y = data.train.tensors[0][batch], labels[batch]
        objective.batch_loss(model, x, y).backward()
    assert draws == [3, 6, 9]  # a new set of representatives before batches 3, 6, 9 (M = 3)
    assert objective.projection_starts == [0, 3, 6, 9]
    assert all(np.array_equal(seen[s], seen[s - 1]) for s in range(1, 10) if s % 3)
    for r, c in zip(objective.reps, range(len(objective.reps))):
        assert data.train_labels[r] == c  # one representative per class, of that class


def test_representatives_are_the_anchors_against_the_examples(profs_setup):
    """Pairs are representative x example only (section 5.3): the loss equals the loss with the
    representatives as anchors and the other images as references."""
    params, data, model = profs_setup
    objective = make_objective(params, data, model, "profs")
    objective.cfg.lambda_ = 0.0
    batch = np.asarray(next(iter(objective.batch_sampler(data.train_labels, params.train, seed=1))))
    x, y = data.train.tensors[0][batch], torch.as_tensor(data.train_labels[batch])
    emb = model(x)
    reps = torch.arange(len(y)) % params.train.images_per_class == 0
    expected = objective(emb[reps], y[reps], ref_emb=emb[~reps], ref_labels=y[~reps])  # MS mines these pairs
    assert type(objective.miner).__name__ == "MultiSimilarityMiner"
    assert torch.equal(objective.batch_loss(model, x, y), expected)


def test_hncm_class_choice_hand_built():
    seeds = np.array([0, 2, 3, 1])
    nearest = np.array([[2, 1, 3], [0, 1, 3], [1, 2, 0]])
    # seed 0 brings 2; seed 2 is taken; seed 3 brings 1
    assert hncm_classes(seeds, nearest, hard=1, n=4).tolist() == [0, 2, 3, 1]
    assert hncm_classes(seeds, nearest, hard=2, n=3).tolist() == [0, 2, 1]
    assert hncm_classes(seeds, nearest, hard=1, n=3).tolist() == [0, 2, 3]  # full after seed 3


def test_hncm_batches_pair_each_seed_with_its_nearest_class(profs_setup):
    params, data, model = profs_setup
    objective = make_objective(params, data, model, "profs_hncm")
    num_classes = len(objective.memory)
    position = torch.randperm(num_classes).float() * 10  # classes on a line, 10 apart
    objective.memory = torch.zeros(num_classes, 8)
    objective.memory[:, 0] = position
    sampler = objective.batch_sampler(data.train_labels, params.train, seed=0)
    batch_size = params.train.classes_per_batch * params.train.images_per_class
    for batch in sampler:
        assert len(batch) == batch_size  # hard classes replace random ones: the batch size is kept
        classes = list(dict.fromkeys(data.train_labels[batch].tolist()))  # in batch order: seed, hard, seed, ...
        assert len(classes) == params.train.classes_per_batch
        for seed, hard in zip(classes[::2], classes[1::2]):
            gaps = (position - position[seed]).abs()
            gaps[classes[: classes.index(seed)] + [seed]] = float("inf")  # taken before, or itself
            assert gaps[hard] == gaps.min()


def test_softtriple_hncm_uses_the_nearest_centres(profs_setup):
    params, data, model = profs_setup
    objective = PROFSObjective(params.profs, "softtriple", "profs_hncm", 3, 2, 8, 4)
    k = params.profs.softtriple.centers_per_class
    assert k == 2
    centres = torch.tensor(
        [
            [1.0, 0.0],
            [0.0, 1.0],  # class 0
            [-1.0, 0.0],
            [0.6, 0.8],  # class 1: its 2nd centre is near class 0's 2nd
            [0.0, -1.0],
            [-0.6, -0.8],
        ]
    )  # class 2
    objective.loss.fc.data = centres.T.clone()
    assert objective.class_memory().shape == (3, 2, 2)
    assert hard_negative_classes(objective.class_memory(), torch.tensor([0, 2]), 1).tolist() == [[1], [1]]


def test_one_negative_per_positive_hand_built():
    from pytorch_metric_learning.distances import LpDistance

    from pipeline.miners.modules.tuple_miners import OneNegativePerPositiveMiner

    miner = OneNegativePerPositiveMiner(distance=LpDistance(normalize_embeddings=False))
    anchors, anchor_labels = torch.tensor([[0.0], [10.0]]), torch.tensor([0, 1])
    refs = torch.tensor([[1.0], [2.0], [9.0], [3.0], [11.0], [30.0]])
    ref_labels = torch.tensor([0, 0, 1, 1, 2, 2])
    a, p, n = miner(anchors, anchor_labels, refs, ref_labels)
    # anchor 0 (at 0): positives 0, 1; nearest negatives 3 (d 3), 2 (d 9)
    # anchor 1 (at 10): positives 2, 3; nearest negatives 4 (d 1), 1 (d 8)
    assert list(zip(a.tolist(), p.tolist(), n.tolist())) == [(0, 0, 3), (0, 1, 2), (1, 2, 4), (1, 3, 1)]
    a, p, n = miner(refs, ref_labels)  # in-batch: no self pairs, one negative per positive
    assert (a != p).all() and len(a) == 6
    assert (ref_labels[a] == ref_labels[p]).all() and (ref_labels[a] != ref_labels[n]).all()
    assert list(zip(a.tolist(), n.tolist()))[:2] == [(0, 3), (1, 3)]


def test_plain_variant_is_the_ordinary_loss(profs_setup):
    params, data, model = profs_setup
    objective = make_objective(params, data, model, "plain")
    x, y = data.train.tensors[0][:8], torch.as_tensor(data.train_labels[:8])
    emb = model(x)
    mined = objective.loss(emb, y, objective.miner(emb, y))  # the ordinary MS loss with its own mining
    assert torch.equal(objective.batch_loss(model, x, y), mined)


@pytest.mark.parametrize("reducer,expected", [("mean", "MeanReducer"), ("library", "AvgNonZeroReducer")])
def test_profs_losses_are_the_papers(tiny_dict, reducer, expected):
    """Triplet on squared Euclidean distances (eq. 3.3) with FaceNet's margin, eq. 3.1's mean over the tuples
    (profs.reducer), MS with its own mining."""
    from pytorch_metric_learning import miners

    params = params_from_dict(merge(tiny_dict, {"profs": {"reducer": reducer}}))
    triplet = PROFSObjective(params.profs, "triplet", "plain", 4, 8, 8, 4)
    assert (triplet.loss.distance.power, triplet.loss.margin) == (2, 0.2)
    assert type(triplet.loss.reducer).__name__ == expected
    contrastive = PROFSObjective(params.profs, "contrastive", "plain", 4, 8, 8, 4)
    assert {type(r).__name__ for r in contrastive.loss.reducer.reducers.values()} == {expected}
    a, p, n = torch.tensor([[0.0, 0.0]]), torch.tensor([[0.3, 0.4]]), torch.tensor([[0.6, 0.0]])
    emb, labels = torch.cat([a, p, n]), torch.tensor([0, 0, 1])
    # the one triplet (0, 1, 2): [0.25 - 0.36 + 0.2]_+ = 0.09 on squared distances
    got = triplet.loss(emb, labels, (torch.tensor([0]), torch.tensor([1]), torch.tensor([2])))
    assert float(got) == pytest.approx(0.09)
    ms = PROFSObjective(params.profs, "ms", "plain", 4, 8, 8, 4)
    assert isinstance(ms.miner, miners.MultiSimilarityMiner) and ms.miner.epsilon == 0.1


@pytest.mark.parametrize(
    "override,message",
    [
        ({"rho": 0.0}, "params.yaml: profs.rho: must be > 0.0, got 0.0"),
        ({"m": 0}, "params.yaml: profs.m: must be >= 1, got 0"),
        ({"lambda": -1e-3}, "params.yaml: profs.lambda: must be >= 0.0, got -0.001"),
        ({"losses": ["softmax"]}, "params.yaml: profs.losses: 'softmax' is not one of"),
        ({"hard_classes": 99}, "params.yaml: profs.hard_classes: must be < train.classes_per_batch"),
        ({"pair_sampling": "hardest"}, "params.yaml: profs.pair_sampling: 'hardest' is not one of"),
    ],
)
def test_bad_profs_params(tiny_dict, override, message):
    with pytest.raises(ParamsError) as err:
        params_from_dict(merge(tiny_dict, {"profs": override}))
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("loss", ["contrastive", "triplet", "margin", "ms", "lifted", "angular", "npair", "softtriple"])
def test_every_profs_loss_trains(tiny_dict, tiny_data, loss):
    manifest, features = tiny_data
    params = params_from_dict(merge(tiny_dict, {"train": {"max_epochs": 2}, "profs": {"losses": [loss]}}))
    result = train_fold(run_setup(params, f"{loss}_profs_hncm"), 0, manifest, features, CPU)
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
    swapped = RepresentativeNPairLoss()(reps.flip(0), torch.tensor([1, 0]), ref_emb=examples, ref_labels=labels)
    assert float(swapped) == pytest.approx(float(expected))  # the batch's class order does not matter


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
        ((p - q) ** 2).sum() for p, q in zip(model.parameters(), objective.theta_k)
    )
    assert float(objective.batch_loss(model, x, y).detach()) == pytest.approx(float(expected.detach()), rel=1e-5)
    objective.batch_loss(model, x, y)
    assert objective.projection_starts == [0, 1]  # a new theta^(k) every step
