"""The miner registry: one record per miner a baseline run may name, its params schema and its builder.

Every module of this package (not ``modules/``, which holds the torch implementations) registers its miners with
:func:`register_miner`, and nothing else lists them: params validation builds the baselines' ``miner:`` choice
from the records (:func:`miner_schemas`), the checks ask a record whether it mines triplets, and the baselines
build a miner with :func:`build_miner`. A miner's name is its schema's ``name`` tag, the one vocabulary of
params.yaml (``baselines.<run>.miner.name``). Like the loss records (pipeline/losses), record modules import no
torch when imported: a builder imports pytorch-metric-learning or ``modules/`` when it is called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.infra.registry import Registry, schema_tag


@dataclass(frozen=True)
class MinerRecord:
    """A miner: its name, params schema, builder (params section -> miner, or None for every tuple of the
    batch) and whether it mines triplets (rho-regularisation switches a triplet's positive and negative)."""

    name: str
    schema: type
    build: Callable[[Any], Any]
    triplets: bool
    module: str


_MINERS: Registry[MinerRecord] = Registry(__name__, "miner", identity=lambda r: r.schema)


def register_miner(schema: type, *, triplets: bool = False):
    """Decorator: register `build(cfg)` as the builder of the miner whose params are `schema` (named by its tag)."""

    def register(build):
        name = schema_tag(schema)
        if name is None:
            raise TypeError(f"{build.__module__}: {schema.__name__} needs a name: Literal[...] tag")
        _MINERS.add(name, MinerRecord(name, schema, build, triplets, build.__module__), build.__module__)
        return build

    return register


def miner_records() -> dict[str, MinerRecord]:
    """Every registered miner by name, in name order (imports every record module of this package once)."""
    return _MINERS.records()


def miner_schemas() -> tuple[type, ...]:
    """The schemas a baseline's ``miner:`` mapping may select by its ``name``."""
    return tuple(r.schema for r in miner_records().values())


def build_miner(cfg):
    """The miner a ``baselines.<run>.miner`` section names (None: the loss sees every tuple of the batch)."""
    return miner_records()[cfg.name].build(cfg)
