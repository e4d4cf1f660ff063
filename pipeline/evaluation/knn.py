"""Exact Euclidean k nearest neighbours with faiss, the query excluded from its own list."""

from __future__ import annotations

import numpy as np
from tqdm import tqdm

from pipeline.numerics import faiss


def nearest_neighbours(x: np.ndarray, k: int, chunk: int = 4096, progress: bool = False,
                       queries: np.ndarray | None = None):
    """Indices and squared distances of the k nearest other items of every row of `x`; with `queries`
    (a query/gallery split such as In-shop), the k nearest rows of `x` (the gallery) of every query.

    Exact search (``faiss.IndexFlatL2``) in query chunks of `chunk` rows, so the
    working memory is O(chunk * k) beyond the data itself. The query itself is
    removed from its list (when an exact duplicate pushes it out of the k + 1
    retrieved, the last neighbour is dropped instead). Ties in distance are
    ordered by item index, so results do not depend on faiss's heap order.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = len(x)
    if queries is not None:
        return _gallery_neighbours(x, np.ascontiguousarray(queries, dtype=np.float32), k, chunk, progress)
    if not 1 <= k <= n - 1:
        raise ValueError(f"k={k} must be in 1..{n - 1} for {n} items")
    index = faiss().IndexFlatL2(x.shape[1])
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


def _gallery_neighbours(gallery: np.ndarray, queries: np.ndarray, k: int, chunk: int, progress: bool):
    """k nearest gallery rows of every query (the sets are disjoint: nothing to exclude); ties by index."""
    if not 1 <= k <= len(gallery):
        raise ValueError(f"k={k} must be in 1..{len(gallery)} for a gallery of {len(gallery)} items")
    index = faiss().IndexFlatL2(gallery.shape[1])
    index.add(gallery)
    out_i = np.empty((len(queries), k), dtype=np.int64)
    out_d = np.empty((len(queries), k), dtype=np.float32)
    for s in tqdm(range(0, len(queries), chunk), desc="kNN", unit="chunk", disable=not progress):
        d, i = index.search(queries[s : s + chunk], k)
        order = np.lexsort((i, d), axis=1)
        out_i[s : s + chunk] = np.take_along_axis(i, order, axis=1)
        out_d[s : s + chunk] = np.take_along_axis(d, order, axis=1)
    return out_i, out_d
