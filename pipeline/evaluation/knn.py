"""Exact Euclidean k nearest neighbours with faiss, the query excluded from its own list."""

from __future__ import annotations

import faiss
import numpy as np
from tqdm import tqdm


def nearest_neighbours(x: np.ndarray, k: int, chunk: int = 4096, progress: bool = False):
    """Indices and squared distances of the k nearest other items of every row of `x`.

    Exact search (``faiss.IndexFlatL2``) in query chunks of `chunk` rows, so the
    working memory is O(chunk * k) beyond the data itself. The query itself is
    removed from its list (when an exact duplicate pushes it out of the k + 1
    retrieved, the last neighbour is dropped instead). Ties in distance are
    ordered by item index, so results do not depend on faiss's heap order.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = len(x)
    if not 1 <= k <= n - 1:
        raise ValueError(f"k={k} must be in 1..{n - 1} for {n} items")
    index = faiss.IndexFlatL2(x.shape[1])
    index.add(x)
    out_i = np.empty((n, k), dtype=np.int64)
    out_d = np.empty((n, k), dtype=np.float32)
    starts = range(0, n, chunk)
    for s in tqdm(starts, desc="kNN", unit="chunk", disable=not progress):
        e = min(s + chunk, n)
        d, i = index.search(x[s:e], k + 1)
        is_self = i == np.arange(s, e)[:, None]
        no_self = ~is_self.any(axis=1)
        is_self[no_self, -1] = True  # drop the farthest instead
        keep = ~is_self
        i, d = i[keep].reshape(e - s, k), d[keep].reshape(e - s, k)
        order = np.lexsort((i, d), axis=1)  # primary: distance, secondary: index
        out_i[s:e] = np.take_along_axis(i, order, axis=1)
        out_d[s:e] = np.take_along_axis(d, order, axis=1)
    return out_i, out_d
