"""Benchmark: finetune-mode training throughput (images/s) of BN-Inception, ResNet50 and EfficientNet-Lite0 under the
MLRC preset (batch 32 = 8 classes x 4), against what the backbone itself can do.

Three kinds of rows per backbone and precision:
- ``ceiling``: the backbone + head forward, backward and Adam step on one batch already on the device, no loader,
  no loss of ours (the mean square of the embeddings), eager PyTorch, at batch 32 and at batch 128: what a model
  can do at MLRC's batch, and what the GPU does with enough work per launch;
- ``loader``: the training loader alone (synthetic JPEGs decoded, augmented, batched by ``--workers`` processes
  per model and ``--models`` models), images/s: the CPU side's bound;
- ``pipeline``: ``--models`` models trained at once, one process each, by the pipeline's own code
  (pipeline.training.loop.prepare: the preset's transforms, ClassBatchSampler batches, persistent DataLoader workers,
  the Stepper with channels-last batches and CUDA graphs, MS loss with its miner); images/s per model and all
  together (over the window in which every model steps), and that aggregate as a fraction of the batch-128 ceiling.

Synthetic CUB-sized images (`--classes` x `--per-class` JPEGs, 500 x 375): smooth random colour fields (noise
upsampled from 25 x 19), which JPEG-encode like photographs; white noise would make decoding the bottleneck
at about twice a photograph's cost. Random weights (no download). On a CPU only fp32 runs.

    python benchmarks/bench_finetune.py --params cub.yaml --models 1 2 4 --workers 3    # a GPU machine
    python benchmarks/bench_finetune.py --steps 3 --warmup 1 --classes 8 --per-class 8 --workers 0 \\
        --backbones tiny_cnn --models 1 2                                               # smoke test (CPU)
"""

from __future__ import annotations

import pipeline  # noqa: F401  (first: it pins the CPU numerics before numpy and torch load)

# isort: split
import argparse
import copy
import multiprocessing as mp
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf
from PIL import Image
from torch.utils.data import TensorDataset

from pipeline.config import params_from_dict
from pipeline.data.images import ManifestImages
from pipeline.data.manifest import build_manifest, read_manifest
from pipeline.infra.parallel import run_jobs
from pipeline.infra.runtime import choose_device
from pipeline.methods import build_objective
from pipeline.models.backbones import build_backbone
from pipeline.models.embedder import Embedder, build_head
from pipeline.models.transforms import train_transform
from pipeline.training.loop import FoldData, autocast, epoch_batches, prepare, to_device
from pipeline.training.runs import run_setup


def synthetic_set(root: Path, classes: int, per_class: int) -> None:
    """`classes` x `per_class` 500 x 375 JPEGs of smooth random colour fields, and their manifest."""
    rng = np.random.default_rng(0)
    paths, labels = [], []
    for c in range(classes):
        for i in range(per_class):
            path = f"img/{c:03d}/{i:03d}.jpg"
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            small = Image.fromarray(rng.integers(0, 255, (19, 25, 3), dtype=np.uint8))
            small.resize((500, 375), Image.Resampling.BICUBIC).save(root / path, quality=90)
            paths.append(path)
            labels.append(c)
    manifest = build_manifest(paths, np.array(labels), 2, np.array(["train"] * len(paths)))
    manifest.to_csv(root / "manifest.csv", index=False)


def model_for(params, device) -> Embedder:
    backbone = build_backbone(params.backbone)
    side = params.backbone.input_size
    width = backbone.eval()(torch.zeros(1, params.backbone.channels, side, side)).flatten(1).shape[1]
    return Embedder(backbone, build_head(width, params.train.embedding_dim, 0), "lipschitz", params.backbone.freeze_bn)


def synchronize(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def ceiling(params, device, batch: int, steps: int, warmup: int) -> float:
    """Backbone + head forward, backward and Adam on one batch on the device (eager): images/s."""
    torch.manual_seed(0)
    model = model_for(params, device).to(device)
    if device.type == "cuda":
        model.to(memory_format=torch.channels_last)
    model.train()
    side = params.backbone.input_size
    x = to_device(torch.randn(batch, params.backbone.channels, side, side), device)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=True)
    for i in range(warmup + steps):
        if i == warmup:
            synchronize(device)
            start = time.perf_counter()
        with autocast(device, params.train.amp):
            loss = model(x).float().pow(2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    synchronize(device)
    return batch * steps / (time.perf_counter() - start)


def images(params, root: str) -> FoldData:
    manifest = read_manifest(root)
    rows = np.arange(len(manifest.table))
    labels = manifest.labels
    none = TensorDataset(torch.zeros(0, 1), torch.zeros(0))
    transform = train_transform(params.backbone, params.train.augment_pad, params.data.background)
    return FoldData(ManifestImages(manifest, rows, transform, labels), labels, none, labels[:0], none, labels[:0])


def loader_rate(params, root: str, models: int, steps: int, device) -> float:
    """`models` training loaders (each with its worker processes) drained together, round-robin: images/s. They
    share the cores as the models' loaders do in training."""
    data = images(params, root)
    loaders = []
    for m in range(models):
        objective = build_objective(run_setup(params, "ms"), len(np.unique(data.train_labels)))
        loaders.append(iter(_infinite(epoch_batches(data, params.train, device, objective, m))))
    for loader in loaders:  # workers started, first batches in
        next(loader)
    start, seen = time.perf_counter(), 0
    for _ in range(steps):
        for loader in loaders:
            seen += len(next(loader)[0])
    return seen / (time.perf_counter() - start)


def _infinite(loader):
    while True:
        yield from loader


def _train_model(args) -> tuple[int, float, float, float]:
    """One model's process: warm up, wait for the others, step; (images, start, end, peak GiB)."""
    raw, root, seed, steps, warmup, barrier = args
    params = params_from_dict(raw)
    device = choose_device(params.train.device, "finetune")
    torch.manual_seed(seed)
    data = images(params, root)
    model = model_for(params, device)
    objective = build_objective(run_setup(params, "ms"), len(np.unique(data.train_labels)))
    step, loader, _ = prepare(model, objective, data, params.train, device, seed)
    model.train()
    batches = _infinite(loader)
    for _ in range(warmup):  # the first step captures the CUDA graph
        x, y = next(batches)
        step(to_device(x, device), y.to(device)).item()
    synchronize(device)
    barrier.wait()
    start, seen = time.time(), 0
    for _ in range(steps):
        x, y = next(batches)
        loss = step(to_device(x, device), y.to(device, non_blocking=True))
        seen += len(x)
    loss.item()
    synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else float("nan")
    return seen, start, time.time(), peak


def pipeline_rate(raw: dict, root: str, models: int, steps: int, warmup: int) -> tuple[float, float, float]:
    """`models` processes training at once, started as the train stage starts them (pipeline.infra.parallel.run_jobs,
    one thread each): (images/s per model, aggregate images/s, peak GiB of one)."""
    with mp.get_context("spawn").Manager() as manager:
        barrier = manager.Barrier(models)
        jobs = [(raw, root, m, steps, warmup, barrier) for m in range(models)]
        results = run_jobs(_train_model, jobs, models, 1, desc=f"{models} models")
    seen = sum(r[0] for r in results)
    # together: every model's images over the window from the first start to the last end
    rates = [r[0] / (r[2] - r[1]) for r in results]
    return float(np.mean(rates)), seen / (max(r[2] for r in results) - min(r[1] for r in results)), results[0][3]


def preset(base: dict, name: str, amp: str, workers: int) -> dict:
    raw = copy.deepcopy(base)
    raw["backbone"].update(name=name, weights="")
    raw["train"].update(amp=amp, num_workers=workers, workers=1)
    if name != "bn_inception":  # torchvision and EfficientNet-Lite weights: RGB input, ImageNet mean/std
        raw["backbone"].update(input_space="rgb", mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    if name == "efficientnet_lite0":
        raw["backbone"].update(input_size=224)
    if name == "tiny_cnn":
        raw["backbone"].update(input_size=64, resize=0)
    return raw


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=Path, help="composed `dataset=cub` params (default: composed here)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--classes", type=int, default=50)
    parser.add_argument("--per-class", type=int, default=20)
    parser.add_argument("--workers", type=int, default=3, help="loader processes per model")
    parser.add_argument("--models", type=int, nargs="+", default=[1, 2, 4], help="models trained at once")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--backbones", nargs="+", default=["resnet50", "bn_inception", "efficientnet_lite0"])
    args = parser.parse_args()
    if args.params:
        base = OmegaConf.to_container(OmegaConf.load(args.params))
    else:
        from pipeline.compose import composed

        base = composed(["dataset=cub"])  # CUB under the MLRC protocol (conf/protocol/mlrc.yaml)
    base["train"]["mode"] = "finetune"
    device = choose_device("auto", "finetune")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"device {device} ({name}), MLRC preset, {args.steps} timed steps; images/s", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as root:
        synthetic_set(Path(root), args.classes, args.per_class)
        for backbone in args.backbones:
            for amp in args.precisions:
                if amp != "fp32" and device.type != "cuda":
                    continue
                raw = preset(base, backbone, amp, args.workers)
                params = params_from_dict(raw)
                top = {b: ceiling(params, device, b, max(args.steps // 4, 5), args.warmup) for b in (32, 128)}
                row = f"{backbone:18s} {amp:5s}"
                print(f"{row} ceiling   batch 32 {top[32]:8.0f}   batch 128 {top[128]:8.0f}", flush=True)
                for models in args.models:
                    feed = loader_rate(params, root, models, max(args.steps // 4, 3), device)
                    one, together, peak = pipeline_rate(raw, root, models, args.steps, args.warmup)
                    rows.append((backbone, amp, models, one, together, together / top[128], feed, peak))
                    print(
                        f"{row} pipeline  {models} model(s): {one:8.0f} each, {together:8.0f} together "
                        f"({together / top[128]:.2f} of the batch-128 ceiling; loader alone {feed:8.0f}), "
                        f"peak {peak:5.2f} GiB each",
                        flush=True,
                    )
    print("\nbackbone           amp   models  each  together  /ceiling128  loader")
    for r in rows:
        print(f"{r[0]:18s} {r[1]:5s} {r[2]:6d} {r[3]:6.0f} {r[4]:9.0f} {r[5]:12.2f} {r[6]:7.0f}")


if __name__ == "__main__":
    main()
