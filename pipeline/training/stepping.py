"""One optimisation step: the optimiser (the network at train.lr, the objective's own parameters at theirs), the step
(autocast, fp16 scaling, gradient averaging across ranks, clipping, the CUDA graph: pipeline/training/cuda_graphs.py)
and the model wrapped for torchrun (pipeline/batching/distributed.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from pipeline.batching import distributed
from pipeline.config import TrainConfig
from pipeline.methods.objective import Objective, trainable
from pipeline.training.cuda_graphs import graphed
from pipeline.training.exact_adam import make_adam
from pipeline.training.inference import autocast


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
