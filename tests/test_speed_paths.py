"""Where work runs and how it is fed: device and process choice, loaders built once per fit, CUDA graphs.

The GPU itself is not here (CI has none); what can be checked on a CPU is: `auto` picks the CPU for a frozen head
and the GPU for a backbone, `auto` processes follow the cores, validation reads through one persistent loader
without touching the run's random numbers, and the CUDA-graph wrapper captures once, restores what its warm-up
moved and replays only what it captured (torch's capture stubbed: the real one needs a GPU)."""

import dataclasses
import functools

import numpy as np
import pytest
import torch
from torch import nn

from pipeline.data.images import ManifestImages
from pipeline.infra import runtime
from pipeline.infra.parallel import run_jobs
from pipeline.methods.objective import Objective
from pipeline.models.transforms import eval_transform
from pipeline.params.root import params_from_dict
from pipeline.runs import run_setup
from pipeline.training import cuda_graphs, loop
from pipeline.training.inference import EmbeddingInputs, autocast, embed, loader_settings
from pipeline.training.loop import FoldData, TrainContext
from tests.conftest import merge

CPU = torch.device("cpu")


def test_auto_runs_a_frozen_head_on_the_cpu_and_a_backbone_on_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a machine without a GPU, wherever this runs
    assert runtime.choose_device("auto", "frozen") == CPU and runtime.choose_device("auto", "finetune") == CPU
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert runtime.choose_device("auto", "frozen") == CPU
    assert runtime.choose_device("auto", "finetune") == torch.device("cuda", 0)
    assert runtime.choose_device("auto", "embed") == torch.device("cuda", 0)
    assert runtime.choose_device("cpu", "finetune") == CPU


def test_auto_processes_follow_the_usable_cores_and_the_gpu(monkeypatch, tiny_params):
    monkeypatch.setattr(runtime, "usable_cores", lambda: 16)
    assert runtime.worker_count(3) == 3 and runtime.worker_count("auto") == 16 and runtime.worker_count("auto", 4) == 4
    assert runtime.worker_count("auto", on_gpu=True) == runtime.MODELS_PER_GPU
    frozen = dataclasses.replace(tiny_params.train, workers="auto", mode="frozen")
    assert runtime.train_workers(frozen) == 16
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert runtime.train_workers(dataclasses.replace(frozen, mode="finetune")) == runtime.MODELS_PER_GPU
    assert runtime.train_workers(dataclasses.replace(frozen, mode="finetune", device="cpu")) == 16
    assert runtime.train_workers(dataclasses.replace(frozen, workers=2)) == 2
    assert run_jobs(abs, [-1, -2, -3], "auto", 1) == [1, 2, 3]


def test_validation_reads_through_one_persistent_loader_and_draws_no_random_number(tiny_dict, tiny_data):
    manifest, _ = tiny_data
    params = params_from_dict(merge(tiny_dict, {"backbone": {"name": "tiny_cnn", "input_size": 16}}))
    images = ManifestImages(
        manifest, manifest.rows("train", 0, validation=True), eval_transform(params.backbone, params.data.background)
    )
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 32, 4))  # 16 x 32 px digit pairs
    cfg = dataclasses.replace(params.train, num_workers=2)
    none = torch.utils.data.TensorDataset(torch.zeros(0, 1))
    data = FoldData(none, np.zeros(0), images, images.labels, none, np.zeros(0))
    ctx = TrainContext(model, torch.optim.SGD(model.parameters(), lr=0.1), data, cfg, CPU)
    torch.manual_seed(0)
    state = torch.get_rng_state()
    first, second = ctx.embed(images, keep=True), ctx.embed(images, keep=True)
    assert torch.equal(torch.get_rng_state(), state)  # the loader has a generator of its own
    assert np.array_equal(first, second) and np.array_equal(first, embed(model, images, CPU))  # same as one pass
    inputs = ctx._inputs[id(images)]
    assert inputs.loader.persistent_workers and inputs.loader._iterator is not None  # workers stay for the next fit
    assert sum(len(x) for x in inputs.kept) == len(images)  # the second pass read no image
    augmented = ManifestImages(manifest, images.rows, images.transform)  # another dataset, not kept unless asked
    ctx.embed(augmented)
    assert ctx._inputs[id(augmented)].kept is None
    ctx.release()
    assert not ctx._inputs
    features = EmbeddingInputs(torch.utils.data.TensorDataset(torch.arange(1200.0)[:, None]), CPU)
    assert [len(b) for b in features] == [512, 512, 176] and features.loader is None  # cached features: sliced


class _Stepped(nn.Module):
    """A network with a BatchNorm whose running mean the stub's warm-up passes move."""

    def __init__(self):
        super().__init__()
        self.norm = nn.BatchNorm1d(3)
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        return self.linear(self.norm(x))


def test_the_graph_is_captured_once_on_the_batch_shape_and_the_warm_up_leaves_no_trace(monkeypatch):
    captured = []

    def fake_capture(module, sample_args, **mode):  # torch.cuda.make_graphed_callables without a GPU
        assert not torch.is_autocast_cache_enabled()  # autocast's cache cannot outlive a capture
        # the loader's pinning thread may call CUDA during the capture only in thread-local mode
        assert mode == ({"capture_error_mode": "thread_local"} if cuda_graphs.THREAD_LOCAL_CAPTURE else {})
        for _ in range(3):  # warm-up passes in train mode: BatchNorm statistics move
            module(*sample_args)
        captured.append(sample_args[0].shape)
        module.replays = 0

        def replay(x):
            module.replays += 1
            return module.model(x)

        module.forward = replay
        return module

    monkeypatch.setattr(torch.cuda, "make_graphed_callables", fake_capture)
    model = _Stepped().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    net = cuda_graphs.graphed(model, torch.randn(8, 3), functools.partial(autocast, CPU, "fp32"))
    assert captured == [torch.Size([8, 3])]
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # statistics put back
    net(torch.randn(8, 3))
    net(torch.randn(5, 3))  # another shape: eager
    with torch.no_grad():
        net(torch.randn(8, 3))  # no gradients (validation): eager
    assert net.replay.replays == 1 and list(net.parameters()) == list(model.parameters())


def test_a_capture_that_fails_leaves_the_network_eager(monkeypatch, caplog):
    def refuse(module, sample_args, **mode):
        raise RuntimeError("operation not permitted when stream is capturing\nmore")

    monkeypatch.setattr(torch.cuda, "make_graphed_callables", refuse)
    model = _Stepped()
    with caplog.at_level("WARNING"):
        assert cuda_graphs.graphed(model, torch.randn(4, 3), functools.partial(autocast, CPU, "fp32")) is model
    assert (
        "CUDA graph capture failed, training eagerly: operation not permitted when stream is capturing" in caplog.text
    )


@pytest.mark.parametrize("variant,single", [("loss_proxy", True), ("ccp", True), ("sample_ccp", False)])
def test_graphs_only_for_objectives_that_call_the_network_once(tiny_params, variant, single):
    from pipeline.methods import build_objective
    from pipeline.training.stepping import Stepper

    objective = build_objective(run_setup(tiny_params, f"c2_{variant}"), 4)
    assert objective.single_forward is single
    model = nn.Linear(4, tiny_params.train.embedding_dim)
    step = Stepper(model, objective, torch.optim.SGD(model.parameters(), lr=0.1), tiny_params.train, CPU)
    assert step.capture is False  # the CPU never captures


@pytest.mark.parametrize("thread_local", [True, False])
def test_the_training_loader_pins_beside_a_capture_only_where_torch_captures_thread_locally(
    monkeypatch, tiny_params, thread_local
):
    """An H200 with torch 2.11 (no capture_error_mode): a batch pinned mid-capture failed the capture and killed the
    loader's pinning thread (cuda_graphs.py). Without thread-local capture the loader of a captured network does not
    pin; a network that is not captured pins as before."""

    class Capturing(loop.Stepper):
        def __post_init__(self):
            super().__post_init__()
            self.capture = True  # as on CUDA with train.cuda_graphs

    pins = []
    monkeypatch.setattr(cuda_graphs, "THREAD_LOCAL_CAPTURE", thread_local)
    monkeypatch.setattr(loop, "epoch_batches", lambda *args: pins.append(args[-1]))
    model, features = nn.Linear(3, 2), torch.zeros(8, 3)
    labels = np.repeat(np.arange(4), 2)
    data = FoldData(torch.utils.data.TensorDataset(features), labels, None, None, None, None)
    cfg = dataclasses.replace(tiny_params.train, classes_per_batch=2)
    for stepper in (Capturing, loop.Stepper):
        monkeypatch.setattr(loop, "Stepper", stepper)
        loop.prepare(model, Objective(nn.MSELoss()), data, cfg, CPU)
    assert pins == [thread_local, True]
    images = ManifestImages.__new__(ManifestImages)  # an image dataset: its loader pins on CUDA unless told not to
    assert loader_settings(images, 2, torch.device("cuda"), pin=False)["pin_memory"] is False
    assert loader_settings(images, 2, torch.device("cuda"))["pin_memory"] is True
