"""The one training loop every method shares.

Each epoch runs ``train.steps_per_epoch`` batches of ``classes_per_batch x
images_per_class`` (pipeline/samplers.py, seeded by the batch seed the runs of a
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
(fp16 with gradient scaling, or bf16); image batches come from ``train.num_workers``
DataLoader processes into pinned memory. Under torchrun the network is wrapped in
DistributedDataParallel and every rank trains on its share of each batch
(pipeline/distributed.py).
"""

from __future__ import annotations

import copy
import logging
import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset
from tqdm import tqdm

from pipeline import distributed
from pipeline.config import TrainConfig
from pipeline.errors import PipelineError
from pipeline.evaluation.retrieval import map_at_r
from pipeline.methods.objective import Objective, trainable
from pipeline.samplers import ClassBatchSampler, rows_per_class

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


@dataclass
class TrainContext:
    """What an objective's hooks may use: the model, optimiser, data and settings of the run."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    data: FoldData
    cfg: TrainConfig
    device: torch.device

    def embed(self, dataset: Dataset) -> np.ndarray:
        """Embeddings in eval mode; the model is put back into train mode afterwards."""
        out = embed(self.model, dataset, self.device, self.cfg.num_workers, self.cfg.amp)
        self.model.train()
        return out

    @cached_property
    def rows_per_class(self) -> list[np.ndarray]:
        """Training-set rows of each class 0..C-1 (training labels are remapped to that range)."""
        return rows_per_class(self.data.train_labels)

    def inputs(self, rows) -> torch.Tensor:
        """Model inputs of training rows (through the training transform), on the device."""
        if isinstance(self.data.train, TensorDataset):  # cached features: one indexing operation
            return self.data.train.tensors[0][torch.as_tensor(np.asarray(rows, dtype=np.int64))].to(self.device)
        return torch.stack([self.data.train[int(i)][0] for i in rows]).to(self.device)


@dataclass
class FitResult:
    best_state: dict
    best_epoch: int
    best_val_map_at_r: float
    history: list[dict] = field(default_factory=list)
    stop_reason: str = ""  # patience, max_epochs or method


def make_optimizer(model: torch.nn.Module, objective: Objective, cfg: TrainConfig) -> torch.optim.Optimizer:
    """The network's weights at train.lr and the objective's parameters (proxies ...) at their own rates. Adam
    runs torch's fused kernel: the same update as the per-tensor loop in one pass per parameter (a fifth less
    time per step for a head with 1,708 proxies), on the CPU in the pinned generic kernels."""
    groups = [{"params": trainable(model), "lr": cfg.lr}]
    groups += objective.param_groups()
    if cfg.optimizer == "adam":
        return torch.optim.Adam(groups, lr=cfg.lr, weight_decay=cfg.weight_decay, fused=True)
    if cfg.optimizer == "rmsprop":
        return torch.optim.RMSprop(groups, lr=cfg.lr, weight_decay=cfg.weight_decay, momentum=cfg.momentum)
    return torch.optim.SGD(groups, lr=cfg.lr, weight_decay=cfg.weight_decay, momentum=cfg.momentum)


def autocast(device: torch.device, amp: str):
    """The forward pass's autocast context: fp16 / bf16 on CUDA when asked, else a no-op."""
    enabled = device.type == "cuda" and amp != "fp32"
    return torch.autocast("cuda", dtype=torch.bfloat16 if amp == "bf16" else torch.float16, enabled=enabled)


def _loading(dataset: Dataset, workers: int, device: torch.device, persistent: bool = False) -> dict:
    """DataLoader settings: worker processes and pinned memory for images (cached features need neither);
    `persistent` keeps the workers between epochs (the training loader, built once per fit)."""
    if isinstance(dataset, TensorDataset):
        return {}
    return {
        "num_workers": workers,
        "pin_memory": device.type == "cuda",
        "persistent_workers": persistent and workers > 0,
    }


@torch.no_grad()
def embed(
    model: torch.nn.Module,
    dataset: Dataset,
    device: torch.device,
    num_workers: int = 0,
    amp: str = "fp32",
    batch_size: int = 512,
) -> np.ndarray:
    """Embeddings of a whole dataset in eval mode, in dataset order, `batch_size` inputs at a time (cached
    features are sliced directly: the same batches without a per-row DataLoader)."""
    model.eval()
    if isinstance(dataset, TensorDataset):
        inputs = dataset.tensors[0]
        batches = (inputs[s : s + batch_size] for s in range(0, len(inputs), batch_size))
    else:
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, **_loading(dataset, num_workers, device))
        batches = (x for x, _ in loader)
    out = []
    for x in batches:
        with autocast(device, amp):
            out.append(model(x.to(device, non_blocking=True)).float().cpu().numpy())
    return np.concatenate(out)


def _batches(data: FoldData, cfg: TrainConfig, device: torch.device, objective: Objective, seed: int) -> DataLoader:
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
        return DataLoader(data.train, sampler=batches, batch_size=None, **loading)
    return DataLoader(data.train, batch_sampler=batches, **loading)


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
        fp16 = self.device.type == "cuda" and self.cfg.amp == "fp16"
        self.scaler = torch.amp.GradScaler("cuda", enabled=fp16)

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with autocast(self.device, self.cfg.amp):
            loss = self.objective.batch_loss(self.net, x, y)
        if not torch.isfinite(loss):
            return loss
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss.float()).backward()
        if distributed.world_size() > 1:
            self.objective.average_gradients()  # the network's gradients are averaged by DDP
        self.scaler.unscale_(self.optimizer)
        if self.cfg.grad_clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.cfg.grad_clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss


def wrap_for_ranks(model: torch.nn.Module, objective: Objective, device: torch.device) -> torch.nn.Module:
    """Under torchrun: the model in DistributedDataParallel and the objective's in-batch terms gathered."""
    if distributed.world_size() == 1:
        return model
    objective.distribute()
    return torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None
    )


def fit(
    model: torch.nn.Module,
    objective: Objective,
    data: FoldData,
    cfg: TrainConfig,
    device: torch.device,
    desc: str = "train",
    batch_seed: int = 0,
) -> FitResult:
    """Train under the budget rule (module docstring) with early stopping on validation MAP@R; return the
    best state, the per-epoch log and why training stopped. `batch_seed` seeds the batches."""
    num_classes = len(np.unique(data.train_labels))
    if num_classes < cfg.classes_per_batch:
        raise TrainingError(
            f"train.classes_per_batch={cfg.classes_per_batch} exceeds the {num_classes} training classes of this fold"
        )
    model.to(device)
    objective.to(device)
    optimizer = make_optimizer(model, objective, cfg)
    step_once = Stepper(wrap_for_ranks(model, objective, device), objective, optimizer, cfg, device)
    loader = _batches(data, cfg, device, objective, batch_seed)
    ctx = TrainContext(model, optimizer, data, cfg, device)

    def snapshot() -> dict:
        return {"model": copy.deepcopy(model.state_dict()), "objective": copy.deepcopy(objective.state_dict())}

    best = map_at_r(ctx.embed(data.val), data.val_labels)
    result = FitResult(snapshot(), 0, best, [{"epoch": 0, "train_loss": float("nan"), "val_map_at_r": best}])
    log.info("%s: epoch 0 val MAP@R %.4f", desc, best)
    objective.begin(ctx)
    result.history[0].update(objective.progress())
    stale = 0
    result.stop_reason = "max_epochs"
    for epoch in range(1, cfg.max_epochs + 1):
        model.train()
        objective.train()
        losses = []
        for step, (x, y) in enumerate(tqdm(loader, desc=f"{desc} epoch {epoch}", unit="step", leave=False), 1):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = step_once(x, y)
            if not torch.isfinite(loss):
                raise TrainingError(f"{desc}: non-finite loss ({loss.item()}) at epoch {epoch} step {step}")
            losses.append(loss.item())
        val = map_at_r(ctx.embed(data.val), data.val_labels)
        row = {"epoch": epoch, "train_loss": float(np.mean(losses)), "val_map_at_r": val, **objective.progress()}
        result.history.append(row)
        improved = val > result.best_val_map_at_r + cfg.min_delta
        log.info(
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
            log.info(
                "%s: stopped after epoch %d (%s; %d epochs without improvement)", desc, epoch, result.stop_reason, stale
            )
            break
    objective.finish(ctx)
    if math.isnan(result.best_val_map_at_r):
        raise TrainingError(f"{desc}: validation MAP@R is NaN")
    return result
