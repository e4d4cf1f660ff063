"""The methods' sections: the baseline runs (loss + miner + sampler, rho-regularisation, XBM), CCP and PROFS."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal, Union

from pydantic import Field

from pipeline.config.miners import BaselineMiner, NoMinerParams
from pipeline.infra.schema import section
from pipeline.losses import loss_schemas
from pipeline.losses.ccp import C2Config, CosineContrastiveLossParams
from pipeline.losses.revisiting import (
    AngularLossParams,
    ContrastiveLossParams,
    GeneralizedLiftedLossParams,
    MarginLossParams,
    MultiSimilarityLossParams,
    SoftTripleLossParams,
    TripletLossParams,
)

# a baseline's loss: any registered loss with a name tag, chosen by loss.name (pipeline/losses)
BaselineLoss = Annotated[Union[loss_schemas()], Field(discriminator="name")]  # noqa: UP007 (a tuple of types)
CCPLoss = Literal["c1", "c2", "ms", "triplet"]
PROFSLoss = Literal["contrastive", "triplet", "margin", "ms", "lifted", "angular", "npair", "softtriple"]


@section(kw_only=True)
class MethodConfig:
    """Fields every method section has."""

    # normalisation applied to the head output in training, validation and test
    embedding_norm: Literal["l2", "lipschitz", "none"] = "l2"


@section
class SamplerParams:
    """Batch construction (Revisiting section 4.3): ``spc`` = SPC-k, batch/k classes with k images each
    (k = images_per_class, 0 = train.images_per_class); ``random_class`` = every image of the batch from a
    class drawn uniformly at random (a random number of images per class)."""

    name: Literal["spc", "random_class"] = "spc"
    images_per_class: int = Field(0, ge=0)


@section(kw_only=True)
class BaselineConfig(MethodConfig):
    """One baseline run: its loss, miner, batch sampler, rho-regularisation and cross-batch memory."""

    loss: BaselineLoss  # the schema loss.name selects
    # the embeddings validation and test read: "same" = the training normalisation (embedding_norm); "l2" = x/||x||
    # (Revisiting: Lifted and N-pair train on the non-normalised phi*, retrieval reads phi)
    eval_norm: Literal["same", "l2"] = "same"
    miner: BaselineMiner = field(default_factory=NoMinerParams)
    sampler: SamplerParams = field(default_factory=SamplerParams)
    # rho-regularisation (Revisiting section 5): with probability p_switch a triplet's negative is
    # replaced by its positive and the positive by the anchor, pushing a same-class sample away
    p_switch: float = Field(0.0, ge=0.0, le=1.0)
    # cross-batch memory (XBM, Wang et al. 2020) of this many batches; 0 = off
    xbm_batches: int = Field(0, ge=0)
    # learning rate of the loss's own parameters (proxies, centres, learnable margin beta)
    loss_lr: float = Field(1e-2, gt=0.0)


@section(kw_only=True)
class CCPConfig(MethodConfig):
    """CCP (Algorithms 1 and 2) and its ablation variants; see pipeline/methods/ccp.py."""

    embedding_norm: Literal["l2", "lipschitz", "none"] = "lipschitz"
    losses: list[CCPLoss] = field(default_factory=lambda: ["c1", "c2", "ms", "triplet"])
    # the variants without projections (batch, Loss-Proxy: CCP Fig. 4a), and those of Algorithm 1; two lists so
    # that dvc.yaml gives each group its own stages and param keys (ccp.lambda reruns only the second)
    variants: list[Literal["batch", "loss_proxy"]] = field(default_factory=lambda: ["batch", "loss_proxy"])
    alternating: list[Literal["ccp", "sample_ccp"]] = field(default_factory=lambda: ["ccp"])
    lambda_: float = Field(2e-4, ge=0.0)
    zero_lambda_first: bool = True
    proxies_per_class: int = Field(4, ge=1)
    pool_size: int = Field(8, ge=1)
    patience: int = Field(3, ge=1)  # epochs without a better validation MAP@R that end a sub-problem
    max_subproblems: int = Field(50, ge=1)
    in_batch_weight: float = Field(0.1, ge=0.0)
    # the authors' release, each a choice (pipeline/methods/ccp.py, pipeline/losses/modules/pair_losses.py): proxies at
    # train.lr x this; Adam's proxy moments kept across re-initialisations; per-loss reductions; C1 / MS on the
    # dot product of the normalised embeddings; K-center on raw head outputs
    proxy_lr_multiplier: float = Field(1.0, gt=0.0)
    reset_proxy_optimizer: bool = False
    reducer: Literal["release", "mean", "avg_nonzero"] = "release"
    similarity: Literal["dot", "cosine"] = "dot"
    kcenter_space: Literal["raw", "normalized"] = "raw"
    # the pair losses' settings (C2 is CCP's own; the others share the baselines' schemas)
    c1: CosineContrastiveLossParams = field(default_factory=CosineContrastiveLossParams)
    c2: C2Config = field(default_factory=C2Config)
    ms: MultiSimilarityLossParams = field(default_factory=MultiSimilarityLossParams)
    triplet: TripletLossParams = field(default_factory=lambda: TripletLossParams(margin=0.0961))


@section(kw_only=True)
class PROFSConfig(MethodConfig):
    """PROFS (Algorithm 1) with and without hard negative class mining; see pipeline/methods/profs.py."""

    losses: list[PROFSLoss] = field(default_factory=lambda: ["contrastive", "triplet", "ms"])
    variants: list[Literal["plain", "profs", "profs_hncm"]] = field(
        default_factory=lambda: ["plain", "profs", "profs_hncm"]
    )
    lambda_: float = Field(1e-3, ge=0.0)
    # M, the steps per projection: "derived" = ceil(rho / p(y)), p(y) = B / (I L) (section 5.4.1); or "fixed" = m
    m_mode: Literal["derived", "fixed"] = "derived"
    m: int = Field(30, ge=1)
    rho: float = Field(6.0, gt=0.0)
    # HNCM batches: random seed classes, each followed by this many of its nearest classes (section 4.2)
    hard_classes: int = Field(1, ge=1)
    # contrastive/triplet/margin: as many hard negatives as positives per anchor (section 5.3), or all pairs
    pair_sampling: Literal["one_negative_per_positive", "all"] = "one_negative_per_positive"
    # learning rate of the loss's own parameters (SoftTriple's centres)
    loss_lr: float = Field(1e-2, gt=0.0)
    # the PROFS family's budget (plain included), 0 = train.max_epochs / train.patience; the real-data
    # protocols set the paper's 100 epochs with the best epoch reported (patience 100)
    max_epochs: int = Field(0, ge=0)
    patience: int = Field(0, ge=0)
    # each loss's settings, in the baselines' schemas (PROFS eq. 4.6 margins for contrastive; SoftTriple
    # without the centre regulariser, tau = 0, as in the PROFS paper's use)
    contrastive: ContrastiveLossParams = field(default_factory=lambda: ContrastiveLossParams(neg_margin=0.8))
    triplet: TripletLossParams = field(default_factory=lambda: TripletLossParams(margin=0.1))
    margin: MarginLossParams = field(default_factory=lambda: MarginLossParams(learn_beta=False))
    ms: MultiSimilarityLossParams = field(default_factory=lambda: MultiSimilarityLossParams(beta=50.0))
    lifted: GeneralizedLiftedLossParams = field(default_factory=lambda: GeneralizedLiftedLossParams(embedding_reg=0.0))
    angular: AngularLossParams = field(default_factory=lambda: AngularLossParams(alpha=40.0))
    softtriple: SoftTripleLossParams = field(default_factory=lambda: SoftTripleLossParams(la=20.0, tau=0.0))
