"""The one training loop every method shares.

Each epoch runs ``train.steps_per_epoch`` batches of ``classes_per_batch x
images_per_class`` (pipeline/batching/samplers.py, seeded by the batch seed the runs of a
claim share), then measures MAP@R on the held-out validation fold; the best
epoch's weights are returned (MLRC early stopping).

The budget rule is the same for every method: training may stop once
``patience`` epochs have passed without an improvement of more than
``min_delta``, and stops at ``max_epochs``. A method with an outer loop takes
the stop only at the end of its own unit (a CCP sub-problem, a PROFS
projection: ``Objective.end_epoch``), so no method is cut in the first epochs
of a sub-problem. Why training stopped ("patience", "max_epochs" or "method",
e.g. CCP's ``max_subproblems``) is returned with the log.
Two modes share this loop: ``frozen`` (inputs are cached backbone features,
only the head trains) and ``finetune`` (inputs are augmented images, backbone
and head train). On CUDA, ``train.amp`` runs the forward pass under autocast
(fp16 with gradient scaling, or bf16), image batches are channels-last, and with
``train.cuda_graphs`` the network's forward and backward passes replay a CUDA graph
(pipeline/training/cuda_graphs.py). Image batches come from ``train.num_workers`` DataLoader
processes into pinned memory; the training and the validation loaders are built once
per fit and their workers persist between epochs (the validation fold is read by the
same workers every epoch). Under torchrun the network is wrapped in
DistributedDataParallel and every rank trains on its share of each batch
(pipeline/batching/distributed.py).
"""

from __future__ import annotations

import copy
import functools
import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset, default_collate

from pipeline.batching import distributed
from pipeline.batching.samplers import ClassBatchSampler, rows_per_class
from pipeline.config import TrainConfig
from pipeline.evaluation.retrieval import map_at_r
from pipeline.infra.console import note
from pipeline.infra.errors import PipelineError
from pipeline.methods.objective import Objective, trainable
from pipeline.training.cuda_graphs import graphed
from pipeline.training.exact_adam import make_adam

log = logging.getLogger(__name__)


class TrainingError(PipelineError, RuntimeError):
    """Training cannot go on (e.g. a non-finite loss); the message names the step."""


@dataclass
class FoldData:
    """Inputs of one fold: training set (labels remapped to 0..C-1), validation and test sets."""

    train: Dataset
    train_labels: np.ndarray
    val: Dataset
    val_labels: np.ndarray
    test: Dataset
    test_labels: np.ndarray
    # the training batches' device half (finetune with train.augment_on=device: pipeline/models/device_augment.py);
    # None: a batch is its input tensor
    on_device: Callable[[object, torch.device], torch.Tensor] | None = None

    @property
    def collate(self) -> Callable:
        """How the training loader batches items (the training set's own `collate` where it has one)."""
        return getattr(self.train, "collate", default_collate)

    def train_inputs(self, batch, device: torch.device) -> torch.Tensor:
        """A training loader batch's inputs, on `device`."""
        return to_device(batch, device) if self.on_device is None else self.on_device(batch, device)

    def row_inputs(self, rows, device: torch.device) -> torch.Tensor:
        """The inputs of training rows (drawing their augmentation's random numbers as the loader does), on `device`."""
        return self.train_inputs(self.collate([self.train[int(i)] for i in rows])[0], device)


@dataclass
class TrainContext:
    """What an objective's hooks may use: the model, optimiser, data and settings of the run."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    data: FoldData
    cfg: TrainConfig
    device: torch.device
    _inputs: dict = field(default_factory=dict)  # id(dataset) -> its EmbeddingInputs, built once per fit

    def embed(self, dataset: Dataset, keep: bool = False) -> np.ndarray:
        """Embeddings in eval mode (the dataset's loader workers persist between calls; with `keep`, a deterministic
        transform's inputs are kept after the first call: EmbeddingInputs); the model is put back into train mode
        afterwards."""
        if id(dataset) not in self._inputs:
            batching = {}
            if dataset is self.data.train:  # the training set: its own batches and device half (augmented inputs)
                batching = {"collate": self.data.collate, "to_inputs": self.data.train_inputs}
            self._inputs[id(dataset)] = EmbeddingInputs(
                dataset, self.device, self.cfg.num_workers, True, keep, **batching
            )
        out = embed(self.model, self._inputs[id(dataset)], self.device, amp=self.cfg.amp)
        self.model.train()
        return out

    def release(self) -> None:
        """Stop the loader workers kept for embedding (the objective may hold on to this context)."""
        self._inputs.clear()

    @cached_property
    def rows_per_class(self) -> list[np.ndarray]:
        """Training-set rows of each class 0..C-1 (training labels are remapped to that range)."""
        return rows_per_class(self.data.train_labels)

    def inputs(self, rows) -> torch.Tensor:
        """Model inputs of training rows (through the training transform), on the device."""
        if isinstance(self.data.train, TensorDataset):  # cached features: one indexing operation
            return self.data.train.tensors[0][torch.as_tensor(np.asarray(rows, dtype=np.int64))].to(self.device)
        return self.data.row_inputs(rows, self.device)


@dataclass
class FitResult:
    best_state: dict
    best_epoch: int
    best_val_map_at_r: float
    history: list[dict] = field(default_factory=list)
    stop_reason: str = ""  # patience, max_epochs or method


def make_optimizer(model: torch.nn.Module, objective: Objective, cfg: TrainConfig) -> torch.optim.Optimizer:
    """The network's weights at train.lr and the objective's parameters (proxies ...) at their own rates. Adam
    is torch's fused Adam: the same update as the per-tensor loop in one pass per parameter (a fifth less time per
    step for a head with 1,708 proxies); on the CPU its pinned generic kernel's bits at vector speed
    (pipeline/training/exact_adam.py: 7-14x less time a step)."""
    groups = [{"params": trainable(model), "lr": cfg.lr}]
    groups += objective.param_groups()
    if cfg.optimizer == "adam":
        return make_adam(groups, lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "rmsprop":
        return torch.optim.RMSprop(groups, lr=cfg.lr, weight_decay=cfg.weight_decay, momentum=cfg.momentum)
    return torch.optim.SGD(groups, lr=cfg.lr, weight_decay=cfg.weight_decay, momentum=cfg.momentum)


def autocast(device: torch.device, amp: str, cache_enabled: bool = True):
    """The forward pass's autocast context: fp16 / bf16 on CUDA when asked, else a no-op."""
    enabled = device.type == "cuda" and amp != "fp32"
    dtype = torch.bfloat16 if amp == "bf16" else torch.float16
    return torch.autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def to_device(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A batch on `device`; image batches on CUDA channels-last (the layout cuDNN's fastest convolutions use;
    the model is converted to match in `fit`). On the CPU nothing changes."""
    if device.type == "cuda" and x.dim() == 4:
        return x.to(device, non_blocking=True, memory_format=torch.channels_last)
    return x.to(device, non_blocking=True)


def _loading(dataset: Dataset, workers: int, device: torch.device, persistent: bool = False) -> dict:
    """DataLoader settings: worker processes and pinned memory for images (cached features need neither);
    `persistent` keeps the workers between epochs (loaders built once per fit)."""
    if isinstance(dataset, TensorDataset):
        return {}
    return {
        "num_workers": workers,
        "pin_memory": device.type == "cuda",
        "persistent_workers": persistent and workers > 0,
    }


FEATURE_BATCH = 512  # cached features embedded at a time (the committed reports' batches)
# images embedded at a time: on a CPU 64 (bench_epoch: validation a quarter faster than at 512, a small CNN's
# activations stay in the caches); on a GPU 256, forward passes being launch-bound below that (issue 40)
IMAGE_BATCH = {"cpu": 64, "cuda": 256}
KEEP_BYTES = 2 << 30  # inputs of a deterministic transform up to this size are kept after the first pass


class EmbeddingInputs:
    """A dataset's inputs in dataset order, a batch at a time, as often as they are iterated: cached features
    are sliced directly; images come through one DataLoader (with `persistent`, its workers stay between passes),
    and with `keep` (a deterministic transform, e.g. the validation fold's) the first pass's batches are kept, on
    the device, when they fit KEEP_BYTES: every later pass reads no image. The loader has a generator of its own:
    reading a deterministic transform draws nothing from the run's random numbers. `collate` and `to_inputs` make a
    loader batch's inputs on the device (a training set's: FoldData.collate and FoldData.train_inputs)."""

    def __init__(
        self,
        dataset: Dataset,
        device: torch.device,
        num_workers: int = 0,
        persistent: bool = False,
        keep=False,
        collate: Callable = default_collate,
        to_inputs: Callable = to_device,
    ):
        self.dataset, self.device, self.keep, self.to_inputs = dataset, device, keep, to_inputs
        self.loader, self.kept = None, None
        if not isinstance(dataset, TensorDataset):
            self.loader = DataLoader(
                dataset,
                batch_size=IMAGE_BATCH.get(device.type, 64),
                shuffle=False,
                generator=torch.Generator(),
                collate_fn=collate,
                **_loading(dataset, num_workers, device, persistent),
            )

    def __iter__(self) -> Iterator[torch.Tensor]:
        if self.loader is None:
            inputs = self.dataset.tensors[0]
            return (inputs[s : s + FEATURE_BATCH] for s in range(0, len(inputs), FEATURE_BATCH))
        if self.kept is not None:
            return iter(self.kept)
        return self._first_pass()

    def _first_pass(self) -> Iterator[torch.Tensor]:
        kept, size = [], 0
        for batch, _ in self.loader:
            x = self.to_inputs(batch, self.device)
            size += x.numel() * x.element_size()
            if self.keep and size <= KEEP_BYTES:
                kept.append(x)
            yield x
        if self.keep and size <= KEEP_BYTES:
            self.kept = kept


@torch.inference_mode()
def embed(
    model: torch.nn.Module,
    inputs: Dataset | EmbeddingInputs,
    device: torch.device,
    num_workers: int = 0,
    amp: str = "fp32",
) -> np.ndarray:
    """Embeddings of a whole dataset (or of prepared EmbeddingInputs) in eval mode, in dataset order."""
    model.eval()
    if not isinstance(inputs, EmbeddingInputs):
        inputs = EmbeddingInputs(inputs, device, num_workers)
    out = []
    for x in inputs:
        with autocast(device, amp):
            out.append(model(to_device(x, device)).float().cpu().numpy())
    return np.concatenate(out)


def epoch_batches(
    data: FoldData, cfg: TrainConfig, device: torch.device, objective: Objective, seed: int
) -> DataLoader:
    """The objective's own batches if it builds them, else classes_per_batch x images_per_class batches
    drawn by a generator seeded with `seed`; under DDP this rank's share of each. Cached features
    (a TensorDataset) are indexed a batch at a time, one tensor operation instead of one per sample; the
    batches are the same either way."""
    loading = _loading(data.train, cfg.num_workers, device, persistent=True)
    batches = objective.batch_sampler(data.train_labels, cfg, seed)
    if batches is None:
        batches = ClassBatchSampler(
            data.train_labels, cfg.classes_per_batch, cfg.images_per_class, cfg.steps_per_epoch, seed
        )
    if distributed.world_size() > 1:
        batches = distributed.ShardedBatches(batches, distributed.rank(), distributed.world_size())
    if isinstance(data.train, TensorDataset):
        # still a DataLoader: each epoch its iterator draws a base seed from torch's global generator, and the
        # methods that sample with that generator (distance-weighted mining) depend on that stream; a loop without
        # it trained other Margin models (issue 48)
        return DataLoader(data.train, sampler=batches, batch_size=None, **loading)
    return DataLoader(data.train, batch_sampler=batches, collate_fn=data.collate, **loading)


@dataclass
class Stepper:
    """One optimisation step: forward under autocast, backward (scaled for fp16), gradient averaging
    across ranks under DDP, clipping of the global norm, optimiser step. `net` is the model, or its
    DistributedDataParallel wrapper."""

    net: torch.nn.Module
    objective: Objective
    optimizer: torch.optim.Optimizer
    cfg: TrainConfig
    device: torch.device

    def __post_init__(self):
        self.params = [p for g in self.optimizer.param_groups for p in g["params"]]
        self.ranks = distributed.world_size()
        fp16 = self.device.type == "cuda" and self.cfg.amp == "fp16"
        self.scaler = torch.amp.GradScaler("cuda", enabled=fp16)
        # pipeline/training/cuda_graphs.py: captured at the first step, from its batch
        self.capture = (
            self.cfg.cuda_graphs
            and self.device.type == "cuda"
            and distributed.world_size() == 1
            and self.objective.single_forward
        )

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.capture:
            self.net = graphed(self.net, x, functools.partial(autocast, self.device, self.cfg.amp))
            self.capture = False
        with autocast(self.device, self.cfg.amp):
            loss = self.objective.batch_loss(self.net, x, y)
        if not torch.isfinite(loss):
            return loss
        self.optimizer.zero_grad(set_to_none=True)
        scaled = self.scaler.is_enabled()  # without fp16 the scaler's calls are identities: not made
        (self.scaler.scale(loss.float()) if scaled else loss.float()).backward()
        if self.ranks > 1:
            self.objective.average_gradients()  # the network's gradients are averaged by DDP
        if scaled:
            self.scaler.unscale_(self.optimizer)
        if self.cfg.grad_clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.cfg.grad_clip_norm)
        if scaled:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        return loss


def wrap_for_ranks(model: torch.nn.Module, objective: Objective, device: torch.device) -> torch.nn.Module:
    """Under torchrun: the model in DistributedDataParallel and the objective's in-batch terms gathered."""
    if distributed.world_size() == 1:
        return model
    objective.distribute()
    return torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None
    )


def prepare(
    model: torch.nn.Module,
    objective: Objective,
    data: FoldData,
    cfg: TrainConfig,
    device: torch.device,
    batch_seed: int = 0,
) -> tuple[Stepper, DataLoader, TrainContext]:
    """Model and objective on `device` (channels-last on CUDA), the optimiser, the step, the batches of an epoch
    (seeded with `batch_seed`) and the hooks' context: everything `fit` trains with."""
    num_classes = len(np.unique(data.train_labels))
    if num_classes < cfg.classes_per_batch:
        raise TrainingError(
            f"train.classes_per_batch={cfg.classes_per_batch} exceeds the {num_classes} training classes of this fold"
        )
    model.to(device)
    if device.type == "cuda":
        model.to(memory_format=torch.channels_last)  # matches to_device's image batches; dense layers are unaffected
    objective.to(device)
    optimizer = make_optimizer(model, objective, cfg)
    step_once = Stepper(wrap_for_ranks(model, objective, device), objective, optimizer, cfg, device)
    return (
        step_once,
        epoch_batches(data, cfg, device, objective, batch_seed),
        TrainContext(model, optimizer, data, cfg, device),
    )


def fit(
    model: torch.nn.Module,
    objective: Objective,
    data: FoldData,
    cfg: TrainConfig,
    device: torch.device,
    desc: str = "train",
    batch_seed: int = 0,
    cut: Callable[[list[float]], bool] | None = None,
) -> FitResult:
    """Train under the budget rule (module docstring) with early stopping on validation MAP@R; return the
    best state, the per-epoch log and why training stopped. `batch_seed` seeds the batches. `cut`, given the
    validation MAP@R of epochs 0..e, may end training after epoch e (a tuning trial's pruner,
    pipeline/training/pruning.py; stop reason "pruned")."""
    step_once, loader, ctx = prepare(model, objective, data, cfg, device, batch_seed)

    def snapshot() -> dict:
        return {"model": copy.deepcopy(model.state_dict()), "objective": copy.deepcopy(objective.state_dict())}

    best = map_at_r(ctx.embed(data.val, keep=True), data.val_labels)
    result = FitResult(snapshot(), 0, best, [{"epoch": 0, "train_loss": float("nan"), "val_map_at_r": best}])
    log.debug("%s: epoch 0 val MAP@R %.4f", desc, best)  # every epoch: to the stage's log file
    objective.begin(ctx)
    result.history[0].update(objective.progress())
    stale = 0
    result.stop_reason = "max_epochs"
    for epoch in range(1, cfg.max_epochs + 1):
        model.train()
        objective.train()
        losses = []
        note(desc, f"epoch {epoch}")  # beside the stage's bar (pipeline/infra/console.py)
        for step, (x, y) in enumerate(loader, 1):
            value = step_once(data.train_inputs(x, device), y.to(device, non_blocking=True)).item()
            if not math.isfinite(value):
                raise TrainingError(f"{desc}: non-finite loss ({value}) at epoch {epoch} step {step}")
            losses.append(value)
        val = map_at_r(ctx.embed(data.val, keep=True), data.val_labels)
        row = {"epoch": epoch, "train_loss": float(np.mean(losses)), "val_map_at_r": val, **objective.progress()}
        result.history.append(row)
        improved = val > result.best_val_map_at_r + cfg.min_delta
        log.debug(
            "%s: epoch %d loss %.4f val MAP@R %.4f%s", desc, epoch, np.mean(losses), val, " (best)" if improved else ""
        )
        if improved:
            result.best_state, result.best_epoch, result.best_val_map_at_r = snapshot(), epoch, val
            stale = 0
        else:
            stale += 1
        exhausted = stale >= cfg.patience
        if objective.end_epoch(ctx, epoch, val, exhausted):
            result.stop_reason = "patience" if exhausted else "method"
            log.debug(
                "%s: stopped after epoch %d (%s; %d epochs without improvement)", desc, epoch, result.stop_reason, stale
            )
            break
        if cut is not None and cut([r["val_map_at_r"] for r in result.history]):
            result.stop_reason = "pruned"
            log.debug("%s: pruned after epoch %d", desc, epoch)
            break
    objective.finish(ctx)
    ctx.release()
    note(desc, "")
    if math.isnan(result.best_val_map_at_r):
        raise TrainingError(f"{desc}: validation MAP@R is NaN")
    return result
