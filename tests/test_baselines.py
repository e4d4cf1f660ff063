"""The baseline zoo: hand-written losses and miners against hand-computed values, every run trains."""

import math

import numpy as np
import pytest
import torch
from pytorch_metric_learning.miners import DistanceWeightedMiner
from scipy.stats import entropy

from pipeline.evaluation.spectrum import singular_value_spectrum, spectral_decay
from pipeline.losses.modules.quadruplet import QuadrupletLoss
from pipeline.methods.baselines import BaselineObjective
from pipeline.miners.modules.tuple_miners import RhoSwitchMiner, TripletPerAnchorMiner
from pipeline.params.root import params_from_dict
from pipeline.runs import run_setup
from tests.conftest import merge, project_params

# four points on a line (1-D embeddings): classes 0, 0, 1, 2
LINE = torch.tensor([[0.0], [1.0], [3.0], [7.0]])
LINE_LABELS = torch.tensor([0, 0, 1, 2])


def test_quadruplet_hand_computed():
    loss = QuadrupletLoss(margin1=1.0, margin2=0.5)
    a, p, n = torch.tensor([0]), torch.tensor([1]), torch.tensor([2])
    # triplet term: [d(0,1) - d(0,2) + 1]_+ = [1 - 3 + 1]_+ = 0
    # other negatives l of neither class 0 nor 1: only sample 3: [d(0,1) - d(2,3) + 0.5]_+ = [1 - 4 + 0.5]_+ = 0
    assert float(loss(LINE, LINE_LABELS, (a, p, n))) == 0.0
    loss = QuadrupletLoss(margin1=3.0, margin2=4.0)
    # [1 - 3 + 3] + [1 - 4 + 4] = 1 + 1
    assert float(loss(LINE, LINE_LABELS, (a, p, n))) == pytest.approx(2.0)


def test_quadruplet_all_triplets_by_default():
    loss = QuadrupletLoss(margin1=10.0, margin2=0.0)
    # triplets (a, p, n): (0,1,2), (0,1,3), (1,0,2), (1,0,3); d(a,p) = 1; d(a,n): 3, 7, 2, 6
    first = np.mean([1 - 3 + 10, 1 - 7 + 10, 1 - 2 + 10, 1 - 6 + 10])
    # second term: l of neither class: for n = 2 (class 1) l = 3 (d 4), for n = 3 (class 2) l = 2 (d 4): [1 - 4]_+ = 0
    assert float(loss(LINE, LINE_LABELS)) == pytest.approx(first)


def mined(rule, emb=LINE, labels=LINE_LABELS, draws=200):
    from pytorch_metric_learning.distances import LpDistance

    miner = TripletPerAnchorMiner(rule, distance=LpDistance(normalize_embeddings=False))
    torch.manual_seed(0)
    return [tuple(zip(*(t.tolist() for t in miner(emb, labels)))) for _ in range(draws)]


def test_random_miner_one_triplet_per_anchor_with_a_positive():
    for triplets in mined("random"):
        assert [t[0] for t in triplets] == [0, 1]  # samples 2 and 3 have no positive
        for a, p, n in triplets:
            assert LINE_LABELS[p] == LINE_LABELS[a] != LINE_LABELS[n] and p != a
    negatives = {t[2] for draw in mined("random") for t in draw}
    assert negatives == {2, 3}


def test_semihard_picks_only_negatives_farther_than_the_positive():
    emb = torch.tensor([[0.0], [2.0], [1.0], [3.0], [-5.0]])
    labels = torch.tensor([0, 0, 1, 1, 2])
    seen = set()
    for triplets in mined("semihard", emb, labels):
        for a, p, n in triplets:
            assert abs(emb[a] - emb[n]) > abs(emb[a] - emb[p])  # eq. 20
            seen.add((a, p, n))
    # anchor 0: positive 1 at 2 -> negatives 3 (d 3) and 4 (d 5), not 2 (d 1)
    assert {(0, 1, 3), (0, 1, 4)} <= seen and (0, 1, 2) not in seen


def test_softhard_picks_hard_positives_and_negatives():
    emb = torch.tensor([[0.0], [1.0], [4.0], [2.0], [9.0]])
    labels = torch.tensor([0, 0, 0, 1, 2])
    seen = {t for draw in mined("softhard", emb, labels) for t in draw if t[0] == 0}
    # anchor 0: nearest negative at 2 -> hard positives farther than 2: sample 2 (at 4) only;
    # farthest positive at 4 -> hard negatives nearer than 4: sample 3 (at 2) only
    assert seen == {(0, 2, 3)}


def test_rho_switch_replaces_the_negative_by_the_positive():
    inner = TripletPerAnchorMiner("random")
    a, p, n = RhoSwitchMiner(inner, 1.0)(LINE, LINE_LABELS)
    assert torch.equal(a, p) and (LINE_LABELS[n] == LINE_LABELS[a]).all() and (n != a).all()
    torch.manual_seed(1)
    a, p, n = RhoSwitchMiner(inner, 0.0)(LINE, LINE_LABELS)
    assert (p != a).all() and (LINE_LABELS[n] != LINE_LABELS[a]).all()


def test_distance_weighted_sampling_follows_the_inverse_density():
    """Negatives are drawn with probability prop. to 1/q(d), q(d) = d^(D-2) (1 - d^2/4)^((D-3)/2) (eq. 23),
    distances clipped at 0.5, none at or beyond 1.4 (eq. 24)."""
    dim = 3
    angles = torch.tensor([0.0, 0.3, 0.9, 1.3, 1.7, 2.8])  # on a great circle of the 2-sphere
    emb = torch.stack([torch.cos(angles), torch.sin(angles), torch.zeros(6)], dim=1)
    labels = torch.tensor([0, 0, 1, 2, 3, 4])
    d = (emb[0] - emb).norm(dim=1).clamp(min=0.5)
    weight = 1 / (d ** (dim - 2) * (1 - d**2 / 4) ** ((dim - 3) / 2))
    weight[d >= 1.4] = 0
    weight[:2] = 0  # same class
    expected = (weight / weight.sum()).numpy()
    torch.manual_seed(0)
    miner, counts = DistanceWeightedMiner(cutoff=0.5, nonzero_loss_cutoff=1.4), np.zeros(6)
    for _ in range(3000):
        a, p, n = miner(emb, labels)
        counts += np.bincount(n[a == 0].numpy(), minlength=6)
    assert counts / counts.sum() == pytest.approx(expected, abs=0.02)
    assert expected[4] == expected[5] == 0  # beyond the cutoff


@pytest.mark.parametrize("k", [2, 4, 8])
def test_spc_k_batches(k, tiny_dict):
    params = params_from_dict(merge(tiny_dict, {"train": {"classes_per_batch": 4, "images_per_class": 4}}))
    run = params.baselines["margin_d"]
    run.sampler.images_per_class = k
    labels = np.repeat(np.arange(10), 10)
    sampler = BaselineObjective(run, 10, params.train).batch_sampler(labels, params.train, seed=0)
    if k == 4:
        assert sampler is None  # the loop's default MPerClassSampler already is SPC-4 here
        return
    for batch in sampler:
        classes, counts = np.unique(labels[batch], return_counts=True)
        assert len(batch) == 16 and len(classes) == 16 // k and (counts == k).all()


def test_random_class_batches(tiny_params):
    run = tiny_params.baselines["margin_d_random_class"]
    labels = np.repeat(np.arange(5), 10)
    sampler = BaselineObjective(run, 5, tiny_params.train).batch_sampler(labels, tiny_params.train, seed=0)
    sizes = set()
    for batch in sampler:
        assert len(batch) == 8
        sizes |= set(np.unique(labels[batch], return_counts=True)[1].tolist())
    assert len(sizes) > 1  # a random number of images per class


def test_spectral_decay_against_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 6)) * np.array([5, 3, 1, 1, 0.5, 0.1])
    s = singular_value_spectrum(x)
    assert s.sum() == pytest.approx(1.0) and (np.diff(s) <= 0).all()
    assert spectral_decay(x) == pytest.approx(entropy(np.full(6, 1 / 6), s))  # KL(U || S)
    assert spectral_decay(np.eye(4)) == pytest.approx(0.0, abs=1e-12)  # flat spectrum
    assert spectral_decay(np.diag([1.0, 1e-6])) > spectral_decay(np.diag([1.0, 0.5]))
    assert math.isinf(spectral_decay(np.array([[1.0, 0.0], [2.0, 0.0]])))


@pytest.mark.parametrize("name", sorted(project_params()["baselines"]))
def test_every_baseline_trains_a_few_steps(name, tiny_dict, tiny_data):
    from pipeline.training.experiment import train_fold

    manifest, features = tiny_data
    per_class = 8 if name == "margin_d_spc8" else 4  # the tiny fold has 4 training classes
    params = params_from_dict(
        merge(tiny_dict, {"train": {"max_epochs": 1, "classes_per_batch": 2, "images_per_class": per_class}})
    )
    result = train_fold(run_setup(params, name), 0, manifest, features, torch.device("cpu"))
    assert np.isfinite(result.fit.history[-1]["train_loss"]), name
    assert np.isfinite(result.test_embeddings).all()
