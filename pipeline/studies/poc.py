"""CCP's 2-D proof of concept (CCP Fig. 2, section 5.3) on the ten digit classes.

Seen-class setting: the bundled digits (8x8 pixels) split per class into
training, validation and test images; a small MLP embeds them in 2-D with the
Lipschitz normalisation (the unit disc). Runs from the same seed with the
same loss, proxies per class and pool size: Loss-Proxy (one proxy-DML trained
to convergence; the paper observes the proxies of a class coalesce), CCP
(Algorithm 1: re-initialised proxies, smaller covering radius) and
sample-based CCP (the paper's 98.06 vs 97.21 MAP@R comparison on MNIST).
Each variant is trained from every replicate seed of ``poc.seeds`` (the same
data split), so the comparison has a confidence interval.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch.utils.data import TensorDataset

from pipeline.batching.samplers import rows_per_class
from pipeline.evaluation.retrieval import retrieval_scores
from pipeline.infra.runtime import derive_seed, seed_everything
from pipeline.methods.ccp import CCPObjective
from pipeline.methods.kcenter import covering_radius, k_center_per_class
from pipeline.models.embedder import Embedder, build_head
from pipeline.params.root import Params
from pipeline.training.inference import embed
from pipeline.training.loop import FoldData, fit
from pipeline.training.stopping import cut_while_improving

log = logging.getLogger(__name__)


def digit_splits(seed: int, val_fraction: float, test_fraction: float) -> FoldData:
    """Per class: test, validation and training images of the same ten digits (pixels / 16)."""
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = digits.target.astype(np.int64)
    rng = np.random.default_rng(seed)
    parts = {"train": [], "val": [], "test": []}
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(y == c))
        n_test, n_val = int(round(test_fraction * len(idx))), int(round(val_fraction * len(idx)))
        parts["test"].append(idx[:n_test])
        parts["val"].append(idx[n_test : n_test + n_val])
        parts["train"].append(idx[n_test + n_val :])
    rows = {k: np.concatenate(v) for k, v in parts.items()}

    def ds(k):
        return TensorDataset(x[rows[k]], torch.from_numpy(y[rows[k]])), y[rows[k]]

    return FoldData(*ds("train"), *ds("val"), *ds("test"))


@dataclass(frozen=True)
class PocSetup:
    """What the proof of concept reads of params (poc_setup): the poc section, and the ccp and train sections as
    it runs them (2-D, the poc's proxies, pool, cap and network)."""

    poc: Any
    ccp: Any
    train: Any
    seed: int  # params.seed: the data split's, the initial network's and the batches' root seed


def poc_setup(params: Params) -> PocSetup:
    poc = params.poc
    ccp = dataclasses.replace(
        params.ccp,
        proxies_per_class=poc.proxies_per_class,
        pool_size=poc.pool_size,
        max_subproblems=poc.max_subproblems,
        embedding_norm="lipschitz",
    )
    train = dataclasses.replace(
        params.train,
        embedding_dim=2,
        head_hidden=poc.hidden,
        max_epochs=poc.max_epochs,
        classes_per_batch=min(params.train.classes_per_batch, 10),
    )
    return PocSetup(poc, ccp, train, params.seed)


def poc_job(job: tuple[PocSetup, str, int]) -> dict:
    """run_poc for job = (setup, variant, replicate seed) on the CPU (a module-level function for
    pipeline/infra/parallel.py)."""
    setup, variant, seed = job
    data = digit_splits(setup.seed, setup.poc.val_fraction, setup.poc.test_fraction)
    return run_poc(setup, variant, data, torch.device("cpu"), seed)


def run_poc(setup: PocSetup, variant: str, data: FoldData, device: torch.device, seed: int = 0) -> dict:
    """Train one variant in 2-D from replicate `seed`; return training embeddings, proxies, covering radius
    and test MAP@R. The variants of one seed start from the same network."""
    poc, ccp, train = setup.poc, setup.ccp, setup.train
    seed_everything(derive_seed(setup.seed, "poc", seed))  # the same initial network for every variant
    model = Embedder(None, build_head(data.train[0][0].numel(), 2, poc.hidden), "lipschitz")
    objective = CCPObjective(ccp, poc.loss, variant, 10, 2, train.lr * ccp.proxy_lr_multiplier)
    result = fit(
        model,
        objective,
        data,
        train,
        device,
        desc=f"poc-{variant}",
        batch_seed=derive_seed(setup.seed, "poc-batches", seed),
    )
    # the final state: converged proxies, and the next proxies K-center would pick (CCP Fig. 2: boxes, circles)
    emb = torch.as_tensor(embed(model, data.train, device))
    labels = torch.as_tensor(data.train_labels)
    with torch.no_grad():
        proxies = objective.references(model).cpu()
    proxy_labels = objective.anchor_labels.cpu()
    _, next_proxies = k_center_per_class(
        rows_per_class(data.train_labels),
        lambda rows: emb[torch.as_tensor(rows)],
        proxies,
        poc.proxies_per_class,
        poc.pool_size,
    )
    test = retrieval_scores(embed(model, data.test, device), data.test_labels)
    radius = covering_radius(emb, labels, proxies, poc.proxies_per_class)
    next_radius = covering_radius(emb, labels, next_proxies, poc.proxies_per_class)
    return {
        "embeddings": emb.numpy(),
        "labels": data.train_labels,
        "proxies": proxies.numpy(),
        "next_proxies": next_proxies.numpy(),
        "proxy_labels": proxy_labels.numpy(),
        "covering_radius_max": float(radius.max()),
        "covering_radius_mean": float(radius.mean()),
        "next_radius_max": float(next_radius.max()),
        "next_radius_mean": float(next_radius.mean()),
        **{f"test_{k}": test[k] for k in ("map_at_r", "precision_at_1")},
        "subproblems": len(objective.diagnostics),
        "epochs": len(result.history) - 1,
        "best_epoch": result.best_epoch,
        "stop_reason": result.stop_reason,  # patience, max_epochs (poc.max_epochs) or method (poc.max_subproblems)
        "cut_while_improving": cut_while_improving(result.best_epoch, len(result.history) - 1, train.patience),
    }
