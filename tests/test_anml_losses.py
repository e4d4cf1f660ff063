"""ANML deep losses: DANML (eq. 22), Lemma 1's limits, Proposition 7, and the Table 3 pairs."""

import math

import numpy as np
import pytest
import torch
from pytorch_metric_learning import distances, losses, reducers

from pipeline.config import ParamsError
from pipeline.losses.modules.anml import DANMLLoss, ImprovedLiftedLoss, ImprovedNPairLoss, log_sum_exp_radius
from pipeline.params.root import params_from_dict
from pipeline.runs import run_setup
from tests.conftest import merge

X = torch.nn.functional.normalize(
    torch.tensor(
        [[1.0, 0.2, 0.0], [0.9, 0.1, 0.3], [0.0, 1.0, 0.1], [0.2, 0.8, -0.4], [-0.5, 0.1, 1.0], [-0.3, -0.2, 0.9]]
    ),
    dim=1,
)
Y = torch.tensor([0, 0, 1, 1, 2, 2])


def danml_numpy(x, y, g1, g2, l1, l2, outer=lambda v: math.log1p(math.exp(v))):
    """ANML eq. 22 evaluated term by term, d = 1 - cos."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y)
    d = 1.0 - x @ x.T
    total = 0.0
    for i in range(len(y)):
        sim = [d[i, j] for j in range(len(y)) if j != i and y[j] == y[i]]
        dis = [d[i, j] for j in range(len(y)) if y[j] != y[i]]
        first = -1 / g1 * math.log((math.exp(-g1 * l1) + sum(math.exp(-g1 * v) for v in sim)) / (len(sim) + 1))
        second = 1 / g2 * math.log((math.exp(-g2 * l2) + sum(math.exp(-g2 * v) for v in dis)) / (len(dis) + 1))
        total += outer(first + second)
    return total / len(y)


@pytest.mark.parametrize("g1,g2,l1,l2", [(-2.0, 30.0, 0.55, 0.57), (-1.0, 25.0, 0.5, 0.53), (-3.0, 35.0, 0.65, 0.66)])
def test_danml_equals_eq_22(g1, g2, l1, l2):
    got = float(DANMLLoss(g1, g2, l1, l2)(X, Y))
    assert got == pytest.approx(danml_numpy(X, Y, g1, g2, l1, l2), rel=1e-5)


def test_log_exp_mean_limits_of_lemma_1():
    a = torch.tensor([[0.3, -1.2, 2.5, 0.7]])
    mask = torch.ones_like(a, dtype=torch.bool)

    def b(gamma):  # ANML eq. 12: -(1/gamma) log( (1/n) sum e^{-gamma a} )
        return float(log_sum_exp_radius(a, mask, -gamma, None, mean=True))

    assert b(200.0) == pytest.approx(-1.2, abs=0.01)  # soft minimum
    assert b(-200.0) == pytest.approx(2.5, abs=0.01)  # soft maximum
    assert b(1e-4) == pytest.approx(float(a.mean()), abs=1e-3)  # mean
    assert b(5.0) < b(1.0) < b(-1.0) < b(-5.0)  # monotone in gamma
    # the radius term lam takes part like one more number
    lam = float(log_sum_exp_radius(a, mask, -200.0, -3.0, mean=True))  # b(200) over {a, -3}
    assert lam == pytest.approx(-3.0, abs=0.01)


def test_danml_tends_to_hard_max_minus_min():
    d = 1.0 - X @ X.T
    loss = DANMLLoss(-500.0, 500.0, 0.0, 2.0, outer="linear")
    pos = (Y[:, None] == Y[None]) & ~torch.eye(6, dtype=torch.bool)
    gap = loss.radius_gap(d, pos, Y[:, None] != Y[None])
    hard = torch.stack([d[i][pos[i]].max() - d[i][Y != Y[i]].min() for i in range(6)])
    assert torch.allclose(gap, hard, atol=0.02)


def test_multi_similarity_is_proposition_7():
    alpha, beta, m = 2.0, 40.0, 0.5
    # DANML with loss(x) = x, gamma1 = -alpha, gamma2 = beta and radii at similarity m (cosine distance 1 - m)
    danml = float(DANMLLoss(-alpha, beta, 1 - m, 1 - m, outer="linear")(X, Y))
    ms = float(losses.MultiSimilarityLoss(alpha=alpha, beta=beta, base=m)(X, Y))
    # equal up to the constants of the mean normalisation: log(|P_i|+1)/alpha + log(|N_i|+1)/beta
    constant = math.log(2) / alpha + math.log(5) / beta  # every anchor here has 1 positive, 4 negatives
    assert danml == pytest.approx(ms - constant, rel=1e-5)


def test_improved_lifted_reduces_to_lifted():
    lifted = losses.GeneralizedLiftedStructureLoss(
        neg_margin=-0.5, pos_margin=0.0, distance=distances.CosineSimilarity(), reducer=reducers.MeanReducer()
    )
    assert float(ImprovedLiftedLoss(1.0, 1.0, None, None, 0.5)(X, Y)) == pytest.approx(float(lifted(X, Y)), rel=1e-5)


def test_improved_lifted_hand_computed():
    # one anchor per class with one positive; eq. 25 per anchor, then the mean
    g1, g2, l1, l2, m = 3.0, 4.0, 0.8, 0.3, 0.1
    s = (X @ X.T).double()
    total = 0.0
    for i in range(6):
        pos = [s[i, j] for j in range(6) if j != i and Y[j] == Y[i]]
        neg = [s[i, k] for k in range(6) if Y[k] != Y[i]]
        t = (
            1 / g1 * math.log(math.exp(-g1 * l1) + sum(math.exp(-g1 * v) for v in pos))
            + 1 / g2 * math.log(math.exp(g2 * l2) + sum(math.exp(g2 * v) for v in neg))
            + m
        )
        total += max(0.0, t)
    assert float(ImprovedLiftedLoss(g1, g2, l1, l2, m)(X, Y)) == pytest.approx(total / 6, rel=1e-5)


def test_improved_npair():
    assert float(ImprovedNPairLoss(1.0, 0.0)(X, Y)) == pytest.approx(float(losses.NPairsLoss()(X, Y)), rel=1e-5)
    gamma, lam = 2.0, 0.1
    a, p = X[[0, 2, 4]], X[[1, 3, 5]]
    f = (a @ p.T).double()
    expected = np.mean(
        [
            math.log1p(sum(math.exp(gamma * (-lam + f[i, j] - f[i, i])) for j in range(3) if j != i)) / gamma
            for i in range(3)
        ]
    )
    assert float(ImprovedNPairLoss(gamma, lam)(X, Y)) == pytest.approx(expected, rel=1e-5)


LENGTHS = torch.tensor([[0.5], [2.0], [1.5], [0.7], [3.0], [1.2]])  # non-unit embeddings: the norms matter


def sohn_npair(z: torch.Tensor, nu: float) -> float:
    """Sohn 2016 eq. 3 / Revisiting eq. 4 term by term on the pairs (0, 1), (2, 3), (4, 5):
    mean_i log(1 + sum_{j != i} exp(f_i.f_j+ - f_i.f_i+)) + nu mean_k ||z_k||^2, no normalisation."""
    z = z.double()
    f = z[[0, 2, 4]] @ z[[1, 3, 5]].T
    terms = [math.log1p(sum(math.exp(f[i, j] - f[i, i]) for j in range(3) if j != i)) for i in range(3)]
    return float(np.mean(terms) + nu * (z**2).sum(dim=1).mean())


@pytest.mark.parametrize("nu", [0.0, 0.005])
def test_npair_is_sohns_on_unnormalised_embeddings(nu):
    from pipeline.losses import build_loss
    from pipeline.losses.revisiting import NPairLossParams

    z = X * LENGTHS
    loss = build_loss(NPairLossParams(embedding_reg=nu))
    assert float(loss(z, Y)) == pytest.approx(sohn_npair(z, nu), rel=1e-5)
    # the library's default (DotProductSimilarity normalises) gives another number on the same batch
    normalised = float(losses.NPairsLoss()(z, Y)) + nu * float((z**2).sum(dim=1).mean())
    assert abs(float(loss(z, Y)) - normalised) > 0.1
    assert float(ImprovedNPairLoss(1.0, 0.0)(z, Y)) == pytest.approx(sohn_npair(z, 0.0), rel=1e-5)


def test_profs_plain_npair_is_sohns():
    from pipeline.methods.profs import RepresentativeNPairLoss

    z = X * LENGTHS
    assert float(RepresentativeNPairLoss()(z, Y)) == pytest.approx(sohn_npair(z, 0.0), rel=1e-5)


@pytest.mark.parametrize(
    "override,message",
    [
        ({"gamma1": 0.0}, "params.yaml: baselines.danml.loss.gamma1: must be < 0.0, got 0.0"),
        ({"gamma1": 1.0}, "params.yaml: baselines.danml.loss.gamma1: must be < 0.0"),
        ({"gamma2": -3.0}, "params.yaml: baselines.danml.loss.gamma2: must be > 0.0, got -3.0"),
    ],
)
def test_bad_danml_params(tiny_dict, override, message):
    with pytest.raises(ParamsError) as err:
        params_from_dict(merge(tiny_dict, {"baselines": {"danml": {"loss": override}}}))
    assert str(err.value).startswith(message)


def test_every_anml_method_trains_a_few_steps(tiny_dict, tiny_data):
    from pipeline.training.experiment import train_fold

    manifest, features = tiny_data
    params = params_from_dict(merge(tiny_dict, {"train": {"max_epochs": 1}}))
    for name in ("danml", "lifted", "anml_lifted", "npair", "anml_npair"):
        result = train_fold(run_setup(params, name), 0, manifest, features, torch.device("cpu"))
        assert np.isfinite(result.fit.history[-1]["train_loss"]), name
