"""Greedy K-center selection (CCP Algorithm 2) and the covering radius (CCP Prop. 4.2), for every class at once.

Centres (proxies, anchor samples) are class-major with the same number per class, as CCP holds them:
rows c*m .. c*m + m - 1 belong to class c. Both functions work on all classes in batched tensor
operations (a few per pick), so a re-initialisation costs O(k) operations, not O(classes x k).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch


def greedy_k_center(pools: torch.Tensor, centres: torch.Tensor, k: int) -> torch.Tensor:
    """For each class c, pick `k` rows of `pools[c]` (C, b, D), each the one farthest (max-min Euclidean
    distance) from `centres[c]` (C, m, D; m may be 0) and the rows already picked (CCP Alg. 2, inner repeat
    loop). Returns (C, k) pool indices in the order picked.

    With no centres the first pick is pool row 0 (pools are drawn at random). Ties go to the lowest index.
    When k equals the pool size every row is picked, so the selection is as random as the pool
    (b = #proxy: random selection).
    """
    classes, size, _ = pools.shape
    if k > size:
        raise ValueError(f"cannot pick {k} centres from a pool of {size}")
    nearest = torch.full((classes, size), float("inf"), dtype=pools.dtype, device=pools.device)
    if centres.shape[1]:
        nearest = torch.linalg.vector_norm(pools[:, :, None, :] - centres[:, None, :, :], dim=3).min(dim=2).values
    taken = torch.zeros(classes, size, dtype=torch.bool, device=pools.device)
    every = torch.arange(classes, device=pools.device)
    picked = []
    for _ in range(k):
        q = torch.argmax(nearest.masked_fill(taken, -1.0), dim=1)  # first maximum: row 0 when all are inf
        picked.append(q)
        taken[every, q] = True
        nearest = torch.minimum(nearest, torch.linalg.vector_norm(pools - pools[every, q][:, None, :], dim=2))
    return torch.stack(picked, dim=1)


def covering_radius(
    embeddings: torch.Tensor, labels: torch.Tensor, centres: torch.Tensor, per_class: int, chunk: int = 8192
) -> torch.Tensor:
    """Per class 0..C-1, the largest distance from a sample to its nearest same-class centre (delta_s of
    Prop. 4.2); `centres` class-major, `per_class` each; samples in chunks of `chunk` rows."""
    grouped = centres.reshape(-1, per_class, centres.shape[1])
    nearest = torch.cat(
        [
            torch.linalg.vector_norm(embeddings[s : s + chunk, None, :] - grouped[labels[s : s + chunk]], dim=2)
            .min(dim=1)
            .values
            for s in range(0, len(embeddings), chunk)
        ]
    )
    radius = torch.zeros(len(grouped), dtype=embeddings.dtype)
    return radius.scatter_reduce(0, labels.long(), nearest, reduce="amax", include_self=False)


def k_center_per_class(
    rows_per_class: list[np.ndarray],
    embed_rows: Callable[[np.ndarray], torch.Tensor],
    centres: torch.Tensor,
    k: int,
    pool_size: int,
) -> tuple[np.ndarray, torch.Tensor]:
    """CCP Algorithm 2 for every class: draw a pool of b rows per class, embed all pools, pick k per class by
    greedy K-center seeded by that class's centres (class-major, the same number per class). Returns the
    picked rows and their embeddings, class-major."""
    pool_rows = np.stack([np.random.choice(rows, pool_size, replace=len(rows) < pool_size) for rows in rows_per_class])
    classes = len(pool_rows)
    pools = embed_rows(pool_rows.ravel()).reshape(classes, pool_size, -1)
    picked = greedy_k_center(pools, centres.reshape(classes, -1, pools.shape[2]).to(pools), k)
    rows = np.take_along_axis(pool_rows, picked.cpu().numpy(), axis=1).ravel()
    return rows, pools[torch.arange(classes, device=pools.device)[:, None], picked].reshape(classes * k, -1)
