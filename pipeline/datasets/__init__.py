"""The data set registry: one record per data set the prepare stage can write, under its ``data.name``.

Every module of this package registers its data sets with :func:`register_dataset`, and nothing else lists them:
params validation builds the ``data`` section from the records (``data.name``'s choices and each data set's own
keys, pipeline/params/data.py), the checks ask a record which protocol its data set trains under, the prepare
stage calls its ``prepare``, and the report names it with its ``description`` and finds the papers' numbers for it
by its ``paper_name`` (reference/published.csv).

Record modules import nothing heavy when imported (every stage loads params): a record's ``prepare`` imports its
implementation (pipeline/data/) when it is called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.infra.registry import Registry


@dataclass(frozen=True)
class Dataset:
    """A data set.

    - name: its ``data.name``;
    - prepare(out, data, folds, seed): write its images and manifest (pipeline/data/manifest.py) into the new
      folder `out`, from the validated ``data`` section, with `folds` MLRC folds of the training classes;
    - description: what the report says it is, formatted with ``data`` (``"your own images: `{data.source}`"``);
    - schema: a section of the ``data.*`` keys only this data set reads (None: none), merged into ``data``;
    - paper_name: its name in the papers' tables (reference/published.csv), or None where no paper reports it.
      A data set the papers report trains under one of their protocols (``data.setting``: mlrc or conventional,
      conf/protocol), any other under ``none``.
    """

    name: str
    prepare: Callable[[Path, Any, int, int], None]
    description: str
    schema: type | None = None
    paper_name: str | None = None


# in registration order: data.name's choices list the embedded sets first
_DATASETS: Registry[Dataset] = Registry(__name__, "data set", identity=lambda d: (d.description, d.schema), sort=False)


def register_dataset(dataset: Dataset) -> Dataset:
    return _DATASETS.add(dataset.name, dataset, dataset.prepare.__module__)


def datasets() -> dict[str, Dataset]:
    """Every registered data set by name, in registration order (imports this package's modules once)."""
    return _DATASETS.records()
