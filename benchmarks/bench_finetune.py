"""Benchmark: finetune-mode training throughput (images/s) of BN-Inception, ResNet50 and EfficientNet-Lite0 under the
MLRC preset (batch 32 = 8 classes x 4), against what the backbone itself can do.

Rows per backbone and precision:
- ``ceiling``: the backbone + head forward, backward and Adam step on one batch already on the device, no loader,
  no loss of ours (the mean square of the embeddings), eager PyTorch, at batch 32 and at batch 128: what a model
  can do at MLRC's batch, and what the GPU does with enough work per launch;
- ``loader``: the training loader alone (``--workers`` processes per model, ``--models`` models), images/s: the CPU
  side's bound. With ``train.augment_on: device`` (the default) a loader process copies each crop out of the
  decode-once pixel store and the per-pixel work runs on the device (pipeline/models/device_augment.py): its
  ``device half`` row times that work on this machine's training device; with ``loader`` PIL decodes and augments;
- ``pipeline``: ``--models`` models trained at once, one process each, by the pipeline's own code
  (pipeline.training.loop.prepare: the preset's transforms, ClassBatchSampler batches, persistent DataLoader workers,
  the Stepper with channels-last batches and CUDA graphs, MS loss with its miner); images/s per model and all
  together (over the window in which every model steps), and that aggregate as a fraction of the batch-128 ceiling.

``--loader-only``: only the loader rows, for both values of ``train.augment_on``, beside the plain torchvision loop
a user would write (PIL decode, RandomResizedCrop 227, flip, ToTensor, Normalize) in the same run; no ceiling, so it
runs on a CPU. Rates there are per loader process (``--workers 0``: the loading runs in the measuring process).

Synthetic CUB-sized images (`--classes` x `--per-class` JPEGs, 500 x 375): smooth random colour fields (noise
upsampled from 25 x 19), which JPEG-encode like photographs; white noise would make decoding the bottleneck
at about twice a photograph's cost. Random weights (no download). On a CPU only fp32 runs.

    python benchmarks/bench_finetune.py --params cub.yaml --models 1 2 4 --workers 3    # a GPU machine
    python benchmarks/bench_finetune.py --loader-only --backbones resnet50 --workers 0   # the loader on 2 CPU cores
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

from pipeline.data.manifest import build_manifest, read_manifest
from pipeline.data.pixels import PixelStore, write_pixel_store
from pipeline.infra.parallel import run_jobs
from pipeline.infra.runtime import choose_device
from pipeline.methods import build_objective
from pipeline.models.backbones import build_backbone
from pipeline.models.embedder import Embedder, build_head
from pipeline.models.transforms import pixel_mode
from pipeline.params.root import params_from_dict
from pipeline.runs import run_setup
from pipeline.training.experiment import image_data
from pipeline.training.inference import autocast, to_device
from pipeline.training.loop import FoldData, epoch_batches, prepare

STORE = "store"  # the synthetic set's pixel store, beside its images


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


def pixel_store(root: Path, mode: str) -> float:
    """The embed stage's decode-once store of the synthetic set, in `mode`; images/s of writing it."""
    manifest = read_manifest(root)
    folder = root / f"{STORE}_{mode}"
    folder.mkdir(exist_ok=True)
    start = time.perf_counter()
    write_pixel_store(manifest, mode, "white", folder)
    return len(manifest.table) / (time.perf_counter() - start)


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
    """Every image as training data, as the train stage builds it (pipeline.training.experiment.image_data)."""
    manifest = read_manifest(root)
    rows = np.arange(len(manifest.table))
    store = None
    if params.train.augment_on == "device":
        store = PixelStore(Path(root) / f"{STORE}_{pixel_mode(params.backbone)}")
    return image_data(manifest, run_setup(params, "ms"), (rows, rows[:0], rows[:0]), store)


def plain_rate(params, root: str, count: int) -> float:
    """The plain torchvision loop in this process: PIL decode, RandomResizedCrop, flip, ToTensor, Normalize."""
    from PIL import Image
    from torchvision import transforms as T

    cfg = params.backbone
    transform = T.Compose(
        [
            T.RandomResizedCrop(cfg.input_size, scale=tuple(cfg.crop_scale)),
            T.RandomHorizontalFlip(),
            T.ToTensor(),
            T.Normalize(cfg.mean, cfg.std),
        ]
    )
    manifest = read_manifest(root)
    paths = [manifest.image_path(i % len(manifest.table)) for i in range(count)]
    start = time.perf_counter()
    for path in paths:
        with Image.open(path) as image:
            transform(image.convert("RGB"))
    return count / (time.perf_counter() - start)


def device_half_rate(params, root: str, steps: int, device) -> float:
    """The device half of ``augment_on: device`` (pipeline/models/device_augment.py) on `device`, on batches the
    loader made beforehand: images/s."""
    data = images(params, root)
    objective = build_objective(run_setup(params, "ms"), len(np.unique(data.train_labels)))
    batches = _infinite(epoch_batches(data, params.train, device, objective, 0))
    ready = [next(batches)[0] for _ in range(steps)]
    data.train_inputs(ready[0], device)
    synchronize(device)
    start = time.perf_counter()
    for batch in ready:
        data.train_inputs(batch, device)
    synchronize(device)
    return sum(len(b[1]) for b in ready) / (time.perf_counter() - start)  # b[1]: the crops' shapes


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
            seen += len(next(loader)[1])  # the labels: a device-half batch is (crops, draws)
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
        step(data.train_inputs(x, device), y.to(device)).item()
    synchronize(device)
    barrier.wait()
    start, seen = time.time(), 0
    for _ in range(steps):
        x, y = next(batches)
        loss = step(data.train_inputs(x, device), y.to(device, non_blocking=True))
        seen += len(y)
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


def preset(base: dict, name: str, amp: str, workers: int, augment_on: str = "device") -> dict:
    raw = copy.deepcopy(base)
    raw["backbone"].update(name=name, weights="")
    raw["train"].update(amp=amp, num_workers=workers, workers=1, augment_on=augment_on)
    if name != "bn_inception":  # torchvision and EfficientNet-Lite weights: RGB input, ImageNet mean/std
        raw["backbone"].update(input_space="rgb", mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    if name == "efficientnet_lite0":
        raw["backbone"].update(input_size=224)
    if name == "tiny_cnn":
        raw["backbone"].update(input_size=64, resize=0)
    return raw


def loader_only(base: dict, root: str, args) -> list[tuple]:
    """The loader rows alone on this machine, both values of train.augment_on, beside the plain loop."""
    device = choose_device("auto", "finetune")
    processes = max(args.workers, 1)
    rows = []
    for backbone in args.backbones:
        params = params_from_dict(preset(base, backbone, "fp32", args.workers, "device"))
        count = max(args.steps, 4) * params.train.classes_per_batch * params.train.images_per_class
        plain = plain_rate(params, root, count)
        print(f"{backbone:18s} plain torchvision loop   {plain:8.0f} images/s per process", flush=True)
        rows.append((backbone, "plain", plain, 1.0))
        for augment_on in ("loader", "device"):
            params = params_from_dict(preset(base, backbone, "fp32", args.workers, augment_on))
            feed = loader_rate(params, root, 1, max(args.steps, 3), device) / processes
            rows.append((backbone, augment_on, feed, feed / plain))
            line = f"{backbone:18s} augment_on={augment_on:6s}   {feed:8.0f} images/s per loader process"
            if augment_on == "device":
                half = device_half_rate(params, root, max(args.steps // 4, 3), device)
                line += f" ({feed / plain:.1f}x the plain loop); device half on {device.type}: {half:.0f} images/s"
            print(line, flush=True)
    return rows


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
    parser.add_argument("--augment-on", choices=["device", "loader"], default="device", help="train.augment_on")
    parser.add_argument("--loader-only", action="store_true", help="the loader rows alone, beside the plain loop")
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
    with tempfile.TemporaryDirectory() as root:
        synthetic_set(Path(root), args.classes, args.per_class)
        for mode in ("RGB", "L"):
            rate = pixel_store(Path(root), mode)
            if mode == "RGB":
                print(f"decode-once pixel store (the embed stage's): {rate:.0f} images/s in one process", flush=True)
        if args.loader_only:
            rows = loader_only(base, root, args)
            print("\nbackbone           amp   models  each  together  /ceiling128  loader")
            for backbone, path, rate, _ in rows:
                print(f"{backbone:18s} {'-':5s} {'-':>6s} {'-':>6s} {'-':>9s} {'-':>12s} {rate:7.0f}  {path}")
            return
        rows = []
        for backbone in args.backbones:
            for amp in args.precisions:
                if amp != "fp32" and device.type != "cuda":
                    continue
                raw = preset(base, backbone, amp, args.workers, args.augment_on)
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
