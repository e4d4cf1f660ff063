"""What runs and on what: the seed, the experiment grid, the keys every data set has, the backbone, training,
evaluation and the scope sections, and their rules."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal

from pydantic import Field

from pipeline.config.base import ParamsError
from pipeline.config.loader import Section, rule
from pipeline.infra.schema import section

PositiveInt = Annotated[int, Field(ge=1)]
Workers = Literal["auto"] | PositiveInt  # processes: a number, or auto (pipeline/infra/runtime.py worker_count)


@section
class ExperimentConfig:
    """What the pipeline runs: dvc.yaml's train/evaluate matrices read these lists."""

    methods: list[str] = field(default_factory=lambda: ["ms", "proxy_anchor"])
    # composed from methods and the families' lists (conf/config.yaml ${dml_runs:}); dvc.yaml's train matrix reads
    # it, so it must say what those lists say (pipeline/params/root.py); None: not composed (a dict in a test)
    runs: list[str] | None = None
    folds: list[int] = field(default_factory=lambda: [0, 1, 2, 3])
    # replicate seeds: every run trains folds x seeds models (pipeline/runs.py model_ids)
    seeds: list[Annotated[int, Field(ge=0)]] = Field(default_factory=lambda: [0], min_length=1)


@section(kw_only=True)
class DataKeys:
    """The ``data`` keys every data set has; each data set's own keys come from its record (pipeline/datasets),
    and pipeline/params/data.py merges them into the ``data`` section."""

    # digit_pairs: the embedded default; emoji: the real-image default; folder: your own images; the real
    # benchmarks (conf/dataset); one of pipeline/datasets' records
    name: str = "digit_pairs"
    # the real data sets' protocol (conf/protocol); none for the embedded sets
    setting: Literal["none", "mlrc", "conventional"] = "none"
    # real data sets: a folder with the data set's files (archives or extracted), or its single archive;
    # "" = download into download_dir (from mirror/<file name> when a mirror is given); folder: a folder of class
    # folders or a CSV manifest (path, label)
    source: str = ""
    # the colour transparent images (PNG icons, drawings) are composited over before they become inputs: a name
    # ("white", "black") or "#rrggbb" (pipeline/models/transforms.py)
    background: str = "white"
    download_dir: str = "data/downloads"
    mirror: str = ""


@section
class BackboneConfig:
    # "pixels": raw intensities (no weights, the embedded default); "tiny_cnn": small CNN for finetune
    # mode; "bn_inception"; a torchvision ResNet ("resnet50", ...) or a model with a `features` trunk.
    name: str = "pixels"
    # "" = random initialisation; "imagenet" = the published ImageNet weights (downloaded into
    # data.download_dir, checksum and keys verified); or a local weights file
    weights: str = ""
    # CNN backbones: final image side (crop); resize: shorter side before the centre crop (0: resize to input_size)
    input_size: int = Field(32, ge=8)
    resize: int = Field(0, ge=0)
    channels: Literal[1, 3] = 3
    # rgb: [0, 1] RGB then (x - mean) / std; bgr255: BGR in [0, 255] minus mean, std 1 (BN-Inception's Caffe weights)
    input_space: Literal["rgb", "bgr255"] = "rgb"
    mean: list[float] = field(default_factory=lambda: [0.485, 0.456, 0.406])
    std: list[float] = field(default_factory=lambda: [0.229, 0.224, 0.225])
    # finetune-mode training augmentation: shift (pad by train.augment_pad, random crop back) or
    # random_resized_crop (scale crop_scale, aspect 3/4-4/3) to input_size; flip: random horizontal flip
    augment: Literal["shift", "random_resized_crop"] = "shift"
    crop_scale: list[float] = field(default_factory=lambda: [0.16, 1.0])
    flip: bool = False
    # global pooling of the last feature map: avg (GAP), max (GMP), avg_plus_max (GAP + GMP, same width),
    # avg_cat_max (concatenated, twice the width)
    pooling: Literal["avg", "max", "avg_plus_max", "avg_cat_max"] = "avg"
    # BatchNorm layers of the backbone kept in eval mode with frozen affine parameters (MLRC, CCP)
    freeze_bn: bool = False
    embed_batch_size: int = Field(256, ge=1)


@section
class TrainConfig:
    mode: Literal["frozen", "finetune"] = "frozen"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    embedding_dim: int = Field(64, ge=2)
    # hidden width of the embedding head (0 = a single linear layer, as MLRC's embedder)
    head_hidden: int = Field(0, ge=0)
    optimizer: Literal["adam", "rmsprop", "sgd"] = "adam"
    lr: float = Field(1e-3, gt=0.0)
    weight_decay: float = Field(1e-4, ge=0.0)
    momentum: float = Field(0.9, ge=0.0, lt=1.0)
    classes_per_batch: int = Field(8, ge=2)
    images_per_class: int = Field(4, ge=2)
    steps_per_epoch: int = Field(50, ge=1)
    max_epochs: int = Field(60, ge=1)
    patience: int = Field(8, ge=1)
    # minimum improvement of validation MAP@R that resets the patience counter
    min_delta: float = Field(1e-5, ge=0.0)
    grad_clip_norm: float = Field(10.0, ge=0.0)
    # finetune-mode augmentation: random crop after zero padding, horizontal flip off for digits
    augment_pad: int = Field(2, ge=0)
    # finetune mode: where the training augmentation's per-pixel work runs. device: the embed stage decodes every
    # image once (pipeline/data/pixels.py) and crops, resizes, flips and normalises whole batches on the training
    # device (pipeline/models/device_augment.py); loader: PIL in the loader processes, image by image
    augment_on: Literal["device", "loader"] = "device"
    num_workers: int = Field(0, ge=0)
    # finetune mode on CUDA: autocast precision (fp32 = none, fp16 with gradient scaling, bf16)
    amp: Literal["fp32", "fp16", "bf16"] = "fp32"  # not "off": YAML 1.1 reads that as false
    # on CUDA: the network's training forward and backward replayed from a CUDA graph (pipeline/training/cuda_graphs.py)
    cuda_graphs: bool = True
    # the train stages' command (dvc.yaml): python, or torchrun --standalone --nproc_per_node=N for DDP
    launcher: str = "python"
    # a stage's independent jobs (folds, ablation grid points) run in this many processes (pipeline/infra/parallel.py);
    # auto: one per usable core on the CPU, runtime.MODELS_PER_GPU on a GPU (pipeline/infra/runtime.py worker_count)
    workers: Workers = "auto"
    threads_per_worker: int = Field(1, ge=1)

    @property
    def batch_size(self) -> int:
        """Images per training batch, B = classes_per_batch x images_per_class."""
        return self.classes_per_batch * self.images_per_class


@section
class EvalConfig:
    recall_at: list[PositiveInt] = field(default_factory=lambda: [1, 2, 4, 8])
    # queries per faiss search call (bounds memory on SOP-size test sets)
    query_chunk: int = Field(4096, ge=1)
    kmeans_niter: int = Field(20, ge=1)
    kmeans_restarts: int = Field(1, ge=1)
    workers: Workers = "auto"  # runs evaluated in this many processes (auto: one per usable core)


@section
class ScopeConfig:
    """What runs beside the chosen runs (conf/scope): dvc.yaml runs the paper's own stages (poc, lanml,
    lanml_timing, ablation, report) once per entry, so `[paper]` runs them and `[]` (scope=methods) none."""

    paper: list[Literal["paper"]] = Field(default_factory=lambda: ["paper"], max_length=1)


@rule()
def _check_folds(p, source: str) -> None:
    folds = p.experiment.folds
    if sorted(folds) != list(range(len(folds))) or len(folds) < 2:
        raise ParamsError(f"{source}: experiment.folds: must be 0..k-1 with k >= 2, got {folds}")
    if len(set(p.experiment.seeds)) != len(p.experiment.seeds):
        raise ParamsError(f"{source}: experiment.seeds: need distinct seeds, got {p.experiment.seeds}")


@rule()
def _check_backbone(p, source: str) -> None:
    low, high = (p.backbone.crop_scale + [0.0, 0.0])[:2]
    if len(p.backbone.crop_scale) != 2 or not 0 < low <= high <= 1:
        raise ParamsError(
            f"{source}: backbone.crop_scale: need [low, high] with 0 < low <= high <= 1, got {p.backbone.crop_scale}"
        )
    if len(p.backbone.mean) != p.backbone.channels or len(p.backbone.std) != p.backbone.channels:
        raise ParamsError(f"{source}: backbone.mean/std: need one value per channel ({p.backbone.channels})")


SEED = Section("seed", int, Field(0, ge=0))
EXPERIMENT = Section("experiment", ExperimentConfig, field(default_factory=ExperimentConfig), (_check_folds,))
BACKBONE = Section("backbone", BackboneConfig, field(default_factory=BackboneConfig), (_check_backbone,))
TRAIN = Section("train", TrainConfig, field(default_factory=TrainConfig))
EVAL = Section("eval", EvalConfig, field(default_factory=EvalConfig))
SCOPE = Section("scope", ScopeConfig, field(default_factory=ScopeConfig))
