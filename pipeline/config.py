"""params.yaml schema and the one loader every stage uses.

The schema is a tree of dataclasses. Each leaf may carry bounds or a set of
allowed values (see :func:`param`). Loading goes through OmegaConf, which
reads YAML 1.2 numbers (``2e-4`` is a float, unlike PyYAML's ``safe_load``),
checks types against the dataclasses and rejects unknown keys. Every problem
is turned into one :class:`ParamsError` whose message names the key, e.g.
``params.yaml: ccp.lamda: unknown key``.

``lambda`` is a Python keyword; YAML keys that are keywords map to fields
with a trailing underscore (``lambda`` -> ``lambda_``).
"""

from __future__ import annotations

import dataclasses
import keyword
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

from pipeline.errors import PipelineError


class ParamsError(PipelineError, ValueError):
    """A params.yaml problem; the message is one line naming the key."""


def param(default: Any, *, ge=None, gt=None, le=None, lt=None, choices=None):
    """A schema field with a default and optional bounds or allowed values."""
    meta = {"ge": ge, "gt": gt, "le": le, "lt": lt, "choices": choices}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


# --------------------------------------------------------------------- schema


@dataclass
class ExperimentConfig:
    """What the pipeline runs: dvc.yaml's train/evaluate matrices read these lists."""

    methods: list[str] = param(["ms", "proxy_anchor"])
    folds: list[int] = param([0, 1, 2, 3])
    # replicate seeds: every run trains folds x seeds models (pipeline/runs.py model_ids)
    seeds: list[int] = param([0])


BENCHMARK_NAMES = ["cub", "cars196", "sop", "inshop"]  # pipeline/data/benchmarks.py
SETTINGS = ["mlrc", "conventional"]  # the presets a real data set selects (params.yaml presets)
EMBEDDED_NAMES = ["digit_pairs", "emoji"]  # installed offline; emoji applies presets.emoji only (frozen features)
EMOJI_SET_NAMES = ["noto", "noto-v1", "twemoji", "openmoji", "fluent-emoji", "fluent-emoji-flat",
                   "fluent-emoji-high-contrast", "emojione", "emojione-v1", "emojione-monotone",
                   "streamline-emojis"]  # pipeline/data/emoji.py EMOJI_SETS


@dataclass
class DataConfig:
    # digit_pairs: the embedded default; emoji: the real-image default (presets.emoji); the real benchmarks
    # select presets.<setting> then presets.<name>
    name: str = param("digit_pairs", choices=[*EMBEDDED_NAMES, *BENCHMARK_NAMES])
    setting: str = param("mlrc", choices=SETTINGS)
    # real data sets: a folder with the data set's files (archives or extracted), or its single archive;
    # "" = download into download_dir (from mirror/<file name> when a mirror is given)
    source: str = param("")
    download_dir: str = param("data/downloads")
    mirror: str = param("")
    # digit pairs: images drawn per class (each image = two real digit images side by side)
    images_per_class: int = param(40, ge=2)
    # fraction of each digit's instances reserved for training-class images (rest: test classes)
    train_instance_fraction: float = param(0.5, gt=0.0, lt=1.0)
    # number of classes of the digit-pair set (at most 100 ordered pairs)
    num_classes: int = param(100, ge=4, le=100)
    # emoji: the Iconify emoji sets drawn (one image per set per class), the number of them that must hold
    # an emoji for it to be a class, and the rendered image side in pixels
    emoji_sets: list[str] = param(list(EMOJI_SET_NAMES), choices=EMOJI_SET_NAMES)
    emoji_min_sets: int = param(8, ge=2)
    render_size: int = param(224, ge=16)


@dataclass
class BackboneConfig:
    # "pixels": raw intensities (no weights, the embedded default); "tiny_cnn": small CNN for finetune
    # mode; "bn_inception"; a torchvision ResNet ("resnet50", ...) or a model with a `features` trunk.
    name: str = param("pixels")
    # "" = random initialisation; "imagenet" = the published ImageNet weights (downloaded into
    # data.download_dir, checksum and keys verified); or a local weights file
    weights: str = param("")
    # CNN backbones: final image side (crop); resize: shorter side before the centre crop (0: resize to input_size)
    input_size: int = param(32, ge=8)
    resize: int = param(0, ge=0)
    channels: int = param(3, choices=[1, 3])
    # rgb: [0, 1] RGB then (x - mean) / std; bgr255: BGR in [0, 255] minus mean, std 1 (BN-Inception's Caffe weights)
    input_space: str = param("rgb", choices=["rgb", "bgr255"])
    mean: list[float] = param([0.485, 0.456, 0.406])
    std: list[float] = param([0.229, 0.224, 0.225])
    # finetune-mode training augmentation: shift (pad by train.augment_pad, random crop back) or
    # random_resized_crop (scale crop_scale, aspect 3/4-4/3) to input_size; flip: random horizontal flip
    augment: str = param("shift", choices=["shift", "random_resized_crop"])
    crop_scale: list[float] = param([0.16, 1.0])
    flip: bool = param(False)
    # global pooling of the last feature map: avg (GAP), max (GMP), avg_plus_max (GAP + GMP, same width),
    # avg_cat_max (concatenated, twice the width)
    pooling: str = param("avg", choices=["avg", "max", "avg_plus_max", "avg_cat_max"])
    # BatchNorm layers of the backbone kept in eval mode with frozen affine parameters (MLRC, CCP)
    freeze_bn: bool = param(False)
    embed_batch_size: int = param(256, ge=1)


@dataclass
class TrainConfig:
    mode: str = param("frozen", choices=["frozen", "finetune"])
    device: str = param("auto", choices=["auto", "cpu", "cuda"])
    embedding_dim: int = param(64, ge=2)
    # hidden width of the embedding head (0 = a single linear layer, as MLRC's embedder)
    head_hidden: int = param(0, ge=0)
    optimizer: str = param("adam", choices=["adam", "rmsprop", "sgd"])
    lr: float = param(1e-3, gt=0.0)
    weight_decay: float = param(1e-4, ge=0.0)
    momentum: float = param(0.9, ge=0.0, lt=1.0)
    classes_per_batch: int = param(8, ge=2)
    images_per_class: int = param(4, ge=2)
    steps_per_epoch: int = param(50, ge=1)
    max_epochs: int = param(60, ge=1)
    patience: int = param(8, ge=1)
    # minimum improvement of validation MAP@R that resets the patience counter
    min_delta: float = param(1e-5, ge=0.0)
    grad_clip_norm: float = param(10.0, ge=0.0)
    # finetune-mode augmentation: random crop after zero padding, horizontal flip off for digits
    augment_pad: int = param(2, ge=0)
    num_workers: int = param(0, ge=0)
    # finetune mode on CUDA: autocast precision (fp32 = none, fp16 with gradient scaling, bf16)
    amp: str = param("fp32", choices=["fp32", "fp16", "bf16"])  # not "off": YAML 1.1 reads that as false
    # the train stages' command (dvc.yaml): python, or torchrun --standalone --nproc_per_node=N for DDP
    launcher: str = param("python")
    # a stage's independent jobs (folds, ablation grid points) run in this many processes (pipeline/parallel.py)
    workers: int = param(1, ge=1)
    threads_per_worker: int = param(1, ge=1)


@dataclass
class EvalConfig:
    recall_at: list[int] = param([1, 2, 4, 8])
    # queries per faiss search call (bounds memory on SOP-size test sets)
    query_chunk: int = param(4096, ge=1)
    kmeans_niter: int = param(20, ge=1)
    kmeans_restarts: int = param(1, ge=1)
    workers: int = param(1, ge=1)  # runs evaluated in this many processes


@dataclass
class MethodConfig:
    """Fields every method section has."""

    # normalisation applied to the head output in training, validation and test
    embedding_norm: str = param("l2", choices=["l2", "lipschitz", "none"])


# ------------------------------------------------ baselines: one run = loss + miner + sampler (+ rho, XBM)
# Each loss/miner schema carries its `name`; a run's `loss:` / `miner:` mapping is validated against the
# schema its name selects. Defaults follow the Revisiting supplement A.1-A.2 unless a docstring says otherwise.


@dataclass
class ContrastiveLossParams:
    """Contrastive (Hadsell et al. 2006; Revisiting eq. 1): d on positives, [gamma - d]_+ on negatives (Euclidean)."""

    name: str = "contrastive"
    pos_margin: float = param(0.0, ge=0.0)
    neg_margin: float = param(1.0, gt=0.0)


@dataclass
class CosineContrastiveLossParams:
    """C1 of CCP/XBM: (1 - s) on positives, (s - neg_margin)_+ on negatives, s the cosine similarity."""

    name: str = "c1"
    neg_margin: float = param(0.5, ge=-1.0, le=1.0)


@dataclass
class TripletLossParams:
    """Triplet (Revisiting eq. 2): [d(a,p) - d(a,n) + gamma]_+ (Euclidean)."""

    name: str = "triplet"
    margin: float = param(0.2, ge=0.0)


@dataclass
class MarginLossParams:
    """Margin (Wu et al. 2017; Revisiting eq. 10): boundary beta (learnable, one per class in the paper's
    code; here one shared, learned at the run's loss_lr), margin gamma."""

    name: str = "margin"
    margin: float = param(0.2, ge=0.0)
    beta: float = param(1.2, gt=0.0)
    learn_beta: bool = param(True)


@dataclass
class MultiSimilarityLossParams:
    """Multi-similarity loss (Wang et al. 2019; Revisiting eq. 12)."""

    name: str = "multi_similarity"
    alpha: float = param(2.0, gt=0.0)
    beta: float = param(40.0, gt=0.0)
    base: float = param(0.5)


@dataclass
class LiftedLossParams:
    """Lifted structure loss, ANML eq. 23: [log sum_pos e^{-S} + log sum_neg e^{S} + m]_+ on cosine similarity."""

    name: str = "lifted"
    margin: float = param(0.5)


@dataclass
class GeneralizedLiftedLossParams:
    """Generalised lifted structure (Hermans et al. 2017; Revisiting eq. 3) with embedding regulariser nu."""

    name: str = "generalized_lifted"
    neg_margin: float = param(1.0)
    embedding_reg: float = param(0.005, ge=0.0)


@dataclass
class NPairLossParams:
    """N-pair (Sohn 2016; Revisiting eq. 4, ANML eq. 30) with embedding regulariser nu."""

    name: str = "npair"
    embedding_reg: float = param(0.0, ge=0.0)


@dataclass
class AngularLossParams:
    """Angular loss (Wang et al. 2017; Revisiting eq. 5), alpha in degrees (pi/4 = 45)."""

    name: str = "angular"
    alpha: float = param(45.0, gt=0.0, lt=90.0)


@dataclass
class ArcFaceLossParams:
    """ArcFace (Deng et al. 2018; Revisiting eq. 6): additive angular margin in degrees (0.5 rad = 28.6), scale s."""

    name: str = "arcface"
    margin: float = param(28.6, ge=0.0, lt=90.0)
    scale: float = param(16.0, gt=0.0)


@dataclass
class HistogramLossParams:
    """Histogram loss (Ustinova & Lempitsky 2016; Revisiting eq. 7-9), R bins (65 for CUB/Cars, 11 for SOP)."""

    name: str = "histogram"
    num_bins: int = param(65, ge=2)


@dataclass
class ProxyNCALossParams:
    """ProxyNCA (Revisiting eq. 13) and ProxyNCA++ (Teh et al. 2020: softmax_scale = 1/T, fast proxies)."""

    name: str = "proxy_nca"
    softmax_scale: float = param(1.0, gt=0.0)


@dataclass
class ProxyAnchorLossParams:
    """Proxy-Anchor loss (Kim et al. 2020, eq. 4): one proxy per class."""

    name: str = "proxy_anchor"
    margin: float = param(0.1, ge=0.0)
    alpha: float = param(32.0, gt=0.0)


@dataclass
class QuadrupletLossParams:
    """Quadruplet loss (Chen et al. 2017; Revisiting eq. 14), margins gamma1 and gamma2 (Euclidean)."""

    name: str = "quadruplet"
    margin1: float = param(1.0, ge=0.0)
    margin2: float = param(0.5, ge=0.0)


@dataclass
class SNRLossParams:
    """SNR triplet loss (Yuan et al. 2019; Revisiting eq. 15): triplet on the SNR distance + zero-mean regulariser."""

    name: str = "snr"
    margin: float = param(0.2, ge=0.0)
    zero_mean_reg: float = param(0.005, ge=0.0)


@dataclass
class SoftTripleLossParams:
    """SoftTriple (Qian et al. 2019; Revisiting eq. 16-18): centres per class K ("-S": 1, "-L": several)."""

    name: str = "softtriple"
    centers_per_class: int = param(2, ge=1)
    la: float = param(8.0, gt=0.0)
    gamma: float = param(0.1, gt=0.0)
    margin: float = param(0.01, ge=0.0)
    tau: float = param(0.2, ge=0.0)


@dataclass
class NormalizedSoftmaxLossParams:
    """Normalised softmax (Zhai & Wu 2018; Revisiting eq. 19), temperature T."""

    name: str = "normalized_softmax"
    temperature: float = param(0.05, gt=0.0)


@dataclass
class DANMLLossParams:
    """DANML (ANML eq. 22); used with the multi-similarity miner, as the paper trains it.

    Defaults: the middle of the paper's search ranges (gamma1 in {-1,-2,-3}, gamma2 in {25,30,35},
    lambda1 in {0.5,...,0.65}, lambda2 = lambda1 + sigma with sigma in {0.01,0.02,0.03}).
    """

    name: str = "danml"
    gamma1: float = param(-2.0, lt=0.0)
    gamma2: float = param(30.0, gt=0.0)
    lambda1: float = param(0.55, ge=0.0, le=2.0)
    sigma: float = param(0.02, ge=0.0)
    outer: str = param("logistic", choices=["logistic", "linear"])


@dataclass
class ImprovedLiftedLossParams:
    """ANML eq. 25. The paper gives no values for Table 3; these defaults are ours (soft min/max at
    gamma 10, radii lambda1 for positives and lambda2 for negatives on cosine similarity)."""

    name: str = "anml_lifted"
    gamma1: float = param(10.0, gt=0.0)
    gamma2: float = param(10.0, gt=0.0)
    lambda1: float = param(0.8, ge=-1.0, le=1.0)
    lambda2: float = param(0.3, ge=-1.0, le=1.0)
    margin: float = param(0.1)


@dataclass
class ImprovedNPairLossParams:
    """ANML eq. 31. gamma and lambda are not given for Table 3; these defaults are ours."""

    name: str = "anml_npair"
    gamma: float = param(2.0, gt=0.0)
    lambda_: float = param(0.1, ge=0.0)


BASELINE_LOSSES = {s.name: s for s in (
    ContrastiveLossParams, CosineContrastiveLossParams, TripletLossParams, MarginLossParams,
    MultiSimilarityLossParams, LiftedLossParams, GeneralizedLiftedLossParams, NPairLossParams, AngularLossParams,
    ArcFaceLossParams, HistogramLossParams, ProxyNCALossParams, ProxyAnchorLossParams, QuadrupletLossParams,
    SNRLossParams, SoftTripleLossParams, NormalizedSoftmaxLossParams, DANMLLossParams, ImprovedLiftedLossParams,
    ImprovedNPairLossParams)}


@dataclass
class NoMinerParams:
    """Every pair / triplet of the batch (the loss's own default)."""

    name: str = "none"


@dataclass
class MultiSimilarityMinerParams:
    """Multi-similarity pair mining (Wang et al. 2019, eq. 3-4; Revisiting eq. 11)."""

    name: str = "multi_similarity"
    epsilon: float = param(0.1, ge=0.0)


@dataclass
class DistanceWeightedMinerParams:
    """Distance-weighted sampling (Wu et al. 2017; Revisiting eq. 23-24): distances clipped at `cutoff`,
    none beyond `nonzero_loss_cutoff` (pytorch-metric-learning)."""

    name: str = "distance_weighted"
    cutoff: float = param(0.5, ge=0.0)
    nonzero_loss_cutoff: float = param(1.4, gt=0.0)


@dataclass
class RandomMinerParams:
    """Random triplets, one per anchor (Revisiting A.2)."""

    name: str = "random"


@dataclass
class SemihardMinerParams:
    """Semihard triplets (Schroff et al. 2015; Revisiting eq. 20), one per anchor."""

    name: str = "semihard"


@dataclass
class SofthardMinerParams:
    """Softhard triplets (Roth & Brattoli 2019; Revisiting eq. 21-22), one per anchor."""

    name: str = "softhard"


BASELINE_MINERS = {s.name: s for s in (NoMinerParams, MultiSimilarityMinerParams, DistanceWeightedMinerParams,
                                       RandomMinerParams, SemihardMinerParams, SofthardMinerParams)}
TRIPLET_MINERS = ("distance_weighted", "random", "semihard", "softhard")
# losses pytorch-metric-learning's CrossBatchMemory can wrap
XBM_LOSSES = ("contrastive", "c1", "triplet", "margin", "multi_similarity", "generalized_lifted", "angular", "snr")


@dataclass
class SamplerParams:
    """Batch construction (Revisiting section 4.3): ``spc`` = SPC-k, batch/k classes with k images each
    (k = images_per_class, 0 = train.images_per_class); ``random_class`` = every image of the batch from a
    class drawn uniformly at random (a random number of images per class)."""

    name: str = param("spc", choices=["spc", "random_class"])
    images_per_class: int = param(0, ge=0)


@dataclass
class BaselineConfig(MethodConfig):
    """One baseline run: its loss, miner, batch sampler, rho-regularisation and cross-batch memory."""

    loss: Any = None  # a *LossParams chosen by loss.name
    miner: Any = None  # a *MinerParams chosen by miner.name
    sampler: SamplerParams = field(default_factory=SamplerParams)
    # rho-regularisation (Revisiting section 5): with probability p_switch a triplet's negative is
    # replaced by its positive and the positive by the anchor, pushing a same-class sample away
    p_switch: float = param(0.0, ge=0.0, le=1.0)
    # cross-batch memory (XBM, Wang et al. 2020) of this many batches; 0 = off
    xbm_batches: int = param(0, ge=0)
    # learning rate of the loss's own parameters (proxies, centres, learnable margin beta)
    loss_lr: float = param(1e-2, gt=0.0)


@dataclass
class C2Config:
    """C2: contrastive with positive margin, CCP eq. 4.2: (y_ij (d_ij - beta) + alpha)_+, beta >= alpha > 0."""

    alpha: float = param(0.19205, gt=0.0)
    beta: float = param(0.19205, gt=0.0)


CCP_LOSSES = ["c1", "c2", "ms", "triplet"]
PROFS_LOSSES = ["contrastive", "triplet", "margin", "ms", "lifted", "angular", "npair", "softtriple"]


@dataclass
class CCPConfig(MethodConfig):
    """CCP (Algorithms 1 and 2) and its ablation variants; see pipeline/methods/ccp.py."""

    losses: list[str] = param(CCP_LOSSES, choices=CCP_LOSSES)
    # the variants without projections (batch, Loss-Proxy: CCP Fig. 4a), and those of Algorithm 1; two lists so
    # that dvc.yaml gives each group its own stages and param keys (ccp.lambda reruns only the second)
    variants: list[str] = param(["batch", "loss_proxy"], choices=["batch", "loss_proxy"])
    alternating: list[str] = param(["ccp"], choices=["ccp", "sample_ccp"])
    lambda_: float = param(2e-4, ge=0.0)
    zero_lambda_first: bool = param(True)
    proxies_per_class: int = param(4, ge=1)
    pool_size: int = param(8, ge=1)
    patience: int = param(3, ge=1)  # epochs without a better validation MAP@R that end a sub-problem
    max_subproblems: int = param(50, ge=1)
    in_batch_weight: float = param(0.1, ge=0.0)
    # the authors' release, each a choice (pipeline/methods/ccp.py, pipeline/losses/pair_losses.py): proxies at
    # train.lr x this; Adam's proxy moments kept across re-initialisations; per-loss reductions; C1 / MS on the
    # dot product of the normalised embeddings; K-center on raw head outputs
    proxy_lr_multiplier: float = param(1.0, gt=0.0)
    reset_proxy_optimizer: bool = param(False)
    reducer: str = param("release", choices=["release", "mean", "avg_nonzero"])
    similarity: str = param("dot", choices=["dot", "cosine"])
    kcenter_space: str = param("raw", choices=["raw", "normalized"])
    # the pair losses' settings (C2 is CCP's own; the others share the baselines' schemas)
    c1: CosineContrastiveLossParams = field(default_factory=CosineContrastiveLossParams)
    c2: C2Config = field(default_factory=C2Config)
    ms: MultiSimilarityLossParams = field(default_factory=MultiSimilarityLossParams)
    triplet: TripletLossParams = field(default_factory=lambda: TripletLossParams(margin=0.0961))


@dataclass
class PROFSConfig(MethodConfig):
    """PROFS (Algorithm 1) with and without hard negative class mining; see pipeline/methods/profs.py."""

    losses: list[str] = param(["contrastive", "triplet", "ms"], choices=PROFS_LOSSES)
    variants: list[str] = param(["plain", "profs", "profs_hncm"], choices=["plain", "profs", "profs_hncm"])
    lambda_: float = param(1e-3, ge=0.0)
    # M, the steps per projection: "derived" = ceil(rho / p(y)), p(y) = B / (I L) (section 5.4.1); or "fixed" = m
    m_mode: str = param("derived", choices=["derived", "fixed"])
    m: int = param(30, ge=1)
    rho: float = param(6.0, gt=0.0)
    # HNCM batches: random seed classes, each followed by this many of its nearest classes (section 4.2)
    hard_classes: int = param(1, ge=1)
    # contrastive/triplet/margin: as many hard negatives as positives per anchor (section 5.3), or all pairs
    pair_sampling: str = param("one_negative_per_positive", choices=["one_negative_per_positive", "all"])
    # learning rate of the loss's own parameters (SoftTriple's centres)
    loss_lr: float = param(1e-2, gt=0.0)
    # the PROFS family's budget (plain included), 0 = train.max_epochs / train.patience; the real-data presets
    # set the paper's 100 epochs with the best epoch reported (patience 100)
    max_epochs: int = param(0, ge=0)
    patience: int = param(0, ge=0)
    # each loss's settings, in the baselines' schemas (PROFS eq. 4.6 margins for contrastive; SoftTriple
    # without the centre regulariser, tau = 0, as in the PROFS paper's use)
    contrastive: ContrastiveLossParams = field(default_factory=lambda: ContrastiveLossParams(neg_margin=0.8))
    triplet: TripletLossParams = field(default_factory=lambda: TripletLossParams(margin=0.1))
    margin: MarginLossParams = field(default_factory=lambda: MarginLossParams(learn_beta=False))
    ms: MultiSimilarityLossParams = field(default_factory=lambda: MultiSimilarityLossParams(beta=50.0))
    lifted: GeneralizedLiftedLossParams = field(default_factory=lambda: GeneralizedLiftedLossParams(embedding_reg=0.0))
    angular: AngularLossParams = field(default_factory=lambda: AngularLossParams(alpha=40.0))
    softtriple: SoftTripleLossParams = field(default_factory=lambda: SoftTripleLossParams(la=20.0, tau=0.0))


@dataclass
class PocConfig:
    """CCP's 2-D proof of concept (Fig. 2): ten digit classes, 4 proxies per class, b = 16."""

    loss: str = param("c2", choices=CCP_LOSSES)
    proxies_per_class: int = param(4, ge=1)
    pool_size: int = param(16, ge=1)
    max_subproblems: int = param(6, ge=1)
    max_epochs: int = param(80, ge=1)
    hidden: int = param(64, ge=1)
    val_fraction: float = param(0.2, gt=0.0, lt=0.5)
    test_fraction: float = param(0.2, gt=0.0, lt=0.5)
    seeds: list[int] = param([0, 1, 2, 3, 4])  # replicate seeds of every variant (the claims table's pairs)


LANML_DATASETS = ["iris", "wine", "breast_cancer", "digits", "australian", "cars", "ecoli", "german", "glass", "isolet", "monk1", "solar",
                  "vehicle", "pendigits", "letter", "usps", "coil20"]
LANML_METHODS = ["euclidean", "lanml_minus", "lanml_plus", "pnca", "nca", "lmnn", "itml", "scml", "gmml"]


@dataclass
class LanmlConfig:
    """LANML on UCI data (ANML section 7.1); see pipeline/linear/protocol.py."""

    datasets: list[str] = param(["iris", "wine"], choices=LANML_DATASETS)
    methods: list[str] = param(["euclidean", "lanml_minus", "lanml_plus", "pnca", "nca", "lmnn", "itml", "gmml"],
                               choices=LANML_METHODS)
    repeats: int = param(3, ge=1)  # random 70/30 splits (paper: 30)
    test_fraction: float = param(0.3, gt=0.0, lt=1.0)
    cv_folds: int = param(5, ge=2)
    max_k: int = param(40, ge=1)  # kNN with K in 1..max_k
    pca_dims: int = param(150, ge=1)  # PCA when there are more features
    k_similar: int = param(10, ge=1)  # LANML-: S_i = the k nearest same-class samples
    # LANML-/LANML+ (L-BFGS on M = L^T L): a smoothing round ends at this relative decrease of f;
    # the hinge smoothing goes from 0.1 down to smoothing_min
    solver_tol: float = param(1e-7, gt=0.0)
    smoothing_min: float = param(1e-4, gt=0.0)
    workers: int = param(1, ge=1)  # cross-validation and refit jobs in this many processes, one BLAS thread each
    # method -> {hyperparameter: values}; every combination is cross-validated
    grids: dict[str, Any] = field(default_factory=dict)


@dataclass
class CCPAblationConfig:
    """CCP Fig. 5 (#proxy x pool size b) and a lambda sweep, on ``<loss>_ccp``."""

    loss: str = param("c2", choices=CCP_LOSSES)  # Fig. 5 uses C2-CCP
    proxies_per_class: list[int] = param([1, 2, 4], ge=1)
    pool_factors: list[int] = param([1, 2, 4], ge=1)  # b = factor x #proxy; factor 1 = random selection
    lambdas: list[float] = param([0.0, 2e-5, 2e-4, 2e-3, 2e-2], ge=0.0)


@dataclass
class PROFSAblationConfig:
    """PROFS Fig. 3 (lambda sweep) and Fig. 2 (fixed M sweep), on ``<loss>_profs``."""

    loss: str = param("margin", choices=PROFS_LOSSES)  # Fig. 3 uses Margin
    lambdas: list[float] = param([0.0, 1e-4, 1e-3, 1e-2, 1e-1], ge=0.0)
    m: list[int] = param([5, 15, 30, 60, 120], ge=1)


@dataclass
class AblationConfig:
    """The ablation studies (dvc.yaml ablation@ccp, ablation@profs): one fold per grid point."""

    fold: int = param(0, ge=0)
    ccp: CCPAblationConfig = field(default_factory=CCPAblationConfig)
    profs: PROFSAblationConfig = field(default_factory=PROFSAblationConfig)


@dataclass
class SearchDim:
    """One tuned hyperparameter's range (Optuna suggest_float / suggest_int)."""

    low: float = 0.0
    high: float = 1.0
    log: bool = False  # sample uniformly in log space (low > 0)
    integer: bool = False


@dataclass
class TuneConfig:
    """MLRC's tuning step on the validation folds (pipeline/tuning.py)."""

    trials: int = param(0, ge=0)  # per tuned run; 0 = train at the values written in params.yaml
    sampler: str = param("tpe", choices=["tpe", "gp"])  # Optuna's TPESampler or GPSampler, seeded per trial
    startup_trials: int = param(10, ge=1)  # random trials before the model-based proposals start
    # run -> {params key (dotted, e.g. baselines.ms.loss.alpha): range}; runs without a space are not tuned
    spaces: dict[str, Any] = field(default_factory=dict)  # checked into SearchDim by _validated
    # run -> run: the first trains at the second's tuned values (the loss keys a family shares, e.g. ccp.c2.*)
    # and its own space, if any, is searched with those values fixed (pipeline/tuning.py)
    inherit: dict[str, str] = field(default_factory=dict)


@dataclass
class ReportConfig:
    decimals: int = param(2, ge=0, le=6)
    # rows in run order ("none": baselines, then per CCP loss its batch / Loss-Proxy / CCP rows) or by a metric
    sort_by: str = param("none", choices=["none", "precision_at_1", "r_precision", "map_at_r", "map_at_c", "nmi", "f1"])
    # runs whose singular value spectra share one figure (each must be trained: experiment.methods, ccp, profs)
    spectrum_runs: list[str] = param(["margin_d", "r_margin_d", "ms", "c2_batch", "c2_ccp"])
    # resamples of the claims' paired bootstrap over test classes and models (pipeline/reporting/claims.py)
    bootstrap_samples: int = param(10000, ge=100)


@dataclass
class Params:
    seed: int = param(0, ge=0)
    experiment: ExperimentConfig = field(default_factory=ExperimentConfig)
    data: DataConfig = field(default_factory=DataConfig)
    backbone: BackboneConfig = field(default_factory=BackboneConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    # every batch / proxy baseline by run name; experiment.methods picks the ones the pipeline trains
    baselines: dict[str, Any] = field(default_factory=dict)
    ccp: CCPConfig = field(default_factory=lambda: CCPConfig(embedding_norm="lipschitz"))
    profs: PROFSConfig = field(default_factory=PROFSConfig)
    poc: PocConfig = field(default_factory=PocConfig)
    lanml: LanmlConfig = field(default_factory=LanmlConfig)
    ablation: AblationConfig = field(default_factory=AblationConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    tune: TuneConfig = field(default_factory=TuneConfig)
    # settings of the papers (mlrc, conventional) and per data set; applied by data.name / data.setting
    presets: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------- loading


def _yaml_key(name: str) -> str:
    return name[:-1] if name.endswith("_") and keyword.iskeyword(name[:-1]) else name


def _field_name(key: str) -> str:
    return key + "_" if keyword.iskeyword(key) else key


def _rename_keywords(node: Any) -> Any:
    """Map YAML keys that are Python keywords to their schema field names."""
    if isinstance(node, dict):
        return {_field_name(str(k)): _rename_keywords(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_rename_keywords(v) for v in node]
    return node


def _check_bounds(node: Any, prefix: str, source: str) -> None:
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        key = f"{prefix}{_yaml_key(f.name)}"
        if dataclasses.is_dataclass(value):
            _check_bounds(value, key + ".", source)
            continue
        if isinstance(value, dict):  # baselines: run name -> BaselineConfig (lanml.grids: checked apart)
            for name, run in value.items():
                if dataclasses.is_dataclass(run):
                    _check_bounds(run, f"{key}.{name}.", source)
            continue
        meta = f.metadata
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, float) and not math.isfinite(v):
                raise ParamsError(f"{source}: {key}: must be finite, got {v}")
            if meta.get("choices") is not None and v not in meta["choices"]:
                raise ParamsError(f"{source}: {key}: {v!r} is not one of {meta['choices']}")
            for name, ok, word in (
                ("ge", lambda a, b: a >= b, ">="),
                ("gt", lambda a, b: a > b, ">"),
                ("le", lambda a, b: a <= b, "<="),
                ("lt", lambda a, b: a < b, "<"),
            ):
                bound = meta.get(name)
                if bound is not None and not ok(v, bound):
                    raise ParamsError(f"{source}: {key}: must be {word} {bound}, got {v}")


def _check_consistency(p: Params, source: str) -> None:
    """Cross-field rules that a single field's bounds cannot express."""
    for name in p.experiment.methods:
        if name not in p.baselines:
            raise ParamsError(f"{source}: experiment.methods: unknown method {name!r} "
                              f"(valid: the runs under baselines: {', '.join(sorted(p.baselines))})")
    if len(set(p.experiment.methods)) != len(p.experiment.methods):
        raise ParamsError(f"{source}: experiment.methods: duplicate method names")
    batch = p.train.classes_per_batch * p.train.images_per_class
    for name, run in p.baselines.items():
        key = f"{source}: baselines.{name}"
        if run.p_switch > 0 and run.miner.name not in TRIPLET_MINERS:
            raise ParamsError(f"{key}.p_switch: rho-regularisation switches mined triplets; needs a miner "
                              f"in {list(TRIPLET_MINERS)}, got {run.miner.name!r}")
        if run.xbm_batches and run.loss.name not in XBM_LOSSES:
            raise ParamsError(f"{key}.xbm_batches: cross-batch memory supports the losses {list(XBM_LOSSES)}, "
                              f"not {run.loss.name!r}")
        k = run.sampler.images_per_class
        if name in p.experiment.methods and run.sampler.name == "spc" and k and (batch % k or batch // k < 2):
            raise ParamsError(f"{key}.sampler.images_per_class: {k} must divide the batch of {batch} "
                              f"(train.classes_per_batch x train.images_per_class) into >= 2 classes")
    folds = p.experiment.folds
    if sorted(folds) != list(range(len(folds))) or len(folds) < 2:
        raise ParamsError(f"{source}: experiment.folds: must be 0..k-1 with k >= 2, got {folds}")
    seeds = p.experiment.seeds
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ParamsError(f"{source}: experiment.seeds: need one or more distinct seeds >= 0, got {seeds}")
    if any(k < 1 for k in p.eval.recall_at):
        raise ParamsError(f"{source}: eval.recall_at: every K must be >= 1")
    if p.ccp.pool_size < p.ccp.proxies_per_class:
        raise ParamsError(f"{source}: ccp.pool_size: must be >= ccp.proxies_per_class "
                          f"({p.ccp.pool_size} < {p.ccp.proxies_per_class}; Algorithm 2 picks from the pool)")
    if not p.poc.seeds or len(set(p.poc.seeds)) != len(p.poc.seeds) or min(p.poc.seeds) < 0:
        raise ParamsError(f"{source}: poc.seeds: need one or more distinct seeds >= 0, got {p.poc.seeds}")
    if p.poc.pool_size < p.poc.proxies_per_class:
        raise ParamsError(f"{source}: poc.pool_size: must be >= poc.proxies_per_class")
    if p.ccp.c2.beta < p.ccp.c2.alpha:
        raise ParamsError(f"{source}: ccp.c2.beta: must be >= ccp.c2.alpha (eq. 4.2 needs beta >= alpha > 0)")
    _check_lanml_grids(p.lanml, source)
    for section in ("ccp", "profs"):  # a section's loss settings are for the loss its key names
        node = getattr(p, section)
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if hasattr(value, "name") and value.name != type(value)().name:
                raise ParamsError(f"{source}: {section}.{f.name}.name: must be {type(value)().name!r} "
                                  f"(or left out), got {value.name!r}")
    if p.profs.hard_classes >= p.train.classes_per_batch:
        raise ParamsError(f"{source}: profs.hard_classes: must be < train.classes_per_batch "
                          f"({p.profs.hard_classes} >= {p.train.classes_per_batch}; an HNCM batch needs a seed class)")
    for section, keys in (("ccp", ("losses", "variants", "alternating")), ("profs", ("losses", "variants"))):
        for key in keys:
            values = getattr(getattr(p, section), key)
            if len(set(values)) != len(values):
                raise ParamsError(f"{source}: {section}.{key}: duplicate names")
    if p.ablation.fold not in p.experiment.folds:
        raise ParamsError(f"{source}: ablation.fold: {p.ablation.fold} is not one of experiment.folds {p.experiment.folds}")
    for study in ("ccp", "profs"):
        for f in dataclasses.fields(getattr(p.ablation, study)):
            if getattr(getattr(p.ablation, study), f.name) == []:
                raise ParamsError(f"{source}: ablation.{study}.{f.name}: needs one or more values")
    low, high = (p.backbone.crop_scale + [0.0, 0.0])[:2]
    if len(p.backbone.crop_scale) != 2 or not 0 < low <= high <= 1:
        raise ParamsError(f"{source}: backbone.crop_scale: need [low, high] with 0 < low <= high <= 1, "
                          f"got {p.backbone.crop_scale}")
    if len(p.backbone.mean) != p.backbone.channels or len(p.backbone.std) != p.backbone.channels:
        raise ParamsError(f"{source}: backbone.mean/std: need one value per channel ({p.backbone.channels})")
    _check_tune(p, source)


def _check_tune(p: Params, source: str) -> None:
    """Every tuned key names a numeric params value, every range is a range, and inheritance is a forest whose
    runs search disjoint keys (a key tuned twice along a chain would have two values)."""
    for run, base in p.tune.inherit.items():
        chain, node = [run], base
        while node is not None:
            if node in chain:
                raise ParamsError(f"{source}: tune.inherit.{run}: inherits from itself ({' -> '.join(chain + [node])})")
            chain.append(node)
            node = p.tune.inherit.get(node)
        keys = [k for r in chain for k in p.tune.spaces.get(r, {})]
        if len(set(keys)) != len(keys):
            raise ParamsError(f"{source}: tune.inherit.{run}: {' -> '.join(chain)} search the same key twice "
                              f"({', '.join(sorted({k for k in keys if keys.count(k) > 1}))})")
    values = to_dict(p) if p.tune.spaces else {}
    for run, space in p.tune.spaces.items():
        for key, dim in space.items():
            where = f"{source}: tune.spaces.{run}.{key}"
            node = dotted(values, key)
            if isinstance(node, bool) or not isinstance(node, (int, float)):
                raise ParamsError(f"{where}: not a numeric params key")
            if not dim.low < dim.high:
                raise ParamsError(f"{where}: need low < high, got [{dim.low}, {dim.high}]")
            if dim.log and dim.low <= 0:
                raise ParamsError(f"{where}: a log range needs low > 0, got {dim.low}")


# sign rules of eq. 19: LANML- (convex, Lemma 3) gamma1 < 0 < gamma2; LANML+ gamma1 > 0, gamma2 > 0
_GAMMA_SIGNS = {("lanml_minus", "gamma1"): -1, ("lanml_minus", "gamma2"): 1,
                ("lanml_plus", "gamma1"): 1, ("lanml_plus", "gamma2"): 1}


def _check_lanml_grids(cfg: LanmlConfig, source: str) -> None:
    import inspect

    from pipeline.linear.methods import METHODS  # local import: light (numpy/scipy)

    for method, grid in cfg.grids.items():
        key = f"{source}: lanml.grids.{method}"
        if method not in METHODS:
            raise ParamsError(f"{key}: unknown method (valid: {', '.join(METHODS)})")
        if not isinstance(grid, dict):
            raise ParamsError(f"{key}: must map hyperparameter names to lists of values")
        accepted = set(inspect.signature(METHODS[method]).parameters) - {"x", "y", "random_state", "k_similar", "m0"}
        for name, values in grid.items():
            if name not in accepted:
                raise ParamsError(f"{key}.{name}: unknown hyperparameter (valid: {', '.join(sorted(accepted))})")
            if not isinstance(values, list) or not values:
                raise ParamsError(f"{key}.{name}: must be a non-empty list of values")
            sign = _GAMMA_SIGNS.get((method, name))
            if sign and any(not isinstance(v, (int, float)) or v * sign <= 0 for v in values):
                raise ParamsError(f"{key}.{name}: every value must be {'> 0' if sign > 0 else '< 0'} "
                                  f"(LANML- needs gamma1 < 0 < gamma2, LANML+ gamma1 > 0), got {values}")


def _format_omegaconf_error(err: OmegaConfBaseException, source: str, prefix: str = "") -> str:
    key = prefix + (getattr(err, "full_key", None) or "?")
    key = ".".join(_yaml_key(k) for k in str(key).split("."))
    if isinstance(err, ConfigKeyError):
        return f"{source}: {key}: unknown key"
    return f"{source}: {key}: {str(err).splitlines()[0]}"


def _typed_mapping(data: Any, key: str, source: str) -> dict:
    if not isinstance(data, dict):
        raise ParamsError(f"{source}: {key}: must be a mapping, got {data!r}")
    return data


def _typed(schema: type, data: Any, key: str, source: str) -> Any:
    """`data` validated against the dataclass `schema`; errors name `key`."""
    if not isinstance(data, dict):
        raise ParamsError(f"{source}: {key}: must be a mapping, got {data!r}")
    try:
        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), data))
    except OmegaConfBaseException as err:
        raise ParamsError(_format_omegaconf_error(err, source, prefix=key + ".")) from err


def _named(registry: dict, data: Any, key: str, source: str) -> Any:
    """A loss or miner mapping validated against the schema its `name` selects."""
    name = data.get("name") if isinstance(data, dict) else None
    if name not in registry:
        raise ParamsError(f"{source}: {key}.name: {name!r} is not one of {sorted(registry)}")
    return _typed(registry[name], data, key, source)


def _baseline(name: str, spec: Any, source: str) -> BaselineConfig:
    key = f"baselines.{name}"
    if not isinstance(spec, dict) or "loss" not in spec:
        raise ParamsError(f"{source}: {key}: must be a mapping with a loss")
    rest = {k: v for k, v in spec.items() if k not in ("loss", "miner")}
    run = _typed(BaselineConfig, rest, key, source)
    run.loss = _named(BASELINE_LOSSES, spec["loss"], key + ".loss", source)
    run.miner = _named(BASELINE_MINERS, spec.get("miner", {"name": "none"}), key + ".miner", source)
    return run


def load_params(path: str | Path = "params.yaml") -> Params:
    """Load and validate params.yaml; raise ParamsError with a one-line message."""
    path = Path(path)
    source = path.name
    if not path.is_file():
        raise ParamsError(f"{path}: file not found")
    try:
        raw = OmegaConf.load(path)
    except Exception as err:  # YAML syntax errors
        raise ParamsError(f"{source}: cannot parse YAML: {str(err).splitlines()[0]}") from err
    if not isinstance(raw, DictConfig):
        raise ParamsError(f"{source}: top level must be a mapping")
    if not raw:
        raise ParamsError(f"{path}: empty (the project's params.yaml holds every section; restore it with "
                          f"`git checkout -- {path.name}`)")
    return params_from_dict(OmegaConf.to_container(raw), source)


def _merge(base: dict, override: dict) -> dict:
    """`base` with `override`'s values, mappings merged key by key (lists and scalars replaced)."""
    out = dict(base)
    for key, value in override.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _apply_presets(data: dict, source: str) -> tuple[dict, str]:
    """The effective params: for a real data set, ``presets.<data.setting>`` and then ``presets.<data.name>``
    merged over the sections (they win over the sections' values, which are the embedded default's; tune a
    preset's value under presets.<name>); for the emoji default, ``presets.emoji`` alone (its frozen-feature
    settings are not the papers' finetune settings that presets.<setting> holds), then, when ``train.mode`` is
    finetune, ``presets.emoji_finetune`` (the GPU variant: the backbone trains too). Every preset is checked
    against the schema, selected or not.
    Returns the params and a note naming the applied presets (for error messages)."""
    presets = data.get("presets") or {}
    if not isinstance(presets, dict):
        raise ParamsError(f"{source}: presets: must be a mapping of preset names to sections")
    defaults = Params()
    for name, preset in presets.items():
        key = f"presets.{name}"
        if name == "digit_pairs":  # present so that dvc.yaml can name presets.<data.name> for every data set
            if preset:
                raise ParamsError(f"{source}: {key}: must be empty ({{}}): the embedded default's values are the "
                                  "sections themselves")
            continue
        valid = SETTINGS + EMBEDDED_NAMES[1:] + ["emoji_finetune"] + BENCHMARK_NAMES
        if name not in valid:
            raise ParamsError(f"{source}: {key}: unknown preset (valid: {', '.join(valid)})")
        if not isinstance(preset, dict) or "presets" in preset or "name" in (preset.get("data") or {}):
            raise ParamsError(f"{source}: {key}: must be a mapping of sections, without presets or data.name")
        for section, values in _rename_keywords(preset).items():  # each section against its own schema only
            if not hasattr(defaults, section):
                raise ParamsError(f"{source}: {key}.{section}: unknown key")
            schema = getattr(defaults, section)
            if not dataclasses.is_dataclass(schema):  # seed, baselines: checked when the preset is applied
                continue
            if not isinstance(values, dict):
                raise ParamsError(f"{source}: {key}.{section}: must be a mapping")
            try:
                OmegaConf.merge(OmegaConf.structured(type(schema)), values)
            except OmegaConfBaseException as err:
                raise ParamsError(_format_omegaconf_error(err, source, prefix=f"{key}.{section}.")) from err
    section = data.get("data") or {}
    name, setting = section.get("name", "digit_pairs"), section.get("setting", "mlrc")
    if name == "emoji":
        finetune = (data.get("train") or {}).get("mode") == "finetune"
        chosen = ("emoji", "emoji_finetune") if finetune else ("emoji",)
    elif name in BENCHMARK_NAMES and setting in SETTINGS:
        chosen = (setting, name)
    else:
        return data, ""
    applied = [k for k in chosen if k in presets]
    for k in applied:
        data = _merge(data, presets[k])
    return data, f" (after applying {', '.join(f'presets.{k}' for k in applied)})" if applied else ""


def params_from_dict(data: dict, source: str = "params.yaml") -> Params:
    """Validate a plain dict against the schema, presets applied (used by load_params and tests)."""
    data, note = _apply_presets(data, source)
    try:
        return _validated(data, source)
    except ParamsError as err:
        raise ParamsError(f"{err}{note}") from err


def _validated(data: dict, source: str) -> Params:
    schema = OmegaConf.structured(Params)
    try:
        merged = OmegaConf.merge(schema, _rename_keywords(data))
        params = OmegaConf.to_object(merged)
    except OmegaConfBaseException as err:
        raise ParamsError(_format_omegaconf_error(err, source)) from err
    params.baselines = {name: _baseline(name, spec, source) for name, spec in params.baselines.items()}
    params.tune.spaces = {run: {key: _typed(SearchDim, dim, f"tune.spaces.{run}.{key}", source)
                                for key, dim in _typed_mapping(space, f"tune.spaces.{run}", source).items()}
                          for run, space in params.tune.spaces.items()}
    _check_bounds(params, "", source)
    _check_consistency(params, source)
    return params


def dotted(tree: dict, key: str, parent: bool = False) -> Any:
    """The value a dotted key (e.g. baselines.ms.loss.alpha) names in a plain params dict, or None; with
    `parent`, the mapping that holds its last part (None when the key does not exist)."""
    *path, last = key.split(".")
    node = tree
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or last not in node:
        return None
    return node if parent else node[last]


def to_dict(node: Any) -> Any:
    """A params (sub)tree as plain dict with YAML key names (for logs and reports)."""
    if dataclasses.is_dataclass(node):
        return {_yaml_key(f.name): to_dict(getattr(node, f.name)) for f in dataclasses.fields(node)}
    if isinstance(node, list):
        return [to_dict(v) for v in node]
    if isinstance(node, dict):
        return {k: to_dict(v) for k, v in node.items()}
    return node
