"""Benchmark: an Adam step, torch's fused kernel (pinned: generic build) vs ExactAdam (training/exact_adam.py).

Times `--steps` steps of each on the default heads' parameter shapes (fixed random gradients, one thread) and
prints ms per step, best of `--repeats`, then checks that both ended on the same bits. With `--native` it also
times torch's fused Adam in a child process under DML_NATIVE_NUMERICS=1 (its AVX2 / AVX-512 build).

    python benchmarks/bench_adam.py --steps 300 --repeats 3 [--native]
"""

from __future__ import annotations

import pipeline  # noqa: F401  (first: it pins the CPU numerics before torch loads)

# isort: split
import argparse
import os
import subprocess
import sys
import time

import torch

from pipeline import numerics
from pipeline.training import exact_adam

# (network's parameters, objective's parameters at their own rate) per head; Linear weights are (out, in)
HEADS = {
    "digit (128-256-64)": ([(256, 128), (256,), (64, 256), (64,)], []),
    "emoji (1280-128 + 1708 proxies)": ([(128, 1280), (128,)], [(1708, 128)]),
}


def time_steps(make, head: str, steps: int, repeats: int) -> tuple[float, list[torch.Tensor]]:
    """Best ms per step of `make`'s optimiser on `head`'s shapes, and the parameters it ended on."""
    best, params = float("inf"), []
    for _ in range(repeats):
        generator = torch.Generator().manual_seed(0)
        net, objective = ([torch.randn(s, generator=generator).requires_grad_() for s in part] for part in HEADS[head])
        params = net + objective
        for p in params:
            p.grad = torch.randn(p.shape, generator=generator) * 1e-2
        groups = [{"params": net}] + ([{"params": objective, "lr": 1e-2}] if objective else [])
        optimizer = make(groups, lr=1e-3, weight_decay=1e-4)
        optimizer.step()  # the moments allocated outside the clock
        start = time.perf_counter()
        for _ in range(steps):
            optimizer.step()
        best = min(best, 1e3 * (time.perf_counter() - start) / steps)
    return best, params


def torch_fused(groups, **kwargs):
    return torch.optim.Adam(groups, fused=True, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--native", action="store_true", help="also time torch's fused Adam unpinned (a child)")
    parser.add_argument("--torch-only", action="store_true", help=argparse.SUPPRESS)  # the --native child
    args = parser.parse_args()
    if args.torch_only:
        print(" ".join(f"{time_steps(torch_fused, head, args.steps, args.repeats)[0]:.4f}" for head in HEADS))
        return
    native = [float("nan")] * len(HEADS)
    if args.native:
        child = [sys.executable, __file__, "--torch-only", f"--steps={args.steps}", f"--repeats={args.repeats}"]
        # without the pinned variables this process was started with (`import pipeline` set them)
        env = {k: v for k, v in os.environ.items() if k not in numerics.PINNED} | {numerics.NATIVE_SWITCH: "1"}
        native = [
            float(t) for t in subprocess.run(child, env=env, check=True, capture_output=True, text=True).stdout.split()
        ]
    print(f"Adam step, ms (best of {args.repeats} x {args.steps} steps); ExactAdam: {exact_adam.status()}")
    print(
        f"{'head':32s} {'params':>8s} {'torch pinned':>13s} {'ExactAdam':>10s} {'speed-up':>9s} {'torch native':>13s}"
    )
    for head, unpinned in zip(HEADS, native):
        theirs, reference = time_steps(torch_fused, head, args.steps, args.repeats)
        ours, params = time_steps(exact_adam.ExactAdam, head, args.steps, args.repeats)
        assert all(torch.equal(a, b) for a, b in zip(reference, params)), f"{head}: ExactAdam's bits differ"
        size = sum(p.numel() for p in params)
        print(f"{head:32s} {size:8d} {theirs:13.3f} {ours:10.3f} {theirs / ours:8.1f}x {unpinned:13.3f}")


if __name__ == "__main__":
    main()
