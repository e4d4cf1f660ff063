"""Benchmark: our evaluation vs pytorch-metric-learning's AccuracyCalculator on SOP-sized data.

Times the metrics both compute (P@1, R-precision, MAP@R and, unless
--no-clustering, NMI) on the same random embeddings, each implementation in
its own process so that its peak resident memory can be read separately.
Prints both times, their ratio, the peak memory, and where our kNN metrics'
time goes: faiss's candidate search, the exact float64 re-ranking
(pipeline/evaluation/knn.py exact_sq_distances) and the metrics from the
ranked lists; and beside them the bound no kNN can beat: the products
x @ x.T alone through numpy's BLAS (a third process, the machine's own
kernels), and the share of it each kNN reaches. Not a test: run it by hand.

    python benchmarks/bench_evaluation.py            # 60,000 x 128, 11,000 classes
    python benchmarks/bench_evaluation.py --n 5000 --classes 900
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time


def make_data(n: int, dim: int, classes: int, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = np.concatenate([np.repeat(np.arange(classes), 2), rng.integers(0, classes, n - 2 * classes)])
    return rng.normal(size=(n, dim)).astype(np.float32), rng.permutation(labels)


def ours(x, y, clustering: bool, threads: int) -> dict:
    import numpy as np
    from sklearn.metrics import normalized_mutual_info_score

    from pipeline.evaluation import knn
    from pipeline.evaluation.clustering import kmeans_labels
    from pipeline.evaluation.retrieval import retrieval_metrics

    _, counts = np.unique(y, return_counts=True)
    out = {"rerank_s": 0.0}
    exact = knn.exact_sq_distances

    def timed_exact(*args, **kwargs):
        start = time.perf_counter()
        try:
            return exact(*args, **kwargs)
        finally:
            out["rerank_s"] += time.perf_counter() - start

    knn.exact_sq_distances = timed_exact
    t = time.perf_counter()
    nn, _ = knn.nearest_neighbours(x, int(counts.max() - 1), threads=threads)
    ranked = time.perf_counter()
    m = retrieval_metrics(nn, y, [1])
    out["knn_s"] = time.perf_counter() - t
    out["metrics_s"] = time.perf_counter() - ranked
    out["search_s"] = ranked - t - out["rerank_s"]
    out.update(precision_at_1=m["precision_at_1"], r_precision=m["r_precision"], map_at_r=m["map_at_r"])
    if clustering:
        t = time.perf_counter()
        out["NMI"] = normalized_mutual_info_score(
            y, kmeans_labels(x, len(counts), seed=1234, niter=20, threads=threads)
        )
        out["cluster_s"] = time.perf_counter() - t
    return out


def pml(x, y, clustering: bool, threads: int) -> dict:
    import torch
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

    out = {}
    knn = ("precision_at_1", "r_precision", "mean_average_precision_at_r")
    calc = AccuracyCalculator(include=knn, k="max_bin_count", device=torch.device("cpu"))
    t = time.perf_counter()
    m = calc.get_accuracy(x, y)
    out["knn_s"] = time.perf_counter() - t
    out.update(
        precision_at_1=m["precision_at_1"], r_precision=m["r_precision"], map_at_r=m["mean_average_precision_at_r"]
    )
    if clustering:
        calc = AccuracyCalculator(include=("NMI",), device=torch.device("cpu"))
        t = time.perf_counter()
        out["NMI"] = calc.get_accuracy(x, y)["NMI"]
        out["cluster_s"] = time.perf_counter() - t
    return out


def products(x, y, clustering: bool, threads: int) -> dict:
    """The bound: every product x_i . x_j the kNN needs (x @ x.T, float32, in 4096-row blocks as a kNN would hold
    them) through numpy's BLAS on `threads` threads, at the machine's own kernels (faiss's search runs at those)."""

    t = time.perf_counter()
    for s in range(0, len(x), 4096):
        x[s : s + 4096] @ x.T
    seconds = time.perf_counter() - t
    return {"products_s": seconds, "gflops": 2 * len(x) ** 2 * x.shape[1] / seconds / 1e9}


def _child(name, args, queue):
    import os

    if name == "ours":  # its numerics pinned before numpy loads, as in every stage; PML as it runs by default
        import pipeline  # noqa: F401
    if name == "products":  # numpy's BLAS threads are read when it loads
        os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)
    x, y = make_data(args.n, args.dim, args.classes, args.seed)
    result = {"ours": ours, "pml": pml, "products": products}[name](x, y, not args.no_clustering, args.threads)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put(result)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--classes", type=int, default=11_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-clustering", action="store_true", help="skip the k-means/NMI part")
    parser.add_argument("--threads", type=int, default=2, help="threads for ours (PML: torch's and faiss's default)")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    results = {}
    for name in ("ours", "pml", "products"):
        queue = ctx.Queue()
        proc = ctx.Process(target=_child, args=(name, args, queue))
        proc.start()
        results[name] = queue.get()
        proc.join()
    print(f"data: {args.n} x {args.dim} random embeddings, {args.classes} classes; ours on {args.threads} threads")
    keys = ["knn_s"] + ([] if args.no_clustering else ["cluster_s"]) + ["peak_rss_mb"]
    print(f"{'':24s}{'ours':>12s}{'PML':>12s}{'PML/ours':>10s}")
    for key in keys:
        a, b = results["ours"][key], results["pml"][key]
        print(f"{key:24s}{a:12.2f}{b:12.2f}{b / a:10.2f}")
    for key in ("precision_at_1", "r_precision", "map_at_r") + (() if args.no_clustering else ("NMI",)):
        a, b = results["ours"][key], results["pml"][key]
        print(f"{key:24s}{a:12.6f}{b:12.6f}{'same' if abs(a - b) < 1e-6 else 'DIFFERENT':>10s}")
    r = results["ours"]
    print(
        f"ours, where the kNN metrics' {r['knn_s']:.2f} s go: candidate search (faiss) {r['search_s']:.2f} s, "
        f"exact re-ranking {r['rerank_s']:.2f} s, metrics {r['metrics_s']:.2f} s"
    )
    p = results["products"]
    print(
        f"the bound: x @ x.T through numpy's BLAS, {p['products_s']:.2f} s ({p['gflops']:.0f} GFLOP/s); ours reaches "
        f"{p['products_s'] / r['knn_s']:.2f} of it (search alone {p['products_s'] / r['search_s']:.2f}), "
        f"PML {p['products_s'] / results['pml']['knn_s']:.2f}"
    )
    print("(NMI: ours is a deterministic Lloyd k-means, PML's faiss k-means starts elsewhere: close, not equal)")


if __name__ == "__main__":
    main()
