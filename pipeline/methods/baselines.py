"""Baselines: one run = a loss, a miner, a batch sampler, optional rho-regularisation and XBM.

The loss and the miner come from their registries (pipeline/losses, pipeline/miners); rho-regularisation is ours
(pipeline/miners/modules/tuple_miners.py).
"""

from __future__ import annotations

from pytorch_metric_learning import losses

from pipeline.batching.samplers import ClassBatchSampler, RandomClassBatchSampler
from pipeline.config import TrainConfig
from pipeline.losses import LossContext, build_loss
from pipeline.methods.objective import Objective
from pipeline.miners import build_miner
from pipeline.miners.modules.tuple_miners import RhoSwitchMiner
from pipeline.params.baselines import BaselineConfig


class BaselineObjective(Objective):
    """A baseline's loss and miner, with its own batch sampler when the run asks for one."""

    def __init__(self, cfg: BaselineConfig, num_classes: int, train: TrainConfig):
        embedding_dim = train.embedding_dim
        loss, miner = build_loss(cfg.loss, LossContext(num_classes, embedding_dim)), build_miner(cfg.miner)
        if cfg.p_switch > 0:
            miner = RhoSwitchMiner(miner, cfg.p_switch)
        if cfg.xbm_batches:  # XBM: the loss also sees the last xbm_batches batches' embeddings
            memory = cfg.xbm_batches * train.batch_size
            loss = losses.CrossBatchMemory(loss, embedding_dim, memory_size=memory, miner=miner)
            miner = None
        super().__init__(loss, miner, lr=cfg.loss_lr)
        self.sampler = cfg.sampler

    def batch_sampler(self, labels, cfg: TrainConfig, seed: int):
        """SPC-k with k other than train.images_per_class, or random-class batches; else the default."""
        batch, k = cfg.batch_size, self.sampler.images_per_class
        if self.sampler.name == "random_class":
            return RandomClassBatchSampler(labels, batch, cfg.steps_per_epoch, seed)
        if k and (batch % k or batch // k < 2):
            raise ValueError(f"sampler.images_per_class={k} must divide the batch of {batch} into >= 2 classes")
        if k and k != cfg.images_per_class:
            return ClassBatchSampler(labels, batch // k, k, cfg.steps_per_epoch, seed)
        return None
