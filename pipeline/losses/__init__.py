"""The loss registry: one record per loss, its params schema and its builder, under one name.

Every module of this package (not ``modules/``, which holds the torch implementations) registers its losses with
:func:`register_loss`, and nothing else lists them: params validation builds the baselines' ``loss:`` choice
from the records (:func:`loss_schemas`), and every method builds a loss from its params section with
:func:`build_loss`, which finds the record by the section's schema. A loss's name is its schema's ``name`` tag,
the one vocabulary of params.yaml (``baselines.<run>.loss.name``), the records and the builders; a family's loss
keys (``ccp.ms``, ``profs.lifted``) only name the section that holds a schema.

Record modules import no torch when imported (params load without it, so dispatch and report stages start
quickly; tests/test_loss_registry.py checks): a builder imports pytorch-metric-learning or its implementation
under ``modules/`` when it is called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pipeline.infra.registry import Registry, schema_tag


@dataclass(frozen=True)
class LossContext:
    """What a builder may use besides the loss's own section: the class count and embedding width (proxy and
    classifier losses), and CCP's release choices (pipeline/methods/ccp.py) for the losses CCP runs: the
    reduction (``library``: pytorch-metric-learning's own; ``release``: the authors' per loss; ``mean``;
    ``avg_nonzero``) and what C1 / MS call the cosine (``cosine`` normalises; ``dot``: the dot product of the
    embeddings as the model normalised them)."""

    num_classes: int = 0
    embedding_dim: int = 0
    reducer: Literal["library", "release", "mean", "avg_nonzero"] = "library"
    similarity: Literal["cosine", "dot"] = "cosine"


@dataclass(frozen=True)
class LossRecord:
    """A loss: its name, params schema and builder, and whether pytorch-metric-learning's CrossBatchMemory
    (XBM) can wrap it (a pair or triplet loss with no parameters of its own)."""

    name: str
    schema: type
    build: Callable[[Any, LossContext], Any]
    xbm: bool
    module: str


_LOSSES: Registry[LossRecord] = Registry(__name__, "loss", identity=lambda r: r.schema)


def register_loss(schema: type, *, name: str | None = None, xbm: bool = False):
    """Decorator: register `build(cfg, ctx)` as the builder of the loss whose params are `schema`; the name is
    the schema's ``name`` tag (a section without one, like CCP's ``c2``, gives it here)."""

    def register(build):
        loss = name or schema_tag(schema)
        if loss is None or (schema_tag(schema) not in (None, loss)):
            raise TypeError(f"{build.__module__}: {schema.__name__} needs a name: Literal[...] tag equal to its name")
        _LOSSES.add(loss, LossRecord(loss, schema, build, xbm, build.__module__), build.__module__)
        return build

    return register


def loss_records() -> dict[str, LossRecord]:
    """Every registered loss by name, in name order (imports every record module of this package once)."""
    return _LOSSES.records()


def loss_schemas() -> tuple[type, ...]:
    """The schemas a baseline's ``loss:`` mapping may select by its ``name`` (those with a tag)."""
    return tuple(r.schema for r in loss_records().values() if schema_tag(r.schema) is not None)


def record_of(cfg) -> LossRecord:
    """The record of a loss section (found by its schema)."""
    for record in loss_records().values():
        if type(cfg) is record.schema:
            return record
    raise ValueError(f"no loss is registered for {type(cfg).__name__}")


def build_loss(cfg, ctx: LossContext | None = None):
    """The loss a params section describes (a ``baselines.<run>.loss`` mapping, ``ccp.c2``, ``profs.ms`` ...)."""
    return record_of(cfg).build(cfg, ctx or LossContext())
