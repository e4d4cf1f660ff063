"""Embedding a dataset in eval mode, as validation, the CCP and PROFS hooks and the test read it: cached features are
sliced, images come through one DataLoader whose workers may persist between passes, and a deterministic transform's
inputs may be kept on the device after the first pass (EmbeddingInputs); on CUDA under autocast, channels-last."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset, default_collate


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


def loader_settings(
    dataset: Dataset, workers: int, device: torch.device, persistent: bool = False, pin: bool = True
) -> dict:
    """DataLoader settings: worker processes and pinned memory for images on CUDA unless not `pin` (cached features
    need neither); `persistent` keeps the workers between epochs (loaders built once per fit)."""
    if isinstance(dataset, TensorDataset):
        return {}
    return {
        "num_workers": workers,
        "pin_memory": pin and device.type == "cuda",
        "persistent_workers": persistent and workers > 0,
    }


FEATURE_BATCH = 512  # cached features embedded at a time (the committed reports' batches)
# images embedded at a time: on a CPU 64 (bench_epoch: validation a quarter faster than at 512, a small CNN's
# activations stay in the caches); on a GPU 256, forward passes being launch-bound below that
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
                **loader_settings(dataset, num_workers, device, persistent),
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
