"""The validated dataclass every params section is (pydantic): bounds (``Field(ge=...)``), allowed values
(``Literal``), unknown keys (``extra="forbid"``) and non-finite floats are pydantic's checks. Sections stay
dataclasses, so ``dataclasses.replace`` derives a validated variant. Apart from :mod:`pipeline.config` so that
the loss and family records (:mod:`pipeline.losses`, :mod:`pipeline.families`) declare their sections without
importing the params root that collects them."""

from __future__ import annotations

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


def section(cls=None, **kwargs):
    """A params section: a pydantic dataclass that rejects unknown keys and non-finite floats."""
    wrap = dataclass(config=STRICT, **kwargs)
    return wrap if cls is None else wrap(cls)
