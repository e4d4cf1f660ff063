"""Greedy K-center selection (CCP Algorithm 2) and the covering radius (CCP Prop. 4.2)."""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch


def greedy_k_center(pool: torch.Tensor, centres: torch.Tensor, k: int) -> list[int]:
    """Pick `k` rows of `pool`, each the one farthest (max-min Euclidean distance) from
    `centres` and the rows already picked (CCP Alg. 2, inner repeat loop).

    With no centres the first pick is pool row 0 (pools are drawn at random).
    Ties go to the lowest index. When k equals the pool size every row is picked,
    so the selection is as random as the pool (b = #proxy: random selection).
    """
    if k > len(pool):
        raise ValueError(f"cannot pick {k} centres from a pool of {len(pool)}")
    nearest = torch.full((len(pool),), float("inf"), dtype=pool.dtype, device=pool.device)
    if len(centres):
        nearest = torch.cdist(pool, centres).min(dim=1).values
    picked: list[int] = []
    for _ in range(k):
        score = nearest.clone()
        if picked:
            score[picked] = -1.0  # already picked: never again
        q = int(torch.argmax(score))  # first maximum: row 0 when nothing is placed yet (all inf)
        picked.append(q)
        nearest = torch.minimum(nearest, torch.cdist(pool, pool[q : q + 1]).squeeze(1))
    return picked


def covering_radius(embeddings: torch.Tensor, labels: torch.Tensor, centres: torch.Tensor,
                    centre_labels: torch.Tensor) -> torch.Tensor:
    """Per class, the largest distance from a sample to its nearest same-class centre (delta_s of Prop. 4.2)."""
    classes = torch.unique(labels)
    radius = torch.empty(len(classes), dtype=embeddings.dtype)
    for i, c in enumerate(classes):
        d = torch.cdist(embeddings[labels == c], centres[centre_labels == c])
        radius[i] = d.min(dim=1).values.max()
    return radius


def k_center_per_class(rows_per_class: list[np.ndarray], embed_rows: Callable[[np.ndarray], torch.Tensor],
                       centres: torch.Tensor, centre_labels: torch.Tensor, k: int, pool_size: int):
    """CCP Algorithm 2 for every class: draw a pool of b rows, embed them, pick k by greedy K-center
    seeded by that class's centres. Returns the picked rows and their embeddings, class by class."""
    rows_out, emb_out = [], []
    for c, rows in enumerate(rows_per_class):
        pool_rows = np.random.choice(rows, pool_size, replace=len(rows) < pool_size)
        pool = embed_rows(pool_rows)
        picked = greedy_k_center(pool, centres[centre_labels == c], k)
        rows_out.append(pool_rows[picked])
        emb_out.append(pool[picked])
    return np.concatenate(rows_out), torch.cat(emb_out)
