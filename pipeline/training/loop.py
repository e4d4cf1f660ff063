"""The one training loop every method shares (fit); one optimisation step is pipeline/training/stepping.py, the
embedding of a dataset pipeline/training/inference.py.

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
import logging
import math
from collections.abc import Callable
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
from pipeline.methods.objective import Objective
from pipeline.training import cuda_graphs
from pipeline.training.inference import EmbeddingInputs, embed, loader_settings, to_device
from pipeline.training.stepping import Stepper, make_optimizer, wrap_for_ranks

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


def epoch_batches(
    data: FoldData, cfg: TrainConfig, device: torch.device, objective: Objective, seed: int, pin: bool = True
) -> DataLoader:
    """The objective's own batches if it builds them, else classes_per_batch x images_per_class batches
    drawn by a generator seeded with `seed`; under DDP this rank's share of each. Cached features
    (a TensorDataset) are indexed a batch at a time, one tensor operation instead of one per sample; the
    batches are the same either way. `pin`: image batches pinned on CUDA (loader_settings)."""
    loading = loader_settings(data.train, cfg.num_workers, device, persistent=True, pin=pin)
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
        # it trains other Margin models
        return DataLoader(data.train, sampler=batches, batch_size=None, **loading)
    return DataLoader(data.train, batch_sampler=batches, collate_fn=data.collate, **loading)


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
    # a graph captured beside the loader's pinning thread needs torch's thread-local capture (cuda_graphs.py)
    pin = not step_once.capture or cuda_graphs.THREAD_LOCAL_CAPTURE
    return (
        step_once,
        epoch_batches(data, cfg, device, objective, batch_seed, pin),
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
