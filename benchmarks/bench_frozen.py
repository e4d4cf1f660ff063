"""Benchmark: milliseconds per step and per epoch of frozen-head training, by part, beside a plain loop.

Trains runs of the pipeline (pipeline.training.experiment.train_fold: its own data, model, objective and loop) on a
feature cache for a fixed number of epochs (patience above the cap, so every run trains them all) and times each part
from the outside (wrappers around the loop's pieces; nothing in the pipeline changes). The parts are exclusive (a part's
time excludes the parts nested in it), so they add up to the epoch:
- batches: drawing and indexing the training batches;
- forward: the network on a training batch;
- loss and miner: the objective's batch loss without the forward pass;
- backward, optimiser: autograd's backward pass, the optimiser's step;
- step, other: the rest of a step (zero_grad, the finiteness check, gradient scaling and clipping);
- validation: embedding the validation fold and its MAP@R;
- method hooks: the objective's own work between epochs (CCP's proxies and sub-problems, PROFS's projections);
- rest: the epoch's wall time minus the above (the loop itself, logging, snapshots of the best weights).
Epoch 1 (first optimiser, first miner call) is left out of the means.

Beside it, with ``--reference``, the loop a user would write with pytorch-metric-learning for the first run if it
is a baseline with a loss and a miner: the same head, loss, miner and Adam, ``MPerClassSampler`` batches of the same
shape and count through a DataLoader, validation MAP@R with its ``AccuracyCalculator`` every epoch.

    python benchmarks/bench_frozen.py                                   # digit default: data/features, fold 0
    python benchmarks/bench_frozen.py --params P --features F --data D  # another default's features (emoji)
    python benchmarks/bench_frozen.py --stage ms      # the ms train stage's CPU beyond its fits (params.yaml)
    python benchmarks/bench_frozen.py --batched 8     # 8 heads as one computation: exact? how much faster?
    python benchmarks/bench_frozen.py --torch-adam    # with torch's fused Adam instead of the exact C loop (before)
"""

from __future__ import annotations

import pipeline  # noqa: F401  (first: it pins the CPU numerics before numpy and torch load)

# isort: split
import argparse
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from _timing import input_arguments, raw_params

from pipeline.data.manifest import read_manifest
from pipeline.methods.objective import Objective
from pipeline.models.embedder import Embedder
from pipeline.params.root import params_from_dict
from pipeline.runs import run_setup
from pipeline.training import loop as training
from pipeline.training import stepping
from pipeline.training.exact_adam import ExactAdam
from pipeline.training.experiment import load_features, train_fold

PARTS = [
    "batches",
    "forward",
    "loss and miner",
    "backward",
    "optimiser",
    "step, other",
    "validation",
    "method hooks",
]


class Clock:
    """Exclusive seconds per (epoch, part): a part's time excludes the parts timed inside it."""

    def __init__(self):
        self.parts: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.epoch_ends: list[float] = []
        self.steps: dict[int, int] = defaultdict(int)
        self._nested: list[float] = []
        self.names: list[str] = []

    @property
    def epoch(self) -> int:
        return len(self.epoch_ends)

    @contextmanager
    def part(self, name: str):
        start = time.perf_counter()
        self._nested.append(0.0)
        self.names.append(name)
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            inner = self._nested.pop()
            self.names.pop()
            self.parts[self.epoch][name] += elapsed - inner
            if self._nested:
                self._nested[-1] += elapsed


def timed(clock: Clock, name: str, fn, when=lambda *a: True):
    def wrapper(*args, **kwargs):
        if not when(*args):
            return fn(*args, **kwargs)
        with clock.part(name):
            return fn(*args, **kwargs)

    return wrapper


def instrument(clock: Clock) -> None:
    """Wrap the loop's pieces (module docstring) so that they report to `clock`."""
    stepper, knn = training.Stepper.__call__, training.map_at_r

    def step(self, x, y):
        clock.steps[clock.epoch] += 1
        with clock.part("step, other"):
            return stepper(self, x, y)

    def validation_knn(embeddings, labels, *args, **kwargs):
        with clock.part("validation"):
            out = knn(embeddings, labels, *args, **kwargs)
        clock.epoch_ends.append(time.perf_counter())
        return out

    training.Stepper.__call__ = step
    training.map_at_r = validation_knn
    outside_hooks = lambda *a: "method hooks" not in clock.names  # noqa: E731  (a hook's passes are its own)
    training.TrainContext.embed = timed(clock, "validation", training.TrainContext.embed, when=outside_hooks)
    training.TrainContext.inputs = timed(clock, "batches", training.TrainContext.inputs)
    Embedder.forward = timed(clock, "forward", Embedder.forward, when=lambda m, *a: m.training)
    torch.Tensor.backward = timed(clock, "backward", torch.Tensor.backward)
    for cls in _objective_classes():
        if "batch_loss" in vars(cls):
            cls.batch_loss = timed(clock, "loss and miner", vars(cls)["batch_loss"])
    for name in ("begin", "end_epoch", "finish"):
        for cls in _objective_classes():
            if name in vars(cls):
                setattr(cls, name, timed(clock, "method hooks", vars(cls)[name]))
    for cls in (torch.optim.Adam, ExactAdam, torch.optim.SGD, torch.optim.RMSprop):
        cls.step = timed(clock, "optimiser", vars(cls)["step"])
    draw = training.epoch_batches
    training.epoch_batches = lambda *args: _TimedBatches(draw(*args), clock)


def _objective_classes() -> list[type]:
    found, todo = [], [Objective]
    import pipeline.methods  # noqa: F401  (registers every objective class)

    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


class _TimedBatches:
    """An epoch's batches (training.epoch_batches), each draw timed."""

    def __init__(self, batches, clock: Clock):
        self.batches, self.clock = batches, clock

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        batches = iter(self.batches)
        while True:
            with self.clock.part("batches"):
                batch = next(batches, None)
            if batch is None:
                return
            yield batch


def fixed_epochs(raw: dict, epochs: int) -> dict:
    """Every run trains exactly `epochs` epochs: the cap at `epochs`, patience above it, one process."""
    raw["train"].update(max_epochs=epochs, patience=epochs + 1, workers=1)
    raw["ccp"]["max_subproblems"] = max(raw["ccp"]["max_subproblems"], epochs)
    return raw


def bench_run(params, method, manifest, features, epochs: int) -> dict:
    clock = Clock()
    instrument_once(clock)
    start = time.perf_counter()
    result = train_fold(run_setup(params, method), 0, manifest, features, torch.device("cpu"), test=False)
    walls = np.diff([start, *clock.epoch_ends])
    later = range(2, len(walls))
    row = {"run": method, "epochs": len(walls) - 1, "best val MAP@R": result.fit.best_val_map_at_r}
    steps = np.mean([clock.steps[e] for e in later])
    for name in PARTS:
        row[name] = 1e3 * np.mean([clock.parts[e][name] for e in later])
    row["epoch"] = 1e3 * np.mean([walls[e] for e in later])
    row["rest"] = row["epoch"] - sum(row[p] for p in PARTS)
    row["step"] = sum(row[p] for p in PARTS[:6]) / steps
    return row


_CLOCK: list[Clock] = []


def instrument_once(clock: Clock) -> None:
    """Instrument at the first run; later runs swap in their own clock."""
    if not _CLOCK:
        _CLOCK.append(clock)
        proxy = _ClockProxy()
        instrument(proxy)  # type: ignore[arg-type]
    _CLOCK[0] = clock


class _ClockProxy:
    """Forwards to the current run's clock (the wrappers are installed once)."""

    def __getattr__(self, name):
        return getattr(_CLOCK[0], name)


def arithmetic_floor(params, in_dim: int, validation_rows: int, repeats: int = 50) -> dict:
    """The epoch's arithmetic without any framework: per step the head's matrix products forward and backward
    (torch.addmm / mm on the batch) and the pipeline's Adam update, and the validation fold through the head, all in the
    process's (pinned) kernels; what no loop, loss or batching can go below."""
    t = params.train
    widths = [in_dim, t.head_hidden, t.embedding_dim] if t.head_hidden else [in_dim, t.embedding_dim]
    batch = t.classes_per_batch * t.images_per_class
    weights = [torch.nn.Parameter(0.1 * torch.randn(b, a)) for a, b in zip(widths, widths[1:])]
    biases = [torch.nn.Parameter(torch.zeros(b)) for b in widths[1:]]
    adam = stepping.make_adam([*weights, *biases], lr=t.lr)  # the pipeline's Adam (torch's with --torch-adam)
    x, val = torch.randn(batch, in_dim), torch.randn(validation_rows, in_dim)
    for p in adam.param_groups[0]["params"]:
        p.grad = torch.randn_like(p)

    def products(h):
        for w, b in zip(weights, biases):
            out = torch.addmm(b, h, w.T)
            out.T @ h, out @ w  # the weight and input gradients' products (a gradient of the output's shape)
            h = out

    def through(h):
        for w, b in zip(weights, biases):
            h = torch.addmm(b, h, w.T)

    def clock(fn) -> float:
        fn()
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        return (time.perf_counter() - start) / repeats

    with torch.no_grad():
        step = clock(lambda: products(x)) + clock(adam.step)
        validation = clock(lambda: through(val))
    return {"run": "arithmetic floor", "epoch": 1e3 * (t.steps_per_epoch * step + validation)}


def reference_loop(params, method, features, rows, epochs: int) -> dict:
    """The plain pytorch-metric-learning loop (module docstring) for a baseline with a loss and a miner."""
    from pytorch_metric_learning import losses, miners, samplers
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

    from pipeline.models.embedder import build_head

    cfg = params.baselines[method]
    if cfg.loss.name != "multi_similarity" or cfg.miner.name != "multi_similarity":
        raise SystemExit(f"--reference: {method} is not a multi-similarity baseline (the reference loop's loss)")
    t = params.train
    train, val = rows[0], rows[1]
    x = torch.from_numpy(features.features)
    labels = torch.from_numpy(features.labels)
    torch.manual_seed(0)
    head = build_head(x.shape[1], t.embedding_dim, t.head_hidden)
    loss_fn = losses.MultiSimilarityLoss(alpha=cfg.loss.alpha, beta=cfg.loss.beta, base=cfg.loss.base)
    miner = miners.MultiSimilarityMiner(epsilon=cfg.miner.epsilon)
    optimizer = torch.optim.Adam(head.parameters(), lr=t.lr, weight_decay=t.weight_decay)
    batch = t.classes_per_batch * t.images_per_class
    sampler = samplers.MPerClassSampler(
        labels[train], t.images_per_class, batch_size=batch, length_before_new_iter=t.steps_per_epoch * batch
    )
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x[train], labels[train]), batch_size=batch, sampler=sampler
    )
    calculator = AccuracyCalculator(include=("mean_average_precision_at_r",), k="max_bin_count")
    walls = []
    for _ in range(epochs):
        start = time.perf_counter()
        head.train()
        for xb, yb in loader:
            emb = torch.nn.functional.normalize(head(xb), dim=1)
            loss = loss_fn(emb, yb, miner(emb, yb))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        head.eval()
        with torch.no_grad():
            emb = torch.nn.functional.normalize(head(x[val]), dim=1)
        calculator.get_accuracy(emb, labels[val])
        walls.append(time.perf_counter() - start)
    return {"run": f"{method} (plain loop)", "epochs": epochs, "epoch": 1e3 * np.mean(walls[1:])}


def stage_overhead(params_file: str | None, run: str, data: str, features: str) -> None:
    """A train stage's CPU-seconds (process and its workers, `python -m stages.train` as dvc.yaml runs it) against
    its models' own fits (pipeline.training.loop.fit timed here, in one warm process, the same models): the rest is
    process start, imports, the test embeddings and evaluation, writing."""
    import json
    import resource
    import subprocess
    import sys
    import tempfile

    from pipeline.config import apply_values
    from pipeline.params.root import load_params
    from pipeline.runs import model_ids

    params_file = params_file or "params.yaml"
    tuned = Path("data/tuned") / f"{run}.json"
    params = load_params(params_file)
    if tuned.is_file():
        params = apply_values(params, json.loads(tuned.read_text())["values"], source=str(tuned))
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "stages.train", "--params", params_file, "--method", run, "--data", data]
        cmd += ["--features", features, "--out", f"{tmp}/models", "--train-logs", f"{tmp}/logs"]
        cmd += ["--tuned", str(tuned)] if tuned.is_file() else []
        before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
        wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    stage_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    fits, fit = [], training.fit

    def timed_fit(*args, **kwargs):
        start = time.process_time()
        try:
            return fit(*args, **kwargs)
        finally:
            fits.append(time.process_time() - start)

    training.fit = timed_fit
    import pipeline.training.experiment as experiment

    experiment.fit = timed_fit
    manifest, cache = read_manifest(data), load_features(features)
    for fold, seed in model_ids(params):
        train_fold(run_setup(params, run), fold, manifest, cache, torch.device("cpu"), seed, test=False)
    print(
        f"train stage {run}: {wall:.1f} s wall, {stage_cpu:.1f} CPU-s; its {len(fits)} fits {sum(fits):.1f} CPU-s; "
        f"beyond the fits {stage_cpu - sum(fits):.1f} CPU-s ({100 * (1 - sum(fits) / stage_cpu):.1f}% of the stage)"
    )


def batched_bound(params, in_dim: int, models: int, steps: int = 200) -> None:
    """What training `models` heads as one computation could gain, and whether it is exact: the run's head (its
    shape from params) for `models` models stacked, forward through torch.baddbmm, a stand-in loss per model (the
    mean log-sum-exp of the in-batch similarities), backward, one fused Adam step over the stacked weights; against
    the same for each model apart (torch's Linear, its own Adam). Prints whether losses, gradients and updated
    weights are bit-identical, and the milliseconds of a step of all models both ways, and of Adam alone."""
    t = params.train
    widths = [in_dim, t.head_hidden, t.embedding_dim] if t.head_hidden else [in_dim, t.embedding_dim]
    batch = t.classes_per_batch * t.images_per_class
    torch.manual_seed(0)
    x = torch.randn(models, batch, in_dim)
    shapes = [s for a, b in zip(widths, widths[1:]) for s in ((b, a), (b,))]
    stacked = [torch.nn.Parameter(0.1 * torch.randn(models, *s)) for s in shapes]
    apart = [[torch.nn.Parameter(p.detach()[m].clone()) for p in stacked] for m in range(models)]
    optimisers = [torch.optim.Adam(stacked, lr=t.lr, fused=True)]
    optimisers += [torch.optim.Adam(ps, lr=t.lr, fused=True) for ps in apart]

    def head(ps, h, stack):
        for i, (w, b) in enumerate(zip(ps[::2], ps[1::2])):
            h = torch.baddbmm(b[:, None, :], h, w.transpose(1, 2)) if stack else torch.nn.functional.linear(h, w, b)
            h = torch.relu(h) if i < len(ps) // 2 - 1 else h
        return torch.nn.functional.normalize(h, dim=-1)

    def step_stacked():
        e = head(stacked, x, True)
        loss = (e @ e.transpose(1, 2)).logsumexp(-1).mean(-1)
        optimisers[0].zero_grad()
        loss.sum().backward()
        optimisers[0].step()
        return loss.detach()

    def step_apart():
        out = []
        for m, ps in enumerate(apart):
            e = head(ps, x[m], False)
            loss = (e @ e.T).logsumexp(-1).mean()
            optimisers[m + 1].zero_grad()
            loss.backward()
            optimisers[m + 1].step()
            out.append(loss.detach())
        return torch.stack(out)

    same = torch.equal(step_stacked(), step_apart())
    same &= all(torch.equal(p.grad[m], q.grad) for m, ps in enumerate(apart) for p, q in zip(stacked, ps))
    same &= all(torch.equal(p.detach()[m], q.detach()) for m, ps in enumerate(apart) for p, q in zip(stacked, ps))
    seconds = {}
    for name, fn in (
        ("stacked step", step_stacked),
        ("separate steps", step_apart),
        ("stacked Adam", optimisers[0].step),
        ("separate Adams", lambda: [o.step() for o in optimisers[1:]]),
    ):
        start = time.perf_counter()
        for _ in range(steps):
            fn()
        seconds[name] = (time.perf_counter() - start) / steps
    print(
        f"{models} heads {' -> '.join(map(str, widths))}, batch {batch}: stacked bit-identical to separate "
        f"(losses, gradients, Adam's update): {same}"
    )
    for name, s in seconds.items():
        print(f"{name:16s} {1e3 * s:8.2f} ms for {models} models ({1e3 * s / models:.3f} ms a model)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    input_arguments(parser)
    parser.add_argument("--epochs", type=int, default=24)
    parser.add_argument("--no-reference", dest="reference", action="store_false")
    parser.add_argument("--stage", metavar="RUN", help="instead: a train stage's CPU time beyond its models' fits")
    parser.add_argument("--batched", metavar="M", type=int, help="instead: M heads as one computation (exact?)")
    parser.add_argument("--torch-adam", action="store_true", help="torch's fused Adam, not the exact C loop (before)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.torch_adam:  # the optimiser before pipeline/training/exact_adam.py (the same bits, its own speed)
        stepping.make_adam = lambda groups, **kwargs: torch.optim.Adam(groups, fused=True, **kwargs)
    if args.stage:
        return stage_overhead(args.params and str(args.params), args.stage, args.data, args.features)
    raw = raw_params(args.params)
    params = params_from_dict(fixed_epochs(raw, args.epochs))
    manifest, features = read_manifest(args.data), load_features(args.features)
    if args.batched:
        return batched_bound(params, features.features.shape[1], args.batched)
    rows = [bench_run(params, run, manifest, features, args.epochs) for run in args.runs]
    if args.reference:
        from pipeline.training.experiment import fold_rows

        fold = fold_rows(manifest, 0)
        rows.insert(1, reference_loop(params, args.runs[0], features, fold, args.epochs))
        rows.append(arithmetic_floor(params, features.features.shape[1], len(fold[1])))
    t = params.train
    print(
        f"{features.features.shape[1]}-D features, head hidden {t.head_hidden} -> {t.embedding_dim}, "
        f"{t.steps_per_epoch} steps x {t.classes_per_batch * t.images_per_class}, fold 0, {args.epochs} epochs, "
        f"1 thread; milliseconds (epochs 2 on)"
    )
    columns = ["epoch", "step", *PARTS, "rest"]
    print(f"{'run':24s}" + "".join(f"{c:>15s}" for c in columns))
    for row in rows:
        cells = "".join(f"{row[c]:15.2f}" if c in row else f"{'':>15s}" for c in columns)
        print(f"{row['run']:24s}{cells}")
    print("share of the epoch (%)")
    for row in rows:
        if "step" in row:
            cells = "".join(f"{100 * row[c] / row['epoch']:15.1f}" for c in [*PARTS, "rest"])
            print(f"{row['run']:24s}{'':30s}{cells}")


if __name__ == "__main__":
    main()
