"""Benchmark: finetune-mode training throughput (images/s) of BN-Inception, ResNet50 and EfficientNet-Lite0
under the MLRC preset (224 px crops for EfficientNet-Lite0, its native size), with and without mixed precision,
on a synthetic CUB-sized image set, and the peak GPU memory of each (torch.cuda.max_memory_allocated).

Writes `--classes` x `--per-class` random JPEGs (CUB: 100 training classes, ~60 images each, ~500 x 375
pixels) into a temporary folder, then trains with the pipeline's own pieces (the preset's transforms,
MPerClassSampler batches, DataLoader workers, pipeline.training.Stepper) for `--steps` steps after
`--warmup` steps and prints images/s per backbone and precision. Random weights (no download). On a CPU
without CUDA the fp16/bf16 rows fall back to fp32 (autocast is CUDA-only here) and are skipped.

    python benchmarks/bench_finetune.py --steps 300 --workers 8          # on a GPU machine
    python benchmarks/bench_finetune.py --backbones efficientnet_lite0   # one backbone
    python benchmarks/bench_finetune.py --steps 3 --warmup 1 --classes 8 --per-class 8 --workers 0   # smoke test
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from pytorch_metric_learning.samplers import MPerClassSampler
from torch.utils.data import BatchSampler, DataLoader

from pipeline.compose import composed
from pipeline.config import params_from_dict
from pipeline.data.images import ManifestImages
from pipeline.data.manifest import build_manifest, read_manifest
from pipeline.methods import build_objective
from pipeline.models.backbones import build_backbone
from pipeline.models.embedder import Embedder, build_head
from pipeline.models.transforms import train_transform
from pipeline.runtime import choose_device
from pipeline.training import Stepper, make_optimizer


def synthetic_set(root: Path, classes: int, per_class: int) -> None:
    rng = np.random.default_rng(0)
    paths, labels = [], []
    for c in range(classes):
        for i in range(per_class):
            path = f"img/{c:03d}/{i:03d}.jpg"
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 255, (375, 500, 3), dtype=np.uint8)).save(root / path, quality=90)
            paths.append(path)
            labels.append(c)
    build_manifest(paths, np.array(labels), 2, np.array(["train"] * len(paths))).to_csv(
        root / "manifest.csv", index=False
    )


def throughput(params, manifest, device, steps: int, warmup: int) -> tuple[float, float]:
    """Training images/s over the timed steps and peak GPU memory in GiB (NaN on the CPU)."""
    torch.manual_seed(0)
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    t = params.train
    backbone = build_backbone(params.backbone)
    width = backbone.eval()(torch.zeros(1, 3, params.backbone.input_size, params.backbone.input_size)).shape[1]
    model = Embedder(backbone, build_head(width, t.embedding_dim, 0), "lipschitz", params.backbone.freeze_bn).to(device)
    rows = np.arange(len(manifest.table))
    labels = manifest.labels
    objective = build_objective(params, "ms", len(np.unique(labels)), t.embedding_dim).to(device)
    batch = t.classes_per_batch * t.images_per_class
    sampler = MPerClassSampler(
        labels, m=t.images_per_class, batch_size=batch, length_before_new_iter=batch * (steps + warmup)
    )
    loader = DataLoader(
        ManifestImages(manifest, rows, train_transform(params.backbone, 0)),
        batch_sampler=BatchSampler(sampler, batch, drop_last=True),
        num_workers=t.num_workers,
        pin_memory=device.type == "cuda",
        persistent_workers=t.num_workers > 0,
    )
    step = Stepper(model, objective, make_optimizer(model, objective, t), t, device)
    model.train()
    seen, start = 0, None
    for i, (x, y) in enumerate(loader):
        if i == warmup:
            if device.type == "cuda":
                torch.cuda.synchronize()
            start, seen = time.perf_counter(), 0
        step(x.to(device, non_blocking=True), y.to(device, non_blocking=True))
        seen += len(x)
    if device.type == "cuda":
        torch.cuda.synchronize()
    rate = seen / (time.perf_counter() - start)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else float("nan")
    return rate, peak


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--per-class", type=int, default=60)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--backbones", nargs="+", default=["bn_inception", "resnet50", "efficientnet_lite0"])
    args = parser.parse_args()
    base = composed(["dataset=cub"])  # CUB under the MLRC protocol (conf/protocol/mlrc.yaml)
    device = choose_device("auto")
    print(
        f"device {device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'CPU'}), "
        f"MLRC preset, batch 32, {args.steps} timed steps"
    )
    with tempfile.TemporaryDirectory() as tmp:
        synthetic_set(Path(tmp), args.classes, args.per_class)
        manifest = read_manifest(tmp)
        for name in args.backbones:
            for amp in ("fp32", "bf16", "fp16"):
                if amp != "fp32" and device.type != "cuda":
                    continue
                raw = copy.deepcopy(base)
                raw["backbone"].update(name=name, weights="")
                raw["train"].update(amp=amp, num_workers=args.workers)
                if name != "bn_inception":  # torchvision and EfficientNet-Lite weights: RGB input, ImageNet mean/std
                    raw["backbone"].update(input_space="rgb", mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
                if name == "efficientnet_lite0":
                    raw["backbone"].update(input_size=224)
                params = params_from_dict(raw)
                rate, peak = throughput(params, manifest, device, args.steps, args.warmup)
                print(f"{name:14s} amp {amp:5s} {rate:10.1f} images/s  peak GPU memory {peak:6.2f} GiB", flush=True)


if __name__ == "__main__":
    main()
