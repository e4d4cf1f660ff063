"""CUDA graphs for the network's training forward and backward passes (a GPU only).

At MLRC's batch of 32 one backbone cannot keep an H100 busy: its forward and backward passes are hundreds of small
kernels, and launching them from Python sets the pace (ResNet50 measured 1,290 images/s at batch 32 against 3,380 at
batch 128). A CUDA graph records those kernels once and replays them with one launch
(``torch.cuda.make_graphed_callables``); the loss, the miner and the optimiser step stay eager, so every method
works unchanged. A graph replays one computation, so it is used only where that is the whole story:
- on CUDA, in one process (under DDP the wrapper's gradient hooks must run eagerly);
- for objectives that call the network once per step on the batch (``Objective.single_forward``; sample-CCP
  passes its anchor samples through the network a second time);
- for batches of the captured shape with gradients on; anything else runs the network eagerly.
The warm-up passes of the capture would move BatchNorm's running statistics: they are put back. A capture that
fails (an operation that cannot be recorded) leaves the network eager, with one warning in the log.

The capture runs while the training loader's pin-memory thread keeps pinning prefetched batches. In CUDA's "global"
capture mode, the only one ``make_graphed_callables`` had before pytorch#188832, a batch pinned mid-capture fails the
capture and kills the loader ("operation not permitted when stream is capturing"; an H200 with torch 2.11, four
models at once, 2026-11-29). Where torch takes ``capture_error_mode``, the capture is "thread_local" (only the
capturing thread's calls are checked); where it does not, the training loader does not pin (loop.prepare).

What stays eager, and why:
- the loss and its miner: pytorch-metric-learning's miners and pair losses select their pairs and triplets with
  data-dependent indexing (``torch.where`` over the batch's label and distance masks), so their shapes change from step
  to step and they synchronise with the host; a graph replays fixed shapes and cannot record a synchronisation. None
  of the methods' in-batch losses is static in that sense, so none is captured;
- the optimiser: Adam runs torch's fused kernel (``fused=True``, pipeline/training/stepping.py make_optimizer), eager.
  On an H100 (ResNet50 bf16, batch 32, data on the GPU) forward + backward in a graph with fused Adam eager made
  3,065 images/s against 2,680 with the whole step in one graph (capturable Adam);
- the batch's augmentation (pipeline/models/device_augment.py): its crops differ in size from step to step.
"""

from __future__ import annotations

import inspect
import logging

import torch
from torch import nn

log = logging.getLogger(__name__)

# torch's capture can let other threads call CUDA (pytorch#188832): then the training loader may pin while it captures
THREAD_LOCAL_CAPTURE = "capture_error_mode" in inspect.signature(torch.cuda.make_graphed_callables).parameters


class _Forward(nn.Module):
    """The network as a module of its own, so that the capture patches this wrapper's forward, not the model's
    (the model keeps running eagerly for validation and for the methods' own uses of it)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


class GraphedNetwork(nn.Module):
    """`model` with its training forward and backward replayed from a CUDA graph captured on `example`'s shape."""

    def __init__(self, model: nn.Module, example: torch.Tensor, autocast_context):
        super().__init__()
        self.model = model
        self.shape = example.shape
        saved = {k: v.detach().clone() for k, v in model.state_dict().items()}
        try:
            with autocast_context(cache_enabled=False):  # autocast's weight cache cannot outlive a capture
                mode = {"capture_error_mode": "thread_local"} if THREAD_LOCAL_CAPTURE else {}
                self.replay = torch.cuda.make_graphed_callables(_Forward(model), (example,), **mode)
        finally:
            with torch.no_grad():
                for k, v in model.state_dict().items():
                    v.copy_(saved[k])  # in place: the graph holds these tensors' addresses

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape == self.shape and torch.is_grad_enabled():
            return self.replay(x)
        return self.model(x)


def graphed(model: nn.Module, example: torch.Tensor, autocast_context) -> nn.Module:
    """A GraphedNetwork of `model`, or `model` itself when the capture fails (logged)."""
    try:
        return GraphedNetwork(model, example, autocast_context)
    except RuntimeError as err:
        log.warning("CUDA graph capture failed, training eagerly: %s", str(err).splitlines()[0])
        return model
