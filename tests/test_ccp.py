"""CCP: K-center, the projection regulariser, Lipschitz normalisation, the losses against proxies,
and the outer loop on the tiny data set."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pytorch_metric_learning import distances, losses, reducers
from pytorch_metric_learning.utils import loss_and_miner_utils as lmu

from pipeline.config import ParamsError
from pipeline.families.ccp import CCPConfig
from pipeline.losses import LossContext, build_loss
from pipeline.losses.modules.pair_losses import all_triplet_indices
from pipeline.methods.ccp import CCPObjective
from pipeline.methods.kcenter import covering_radius, greedy_k_center
from pipeline.methods.objective import projection_penalty
from pipeline.models.embedder import normalize_embeddings
from pipeline.params.root import params_from_dict
from pipeline.runs import run_setup
from pipeline.training.experiment import train_fold
from tests.conftest import merge

CPU = torch.device("cpu")


# ------------------------------------------------------------------ K-center (Algorithm 2)


def brute_force_k_center(pool, centres, k):
    picked = []
    for _ in range(k):
        best, best_score = None, -1.0
        for i in range(len(pool)):
            if i in picked:
                continue
            others = [centres[j] for j in range(len(centres))] + [pool[j] for j in picked]
            score = min((math.dist(pool[i], o) for o in others), default=math.inf)
            if score > best_score:
                best, best_score = i, score
        picked.append(best)
    return picked


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 12), st.integers(0, 4), st.integers(1, 3))
def test_k_center_matches_brute_force(seed, pool_size, num_centres, classes):
    """Batched over classes, each class's picks are the one-class brute force's."""
    rng = np.random.default_rng(seed)
    pools = rng.normal(size=(classes, pool_size, 3))
    centres = rng.normal(size=(classes, num_centres, 3))
    k = int(rng.integers(1, pool_size + 1))
    got = greedy_k_center(torch.tensor(pools), torch.tensor(centres), k)
    for c in range(classes):
        assert got[c].tolist() == brute_force_k_center(pools[c].tolist(), centres[c].tolist(), k)


def test_k_center_hand_built():
    pool = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [5.0, 0.0], [2.0, 0.0]]])
    old = torch.tensor([[[0.1, 0.0]]])
    # farthest from the old proxy: 5; then farthest from {0.1, 5}: 2 (distance 1.9 vs 0.9 for 1)
    assert greedy_k_center(pool, old, 2).tolist() == [[2, 3]]


def test_pool_of_proxy_size_is_random_selection():
    """b = #proxy: every pool row is taken, whatever the geometry: the pool's random draw decides."""
    pool = torch.randn(2, 5, 4)
    assert greedy_k_center(pool, torch.randn(2, 3, 4), 5).sort(dim=1).values.tolist() == [[0, 1, 2, 3, 4]] * 2


def test_covering_radius_hand_computed():
    emb = torch.tensor([[0.0, 0.0], [3.0, 0.0], [0.0, 10.0], [0.0, 11.0]])
    labels = torch.tensor([0, 0, 1, 1])
    centres = torch.tensor([[1.0, 0.0], [5.0, 5.0], [0.0, 10.0], [0.0, 0.0]])  # class-major, two per class
    # class 0: nearest centre distances 1 and 2 -> 2; class 1: nearest of (0,10),(0,0): 0, 1 -> 1
    assert covering_radius(emb, labels, centres, per_class=2).tolist() == [2.0, 1.0]
    assert covering_radius(emb, labels, centres, per_class=2, chunk=1).tolist() == [2.0, 1.0]


def test_k_center_per_class_picks_rows_of_each_class():
    from pipeline.methods.kcenter import k_center_per_class

    np.random.seed(0)
    rows = [np.array([0, 1, 2, 3]), np.array([4, 5, 6])]
    points = torch.tensor([[0.0], [1.0], [2.0], [9.0], [20.0], [21.0], [30.0]])
    picked, emb = k_center_per_class(rows, lambda r: points[torch.as_tensor(r)], torch.tensor([[0.0], [20.0]]), 2, 3)
    assert set(picked[:2]) <= {0, 1, 2, 3} and set(picked[2:]) <= {4, 5, 6}
    assert torch.equal(emb, points[torch.as_tensor(picked)])


# ------------------------------------------------------------------ normalisation


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=3, max_size=3))
def test_lipschitz_normalisation(v):
    x = torch.tensor([v], dtype=torch.float64)
    y = normalize_embeddings(x, "lipschitz")
    norm = float(x.norm())
    if norm <= 1:
        assert torch.equal(y, x)  # identity inside the unit ball
    else:
        assert torch.allclose(y, x / norm) and float(y.norm()) == pytest.approx(1.0)
    assert torch.allclose(normalize_embeddings(y, "lipschitz"), y)  # idempotent


def test_lipschitz_is_continuous_at_the_sphere():
    x = torch.tensor([[0.6, 0.8]]) * torch.tensor([[0.999], [1.0], [1.001]])
    y = normalize_embeddings(x, "lipschitz")
    assert torch.allclose(y[0], x[0]) and torch.allclose(y[1], y[2], atol=2e-3)


# ------------------------------------------------------------------ losses against proxies

# two samples, two proxies (one per class), worked out by hand:
# Euclidean d(e, p): e1-p0 sqrt(0.8), e1-p1 sqrt(2), e2-p0 sqrt(0.4), e2-p1 2
# cosine s(e, p):   e1-p0 0.6,       e1-p1 0,       e2-p0 0.8,       e2-p1 -1
EMB = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
LAB = torch.tensor([0, 1])
REF = torch.tensor([[0.6, 0.8], [0.0, -1.0]])
REF_LAB = torch.tensor([0, 1])


def loss_cfg(**over):
    cfg = CCPConfig()
    cfg.c1.neg_margin = 0.5
    cfg.c2.alpha, cfg.c2.beta = 0.3, 0.7
    cfg.triplet.margin = 0.5
    cfg.ms.alpha, cfg.ms.beta, cfg.ms.base = 2.0, 40.0, 0.5
    return cfg


def pair_loss(name, reducer="release", similarity="dot"):
    """CCP's loss `name` (a ccp section key) as CCPObjective builds it."""
    return build_loss(getattr(loss_cfg(), name), LossContext(reducer=reducer, similarity=similarity))


def against_proxies(name, reducer="mean", similarity="cosine", emb=EMB):
    return float(pair_loss(name, reducer, similarity)(emb, LAB, ref_emb=REF, ref_labels=REF_LAB))


def test_c1_against_proxies():
    pos = ((1 - 0.6) + (1 - (-1))) / 2  # (1 - s) on positive pairs
    neg = (max(0.0, 0 - 0.5) + max(0.0, 0.8 - 0.5)) / 2  # (s - m)_+ on negative pairs
    assert against_proxies("c1") == pytest.approx(pos + neg)


def test_c2_against_proxies_is_eq_4_2():
    alpha, beta = 0.3, 0.7

    def ell(d, same):  # CCP eq. 4.2: (y_ij (d - beta) + alpha)_+
        return max(0.0, (1 if same else -1) * (d - beta) + alpha)

    pos = (ell(math.sqrt(0.8), True) + ell(2.0, True)) / 2
    neg = (ell(math.sqrt(2.0), False) + ell(math.sqrt(0.4), False)) / 2
    assert against_proxies("c2") == pytest.approx(pos + neg)


def test_triplet_against_proxies():
    m = 0.5
    t1 = max(0.0, math.sqrt(0.8) - math.sqrt(2.0) + m)  # anchor e1: positive p0, negative p1
    t2 = max(0.0, 2.0 - math.sqrt(0.4) + m)  # anchor e2: positive p1, negative p0
    assert against_proxies("triplet") == pytest.approx((t1 + t2) / 2)


def test_release_reductions_by_hand():
    """The authors' release: C2 and triplet average their non-zero terms (positives and negatives apart for
    C2), C1 sums every term and divides by the batch, MS averages over anchors."""
    alpha, beta = 0.3, 0.7
    pos = [math.sqrt(0.8) - beta + alpha, 2.0 - beta + alpha]  # both > 0
    neg = [max(0.0, beta + alpha - math.sqrt(2.0)), beta + alpha - math.sqrt(0.4)]  # the first is 0
    assert neg[0] == 0 and all(v > 0 for v in pos + neg[1:])
    assert against_proxies("c2", "release") == pytest.approx(sum(pos) / 2 + neg[1] / 1)
    c1_terms = [1 - 0.6, 1 - (-1.0), max(0.0, 0.0 - 0.5), max(0.0, 0.8 - 0.5)]
    assert against_proxies("c1", "release") == pytest.approx(sum(c1_terms) / 2)  # batch of 2
    t1, t2 = max(0.0, math.sqrt(0.8) - math.sqrt(2.0) + 0.5), 2.0 - math.sqrt(0.4) + 0.5
    assert t1 == 0 and against_proxies("triplet", "release") == pytest.approx(t2)
    assert against_proxies("ms", "release") == pytest.approx(against_proxies("ms", "mean"))
    assert against_proxies("c2", "avg_nonzero") == pytest.approx(against_proxies("c2", "release"))


def test_dot_similarity_keeps_the_length_inside_the_unit_ball():
    """With the Lipschitz normalisation a short embedding stays short: the release's "cosine" is the dot
    product, half of the cosine for a vector of length 0.5."""
    short = EMB * torch.tensor([[0.5], [1.0]])
    dot = [[0.5 * 0.6, 0.0], [0.8, -1.0]]  # s(e, p) with e1 at length 0.5
    pos = (1 - dot[0][0]) + (1 - dot[1][1])
    neg = max(0.0, dot[0][1] - 0.5) + max(0.0, dot[1][0] - 0.5)
    assert against_proxies("c1", "release", "dot", short) == pytest.approx((pos + neg) / 2)
    assert against_proxies("c1", "release", "cosine", short) == pytest.approx(against_proxies("c1", "release"))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=12),
    st.lists(st.integers(0, 4), min_size=1, max_size=12),
    st.booleans(),
)
def test_all_triplet_indices_match_the_library_in_order(labels, ref_labels, in_batch):
    # the same triplets in the same order as pytorch-metric-learning's O(B x M^2) construction,
    # in batch (an anchor is not its own positive) and against references
    y = torch.tensor(labels)
    ref = y if in_batch else torch.tensor(ref_labels)
    ours = all_triplet_indices(y, ref)
    theirs = lmu.get_all_triplets_indices(y, ref)
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))


def test_triplet_loss_is_bit_identical_to_the_library():
    torch.manual_seed(0)
    x, ref = torch.randn(16, 8), torch.randn(40, 8)
    y, ref_y = torch.randint(0, 10, (16,)), torch.arange(10).repeat_interleave(4)
    ours = pair_loss("triplet", reducer="mean")
    theirs = losses.TripletMarginLoss(
        margin=0.5, distance=distances.LpDistance(normalize_embeddings=False), reducer=reducers.MeanReducer()
    )
    assert torch.equal(ours(x, y, ref_emb=ref, ref_labels=ref_y), theirs(x, y, ref_emb=ref, ref_labels=ref_y))
    assert torch.equal(ours(x, y), theirs(x, y))


def test_ms_against_proxies():
    a, b, lam = 2.0, 40.0, 0.5

    def anchor(s_pos, s_neg):  # Wang et al. 2019, eq. 7, one positive and one negative
        return math.log1p(math.exp(-a * (s_pos - lam))) / a + math.log1p(math.exp(b * (s_neg - lam))) / b

    assert against_proxies("ms") == pytest.approx((anchor(0.6, 0.0) + anchor(-1.0, 0.8)) / 2, rel=1e-5)


def test_losses_also_work_in_batch():
    for name in ("c1", "c2", "ms", "triplet"):
        x = torch.nn.functional.normalize(torch.randn(8, 4), dim=1)
        value = pair_loss(name)(x, torch.tensor([0, 0, 1, 1, 2, 2, 3, 3]))
        assert torch.isfinite(value) and value >= 0


# ------------------------------------------------------------------ the regulariser


def test_regulariser_gradient_is_lambda_times_displacement_and_spares_proxies():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    cfg = CCPConfig(zero_lambda_first=False, lambda_=0.3, in_batch_weight=0.0)
    objective = CCPObjective(cfg, "c2", "ccp", num_classes=2, embedding_dim=2, proxy_lr=1e-3)
    objective.proxies.data = torch.randn(8, 2)
    objective.theta_prev = [p.detach() + torch.randn_like(p) for p in model.parameters()]
    x, y = torch.randn(4, 3), torch.tensor([0, 0, 1, 1])

    def grads(lam):
        objective.lambda_ = lam
        model.zero_grad(), objective.zero_grad()
        objective.batch_loss(model, x, y).backward()
        return [p.grad.clone() for p in model.parameters()], objective.proxies.grad.clone()

    with_reg, proxies_with = grads(0.3)
    without, proxies_without = grads(0.0)
    for g1, g0, p, prev in zip(with_reg, without, model.parameters(), objective.theta_prev):
        assert torch.allclose(g1 - g0, 0.3 * (p.detach() - prev), atol=1e-6)
    assert torch.equal(proxies_with, proxies_without)
    assert float(projection_penalty([torch.tensor([3.0])], [torch.tensor([1.0])], 0.5)) == pytest.approx(1.0)


# ------------------------------------------------------------------ params


@pytest.mark.parametrize(
    "override,message",
    [
        ({"proxies_per_class": 0}, "params.yaml: ccp.proxies_per_class: must be >= 1, got 0"),
        ({"pool_size": 0}, "params.yaml: ccp.pool_size: must be >= 1, got 0"),
        ({"lambda": -1e-4}, "params.yaml: ccp.lambda: must be >= 0.0, got -0.0001"),
        ({"patience": 0}, "params.yaml: ccp.patience: must be >= 1, got 0"),
        ({"lamda": 1e-4}, "params.yaml: ccp.lamda: unknown key"),
        ({"pool_size": 2, "proxies_per_class": 3}, "params.yaml: ccp.pool_size: must be >= ccp.proxies_per_class"),
        ({"alternating": ["ccp", "fancy"]}, "params.yaml: ccp.alternating: 'fancy' is not one of"),
        ({"variants": ["batch", "ccp"]}, "params.yaml: ccp.variants: 'ccp' is not one of"),
    ],
)
def test_bad_ccp_params(tiny_dict, override, message):
    with pytest.raises(ParamsError) as err:
        params_from_dict(merge(tiny_dict, {"ccp": override}))
    assert str(err.value).startswith(message)


def test_lambda_keyword_loads(tiny_dict):
    assert params_from_dict(merge(tiny_dict, {"ccp": {"lambda": 1e-10}})).ccp.lambda_ == 1e-10


# ------------------------------------------------------------------ the outer loop


@pytest.fixture
def ccp_params(tiny_dict):
    return params_from_dict(
        merge(
            tiny_dict,
            {
                "train": {"max_epochs": 12, "patience": 12, "steps_per_epoch": 4},
                "ccp": {
                    "patience": 1,
                    "proxies_per_class": 2,
                    "pool_size": 4,
                    "max_subproblems": 3,
                    "zero_lambda_first": True,
                },
            },
        )
    )


def test_ccp_runs_subproblems_and_logs_diagnostics(ccp_params, tiny_data):
    manifest, features = tiny_data
    result = train_fold(run_setup(ccp_params, "c2_ccp"), 0, manifest, features, CPU)
    rows = result.diagnostics
    assert 2 <= len(rows) <= 3 and [r["subproblem"] for r in rows] == list(range(1, len(rows) + 1))
    assert rows[0]["lambda"] == 0.0 and all(r["lambda"] == ccp_params.ccp.lambda_ for r in rows[1:])
    assert all(
        r["steps"] == r["epochs"] * 4 and r["covering_radius_max"] >= r["covering_radius_mean"] > 0 for r in rows
    )
    if len(rows) == 3:  # max_subproblems reached: training ended there
        assert len(result.fit.history) - 1 == sum(r["epochs"] for r in rows)


def _log(result) -> np.ndarray:
    return np.array([[r["epoch"], r["train_loss"], r["val_map_at_r"]] for r in result.fit.history])


def test_ccp_and_loss_proxy_are_one_computation_up_to_the_first_reinitialisation(ccp_params, tiny_data):
    """Common random numbers: the same start, batches and K-center, so every epoch of CCP's first sub-problem
    is bit for bit Loss-Proxy's; they part when K-center re-initialises CCP's proxies."""
    manifest, features = tiny_data
    ccp = train_fold(run_setup(ccp_params, "c2_ccp"), 0, manifest, features, CPU, seed=1)
    proxy = train_fold(run_setup(ccp_params, "c2_loss_proxy"), 0, manifest, features, CPU, seed=1)
    first = ccp.diagnostics[0]["epochs"]
    assert len(ccp.diagnostics) >= 2 and len(proxy.fit.history) > first + 1
    np.testing.assert_array_equal(_log(ccp)[: first + 1], _log(proxy)[: first + 1])  # epochs 0..first
    assert _log(ccp)[first + 1, 1] != _log(proxy)[first + 1, 1]  # the next epoch trains other proxies


def test_every_run_of_a_fold_and_seed_starts_from_the_same_network(ccp_params, tiny_data, monkeypatch):
    """The initial head and the batch seed depend on (seed, fold, replicate seed), not on the method."""
    import pipeline.training.experiment as experiment

    manifest, features = tiny_data
    starts, fit = [], experiment.fit

    def recording(model, objective, data, cfg, device, desc, batch_seed, cut):
        starts.append(({k: v.clone() for k, v in model.state_dict().items()}, batch_seed))
        return fit(model, objective, data, replace(cfg, max_epochs=1), device, desc, batch_seed, cut)

    monkeypatch.setattr(experiment, "fit", recording)
    for method in ("c2_batch", "c2_ccp", "ms", "ms_plain", "ms_profs_hncm"):
        train_fold(run_setup(ccp_params, method), 1, manifest, features, CPU, seed=0)
    train_fold(run_setup(ccp_params, "ms"), 1, manifest, features, CPU, seed=1)
    (first, first_seed), *rest, (other, other_seed) = starts
    for state, batch_seed in rest:
        assert batch_seed == first_seed and all(torch.equal(state[k], first[k]) for k in first)
    assert other_seed != first_seed and not torch.equal(other["head.0.weight"], first["head.0.weight"])


def test_loss_proxy_is_one_subproblem_and_batch_has_none(ccp_params, tiny_data):
    manifest, features = tiny_data
    assert len(train_fold(run_setup(ccp_params, "c2_loss_proxy"), 0, manifest, features, CPU).diagnostics) == 1
    assert train_fold(run_setup(ccp_params, "triplet_batch"), 0, manifest, features, CPU).diagnostics == []


def test_sample_based_ccp_trains(ccp_params, tiny_data):
    manifest, features = tiny_data
    result = train_fold(run_setup(ccp_params, "ms_sample_ccp"), 1, manifest, features, CPU)
    assert np.isfinite(result.test_embeddings).all() and len(result.diagnostics) >= 1
    assert float(np.linalg.norm(result.test_embeddings, axis=1).max()) <= 1 + 1e-5  # Lipschitz ball


@pytest.mark.parametrize("space", ["raw", "normalized"])
def test_reinitialised_proxies_come_from_the_pool(ccp_params, tiny_data, space):
    """After K-center, every proxy equals a training sample's embedding of its class in K-center's space
    (raw head output as released, or normalised), and the loss sees it as that sample's normalised embedding."""

    from pipeline.models.embedder import Embedder, build_head
    from pipeline.training.experiment import fold_rows, frozen_data
    from pipeline.training.loop import TrainContext

    manifest, features = tiny_data
    data = frozen_data(features, fold_rows(manifest, 0))
    model = Embedder(None, build_head(features.features.shape[1], 8, 0), "lipschitz")
    with torch.no_grad():
        model.head.weight.mul_(20)  # outputs well outside the unit ball: raw and normalised differ
    cfg = replace(ccp_params.ccp, kcenter_space=space)
    objective = CCPObjective(cfg, "c1", "ccp", len(np.unique(data.train_labels)), 8, proxy_lr=1e-3)
    optimizer = torch.optim.Adam(list(model.parameters()) + [objective.proxies])
    ctx = TrainContext(model, optimizer, data, ccp_params.train, CPU)
    objective.begin(ctx)
    x, labels = data.train.tensors[0], torch.as_tensor(data.train_labels)
    with torch.no_grad():
        stored = model.head_output(x) if space == "raw" else model(x)
        seen, refs = model(x), objective.references(model)
    assert float(seen.norm(dim=1).min()) == pytest.approx(1.0)  # every sample on the sphere
    for proxy, ref, label in zip(objective.proxies, refs, objective.anchor_labels):
        nearest = torch.cdist(proxy[None].detach(), stored[labels == label]).min(dim=1)
        assert float(nearest.values) < 1e-5
        assert torch.allclose(ref, seen[labels == label][nearest.indices[0]], atol=1e-5)


@pytest.mark.parametrize(
    "variant,first_lambda", [("ccp", 0.3), ("sample_ccp", 0.3), ("loss_proxy", 0.0), ("batch", 0.0)]
)
def test_only_alternating_variants_regularise_the_first_subproblem(variant, first_lambda):
    cfg = CCPConfig(zero_lambda_first=False, lambda_=0.3)
    assert CCPObjective(cfg, "c2", variant, num_classes=2, embedding_dim=2, proxy_lr=1e-3).lambda_ == first_lambda
    assert (
        CCPObjective(CCPConfig(lambda_=0.3), "c2", variant, num_classes=2, embedding_dim=2, proxy_lr=1e-3).lambda_
        == 0.0
    )


def test_a_ccp_runs_record_holds_exactly_the_keys_its_variant_uses(tiny_params):
    """summary.json's settings of a CCP run, which the values stage also writes into data/tuned/<run>.json (the one
    file of the run's own settings its train stage depends on): its loss's section and its variant's keys, no others
    (a Loss-Proxy run must not retrain when ccp.lambda, which it does not use, changes)."""
    from pipeline.families.ccp import ALGORITHM_1_KEYS as CCP_ALGORITHM_1_KEYS
    from pipeline.families.ccp import SHARED_KEYS as CCP_SHARED_KEYS
    from pipeline.runs import run_record

    batch, proxy = run_record(tiny_params, "c2_batch"), run_record(tiny_params, "c2_loss_proxy")
    alternating = run_record(tiny_params, "c2_ccp")
    assert set(batch) == {"c2", *CCP_SHARED_KEYS}
    # Loss-Proxy's one sub-problem starts from a K-center over a pool of ccp.pool_size samples (CCP Alg. 2)
    assert set(proxy) == {"c2", *CCP_SHARED_KEYS, "pool_size"} and "lambda" not in proxy
    assert set(alternating) == {"c2", *CCP_SHARED_KEYS, "pool_size", *CCP_ALGORITHM_1_KEYS}
    assert alternating["lambda"] == tiny_params.ccp.lambda_ and proxy["c2"] == alternating["c2"]
