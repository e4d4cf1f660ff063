"""Exact Euclidean k nearest neighbours, the same lists on every CPU, the query excluded from its own list.

Two passes. A float32 faiss search (``IndexFlatL2``, the CPU's BLAS, `threads` threads) proposes
candidates; its distances may differ from the exact ones by at most a bound that depends only on the norms
(below), so a query's candidate list provably holds its true k nearest items once the last candidate lies
more than twice that bound beyond the k-th; a query for which that does not hold is searched again, deeper
(at worst over every item). Then the candidates are ranked by their squared distance recomputed in float64
(``sum((q - y) ** 2)``: IEEE subtractions and products, numpy's fixed-order pairwise sum, no BLAS), ties by
item index. Neither the faiss kernels, their thread count nor the CPU can change which items end up in the
lists or in what order.

Float32 error bound. faiss computes ``||q||^2 + ||y||^2 - 2 q.y`` (or ``sum((q - y)^2)``) in float32 over d
dimensions; each of the d-term sums is within gamma_{d+3} (|q|^2 + |y|^2 + 2 |q||y|) of the exact value,
gamma_n = n u / (1 - n u), u = 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms, eq. 3.5), so
``|d32 - d| <= gamma_{d+3} (|q| + max_y |y|)^2``; we use twice that.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pipeline import numerics
from pipeline.numerics import faiss

_UNIT = 2.0**-24  # float32 unit roundoff
_EXACT_BLOCK = 1 << 22  # float64 elements per block of recomputed distances (32 MB)


def float32_error_bound(query_norms: np.ndarray, max_norm: float, dim: int) -> np.ndarray:
    """Per query, twice the largest possible |float32 squared distance - exact| to any database item."""
    n = dim + 3
    gamma = n * _UNIT / (1 - n * _UNIT)
    return 2.0 * gamma * (query_norms + max_norm) ** 2


def exact_sq_distances(queries: np.ndarray, base: np.ndarray, candidates: np.ndarray, threads: int = 1) -> np.ndarray:
    """float64 squared distances of each query to its candidate rows of `base` (float64 arrays), computed in
    a CPU-independent order: ``sum((y - q) ** 2)`` with IEEE operations and numpy's fixed-order pairwise sum.
    Blocks of queries go to `threads` threads (numpy releases the GIL): each row's arithmetic is the same."""
    out = np.empty(candidates.shape, dtype=np.float64)
    rows = max(1, _EXACT_BLOCK // max(1, candidates.shape[1] * base.shape[1]))

    def block(s: int) -> None:
        diff = base[candidates[s : s + rows]]
        diff -= queries[s : s + rows, None, :]
        np.square(diff, out=diff)
        out[s : s + rows] = diff.sum(axis=2)

    starts = range(0, len(queries), rows)
    if threads > 1 and len(starts) > 1:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(block, starts))
    else:
        for s in starts:
            block(s)
    return out


def _complete(d32: np.ndarray, k: int, bound: np.ndarray, everything: bool) -> np.ndarray:
    """Which queries' candidate lists provably hold their k nearest: every item left out is farther (by its
    float32 distance) than the k-th candidate plus twice the bound, or nothing was left out."""
    if everything:
        return np.ones(len(d32), dtype=bool)
    return d32[:, -1] > d32[:, k - 1] + 2.0 * bound


def _search(
    index, base64: np.ndarray, queries: np.ndarray, k: int, exclude: np.ndarray | None, bound: np.ndarray, threads: int
):
    """(indices, float64 squared distances) of the k nearest rows of `base64` per query (float32 `queries`),
    self (`exclude`) left out; the re-ranking on `threads` threads."""
    n = len(base64)
    extra = 1 if exclude is not None else 0
    depth = min(n, k + extra + max(3, k // 4))  # a few more than needed; deeper only where the check fails
    out_i = np.empty((len(queries), k), dtype=np.int64)
    out_d = np.empty((len(queries), k), dtype=np.float64)
    todo = np.arange(len(queries))
    while len(todo):
        d32, cand = index.search(queries[todo], depth)
        # the k-th candidate other than the query itself decides completeness: with the query among the
        # candidates, that is position k (0-based) of the float32 list, else k - 1 (one more than needed)
        done = _complete(d32, k + extra, bound[todo], depth == n)
        rows = todo[done]
        cand = cand[done]
        if exclude is not None:
            is_self = cand == exclude[rows][:, None]
            is_self[~is_self.any(axis=1), -1] = True  # the query not proposed: drop the last candidate instead
            cand = cand[~is_self].reshape(len(rows), depth - 1)
        d64 = exact_sq_distances(queries[rows].astype(np.float64), base64, cand, threads)
        order = np.lexsort((cand, d64), axis=1)[:, :k]  # distance first, then item index
        out_i[rows] = np.take_along_axis(cand, order, axis=1)
        out_d[rows] = np.take_along_axis(d64, order, axis=1)
        todo = todo[~done]
        depth = min(n, 2 * depth)
    return out_i, out_d


def nearest_neighbours(
    x: np.ndarray,
    k: int,
    chunk: int = 4096,
    queries: np.ndarray | None = None,
    threads: int | None = None,
):
    """Indices and float64 squared distances of the k nearest other items of every row of `x`; with
    `queries` (a query/gallery split such as In-shop), the k nearest rows of `x` (the gallery) per query.

    Exact (module docstring): ties in distance are ordered by item index; the query itself is never in its
    own list, also when exact duplicates share its distance 0. Query chunks of `chunk` rows bound the
    working memory; `threads` (default: the process's setting) are faiss's OpenMP threads for the search.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    gallery = queries is not None
    q = np.ascontiguousarray(queries, dtype=np.float32) if gallery else x
    limit = len(x) if gallery else len(x) - 1
    if not 1 <= k <= limit:
        raise ValueError(f"k={k} must be in 1..{limit} for {'a gallery of ' if gallery else ''}{len(x)} items")
    lib = faiss()  # at the process's thread count (every call sets it), or at `threads` for this search
    if threads:
        lib.omp_set_num_threads(threads)
    index = lib.IndexFlatL2(x.shape[1])
    index.add(x)
    x64 = x.astype(np.float64)
    norms = np.sqrt(np.square(x64).sum(axis=1))
    query_norms = np.sqrt(np.square(q.astype(np.float64)).sum(axis=1)) if gallery else norms
    bound = float32_error_bound(query_norms, float(norms.max()), x.shape[1])
    out_i = np.empty((len(q), k), dtype=np.int64)
    out_d = np.empty((len(q), k), dtype=np.float64)
    for s in range(0, len(q), chunk):
        e = min(s + chunk, len(q))
        exclude = None if gallery else np.arange(s, e)
        out_i[s:e], out_d[s:e] = _search(index, x64, q[s:e], k, exclude, bound[s:e], threads or numerics.threads())
    return out_i, out_d
