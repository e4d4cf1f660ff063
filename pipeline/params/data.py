"""The ``data`` section: the keys every data set has (pipeline/config/run.py ``DataKeys``), ``name`` one of the
registered data sets (pipeline/datasets), then each data set's own keys (its record's schema), so a new data set
needs no edit here; and its rules."""

from __future__ import annotations

from dataclasses import field, make_dataclass
from typing import Literal

from PIL import ImageColor
from pydantic import Field

from pipeline.config.base import ParamsError
from pipeline.config.loader import Section, rule
from pipeline.config.run import DataKeys
from pipeline.datasets import datasets
from pipeline.infra.schema import section


def _data_section() -> type:
    records = list(datasets().values())
    own = [r.schema for r in records if r.schema is not None]
    name = ("name", Literal[tuple(r.name for r in records)], Field("digit_pairs"))
    bases = (*reversed(own), DataKeys)  # a dataclass takes its bases' fields last base first: DataKeys' lead
    return section(make_dataclass("DataConfig", [name], bases=bases, kw_only=True, namespace={"__module__": __name__}))


DataConfig = _data_section()


@rule()
def _check_background(p, source: str) -> None:
    try:
        ImageColor.getrgb(p.data.background)
    except ValueError:
        colour = p.data.background
        raise ParamsError(f"{source}: data.background: {colour!r} is not a colour (white, #ffffff)") from None


@rule()
def _check_protocol(p, source: str) -> None:
    """A real data set trains under one of the papers' protocols (conf/protocol), an embedded one or your own folder
    under none: a data set's name alone (``-S data.name=cub``) would train it at the embedded default's settings."""
    embedded = datasets()[p.data.name].paper_name is None
    if embedded != (p.data.setting == "none"):
        fix = f"-S dataset={p.data.name}" + ("" if embedded else " (protocol mlrc; or -S protocol=conventional)")
        raise ParamsError(
            f"{source}: data.setting: {p.data.setting!r} does not go with data.name {p.data.name!r}: "
            f"compose the data set's settings with dvc exp run {fix} (conf/dataset/{p.data.name}.yaml)"
        )


DATA = Section("data", DataConfig, field(default_factory=DataConfig), (_check_background, _check_protocol))
