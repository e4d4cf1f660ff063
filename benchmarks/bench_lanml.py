"""Benchmark: LANML- (projected gradient) against metric-learn's LMNN on the same data, in one run.

The ANML paper reports LANML about an order of magnitude faster than LMNN. This fits both on the
whole z-scored Iris and Wine (fixed hyperparameters: LANML- lambda 0.5, gamma1 -1, gamma2 2, 10
similar neighbours; LMNN 3 target neighbours, regularisation 0.5), best of --repeats, and prints the
times and the LMNN / LANML- ratio. With --cvxpy it also solves LANML- exactly with cvxpy (Clarabel,
then SCS; minutes at this size) and prints the objective gap to the projected gradient.

    python benchmarks/bench_lanml.py --repeats 3 [--cvxpy]
"""

from __future__ import annotations

import argparse
import time

from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler

from pipeline.linear.lanml import LANMLProblem, neighbourhoods, solve_cvxpy, solve_projected_gradient
from pipeline.linear.methods import fit_lmnn


def best_time(fn, repeats: int):
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cvxpy", action="store_true", help="also solve exactly with cvxpy (slow)")
    args = parser.parse_args()
    print(f"{'data':6s}{'n x d':>10s}{'LANML- s':>10s}{'LMNN s':>9s}{'LMNN/LANML-':>13s}")
    for loader in (load_iris, load_wine):
        x, y = loader(return_X_y=True)
        x = StandardScaler().fit_transform(x)
        problem = LANMLProblem(x, neighbourhoods(x, y, 10), gamma1=-1.0, gamma2=2.0, lam=0.5)
        t_lanml, m = best_time(lambda: solve_projected_gradient(problem), args.repeats)
        t_lmnn, _ = best_time(lambda: fit_lmnn(x, y, regularization=0.5, n_neighbors=3), args.repeats)
        name = loader.__name__.removeprefix("load_")
        print(f"{name:6s}{f'{x.shape[0]} x {x.shape[1]}':>10s}{t_lanml:10.3f}{t_lmnn:9.3f}{t_lmnn / t_lanml:13.2f}")
        if args.cvxpy:
            t_cvx, exact = best_time(lambda: solve_cvxpy(problem), 1)
            gap = (problem.objective(m) - problem.objective(exact)) / abs(problem.objective(exact))
            print(f"      cvxpy {t_cvx:.1f} s, objective {problem.objective(exact):.6f}; "
                  f"projected gradient {problem.objective(m):.6f} (relative gap {gap:+.2e})")


if __name__ == "__main__":
    main()
