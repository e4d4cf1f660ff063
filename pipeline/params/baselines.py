"""The ``baselines`` section, every baseline run by name (loss + miner + sampler, rho-regularisation, XBM), and
its rule; the method families' sections (ccp, profs) are in pipeline/families."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal, Union

from pydantic import Field

from pipeline.config.base import ParamsError
from pipeline.config.loader import Section, rule
from pipeline.families import MethodConfig
from pipeline.infra.schema import section
from pipeline.losses import loss_records, loss_schemas
from pipeline.miners import miner_records, miner_schemas
from pipeline.miners.library import NoMinerParams

# a baseline's loss: any registered loss with a name tag, chosen by loss.name (pipeline/losses)
BaselineLoss = Annotated[Union[loss_schemas()], Field(discriminator="name")]  # noqa: UP007 (a tuple of types)
# its miner: any registered miner, chosen by miner.name (pipeline/miners)
BaselineMiner = Annotated[Union[miner_schemas()], Field(discriminator="name")]  # noqa: UP007 (a tuple of types)


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


@rule("experiment", "train")
def _check_baselines(p, source: str) -> None:
    batch = p.train.batch_size
    xbm_losses = [loss for loss, record in loss_records().items() if record.xbm]
    triplet_miners = [miner for miner, record in miner_records().items() if record.triplets]
    for name, run in p.baselines.items():
        key = f"{source}: baselines.{name}"
        if run.p_switch > 0 and run.miner.name not in triplet_miners:
            raise ParamsError(
                f"{key}.p_switch: rho-regularisation switches mined triplets; needs a miner "
                f"in {triplet_miners}, got {run.miner.name!r}"
            )
        if run.xbm_batches and run.loss.name not in xbm_losses:
            raise ParamsError(
                f"{key}.xbm_batches: cross-batch memory supports the losses {xbm_losses}, not {run.loss.name!r}"
            )
        k = run.sampler.images_per_class
        if name in p.experiment.methods and run.sampler.name == "spc" and k and (batch % k or batch // k < 2):
            raise ParamsError(
                f"{key}.sampler.images_per_class: {k} must divide the batch of {batch} "
                f"(train.classes_per_batch x train.images_per_class) into >= 2 classes"
            )


# every batch / proxy baseline by run name; experiment.methods picks the ones the pipeline trains
BASELINES = Section("baselines", dict[str, BaselineConfig], field(default_factory=dict), (_check_baselines,))
