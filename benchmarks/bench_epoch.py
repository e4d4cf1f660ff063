"""Benchmark: where a finetune epoch's time goes (training steps, validation, loader start-up, the rest).

Trains one finetune-mode model (pipeline.training.experiment.train_fold: the pipeline's own data, model, objective and
loop) on the digit-pair images for a few epochs and times, per epoch, from the outside (wrappers around the
loop's pieces, nothing in the pipeline changes):
- steps: the optimisation steps (pipeline.training.loop.Stepper; the device synchronised around each);
- loader: waiting for training batches, its start-up (the first batch of an epoch) shown apart;
- device augmentation: a batch's per-pixel work on the training device (``train.augment_on: device``, the default:
  pipeline/models/device_augment.py, reading the pixel store the embed stage would write, built here first);
- validation: embedding the validation fold (TrainContext.embed) and its MAP@R (the kNN);
- rest: the epoch's wall time minus the above (snapshots of the best weights, logging, the objective's hooks).
Epoch 0 (validation before training) and the first epoch (loader workers, cuDNN autotuning, graph capture) are
printed apart from the mean of the later epochs; the last line is the later epochs' ``epoch/steps <ratio>``.

    python benchmarks/bench_epoch.py                                   # CPU: tiny CNN on the 32 px digit pairs
    python benchmarks/bench_epoch.py --backbone resnet50 --size 64 --amp bf16 --num-workers 4   # a GPU
    python benchmarks/bench_epoch.py --params params.yaml ...          # params composed elsewhere (no DVC here)
"""

from __future__ import annotations

import pipeline  # noqa: F401  (first: it pins the CPU numerics before numpy and torch load)

# isort: split
import argparse
import copy
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from _timing import raw_params
from torch.utils.data import DataLoader

from pipeline.data.manifest import read_manifest
from pipeline.data.pixels import PixelStore, write_pixel_store
from pipeline.datasets.digit_pairs import write_digit_pairs
from pipeline.infra.runtime import choose_device
from pipeline.models.transforms import pixel_mode
from pipeline.params.root import params_from_dict
from pipeline.runs import run_setup
from pipeline.training import loop as training
from pipeline.training.experiment import train_fold


class Clock:
    """Seconds per (epoch, part), with the device synchronised at every reading."""

    def __init__(self, device: torch.device):
        self.device = device
        self.parts: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.epoch_ends: list[float] = []
        self.validating = False

    def now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    @property
    def epoch(self) -> int:
        return len(self.epoch_ends)

    @contextmanager
    def part(self, name: str):
        start = self.now()
        try:
            yield
        finally:
            self.parts[self.epoch][name] += self.now() - start


def instrument(clock: Clock) -> None:
    """Wrap the loop's pieces (module docstring) so that they report to `clock`."""
    step, embed, knn, iterate = training.Stepper.__call__, training.TrainContext.embed, training.map_at_r, None
    on_device = training.FoldData.train_inputs

    def timed_step(self, x, y):
        with clock.part("steps"):
            return step(self, x, y)

    def timed_on_device(self, batch, device):
        with clock.part("device augmentation"):
            return on_device(self, batch, device)

    def timed_embed(self, dataset, **kwargs):
        clock.validating = True
        try:
            with clock.part("validation embedding"):
                return embed(self, dataset, **kwargs)
        finally:
            clock.validating = False

    def timed_knn(embeddings, labels, *args, **kwargs):
        with clock.part("validation kNN"):
            out = knn(embeddings, labels, *args, **kwargs)
        clock.epoch_ends.append(clock.now())
        return out

    iterate = DataLoader.__iter__

    def timed_iter(loader):
        if clock.validating:
            return iterate(loader)
        return _TimedBatches(iterate(loader), clock)

    training.Stepper.__call__ = timed_step
    training.FoldData.train_inputs = timed_on_device
    training.TrainContext.embed = timed_embed
    training.map_at_r = timed_knn
    DataLoader.__iter__ = timed_iter


class _TimedBatches:
    def __init__(self, batches, clock: Clock):
        self.batches, self.clock, self.first = batches, clock, True

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.batches)

    def __next__(self):
        with self.clock.part("loader start-up" if self.first else "loader wait"):
            batch = next(self.batches)
        self.first = False
        return batch


def finetune_params(raw: dict, args) -> dict:
    raw = copy.deepcopy(raw)
    raw["backbone"].update(name=args.backbone, weights="", input_size=args.size, resize=0, channels=3)
    raw["train"].update(
        mode="finetune",
        device=args.device,
        amp=args.amp,
        num_workers=args.num_workers,
        max_epochs=args.epochs,
        patience=args.epochs + 1,
        workers=1,
        augment_on=args.augment_on,
    )
    return raw


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=Path, help="a composed params file (default: conf/ composed here)")
    parser.add_argument("--backbone", default="tiny_cnn")
    parser.add_argument("--size", type=int, default=32, help="input side in pixels (the digit pairs are 32 x 64)")
    parser.add_argument("--method", default="ms")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--amp", default="fp32")
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--augment-on", choices=["device", "loader"], default="device", help="train.augment_on")
    args = parser.parse_args()
    raw = raw_params(args.params)
    params = params_from_dict(finetune_params(raw, args))
    device = choose_device(params.train.device, params.train.mode)
    clock = Clock(device)
    instrument(clock)
    with tempfile.TemporaryDirectory() as tmp:
        d = params.data
        write_digit_pairs(Path(tmp), d.num_classes, d.images_per_class, d.train_instance_fraction, 4, params.seed)
        manifest = read_manifest(tmp)
        store = None
        if params.train.augment_on == "device":  # the embed stage's decode-once store
            (Path(tmp) / "store").mkdir()
            write_pixel_store(manifest, pixel_mode(params.backbone), d.background, Path(tmp) / "store")
            store = PixelStore(Path(tmp) / "store")
        start = clock.now()
        result = train_fold(run_setup(params, args.method), 0, manifest, store, device, test=False)
    ends = [start, *clock.epoch_ends]
    walls = np.diff(ends)  # epoch 0: the validation before training (and everything before it)
    parts = ["steps", "loader start-up", "loader wait", "device augmentation", "validation embedding", "validation kNN"]
    t = params.train
    print(
        f"{args.backbone} {args.size} px, {args.method}, {device} amp {t.amp}, {t.num_workers} loader workers, "
        f"augment_on {t.augment_on}, "
        f"{t.steps_per_epoch} steps x {t.classes_per_batch * t.images_per_class} images, "
        f"{len(manifest.rows('train', 0, validation=True))} validation images; {len(walls) - 1} epochs, "
        f"best val MAP@R {result.fit.best_val_map_at_r:.4f}"
    )
    print(f"{'seconds':24s} {'epoch 0':>9s} {'epoch 1':>9s} {'later (mean)':>13s}")
    later = range(2, len(walls))
    for name in [*parts, "rest", "epoch"]:
        values = []
        for e in range(len(walls)):
            known = sum(clock.parts[e][p] for p in parts)
            values.append(walls[e] if name == "epoch" else walls[e] - known if name == "rest" else clock.parts[e][name])
        mean = np.mean([values[e] for e in later]) if len(later) else float("nan")
        print(f"{name:24s} {values[0]:9.3f} {values[1]:9.3f} {mean:13.3f}")
    steps = np.mean([clock.parts[e]["steps"] for e in later])
    print(f"epoch/steps {np.mean([walls[e] for e in later]) / steps:.2f}")


if __name__ == "__main__":
    main()
