"""Registry packages: a package whose modules register themselves when imported (pipeline/losses, pipeline/miners,
pipeline/families, pipeline/datasets; pipeline/methods only imports its modules) keeps its records in one
:class:`Registry` and calls :func:`import_modules` with its own name, so that nothing lists its modules.
pipeline/orchestration/dvc_deps.py recognises that call in a package's `__init__.py` and makes every module beside
it a dependency of the stages that import the package.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Hashable
from functools import cache
from typing import Generic, TypeVar

R = TypeVar("R")


@cache
def import_modules(package: str) -> None:
    """Import every module (not subpackage) of `package`, once per process."""
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if not module.ispkg:
            importlib.import_module(f"{package}.{module.name}")


def schema_tag(schema: type) -> str | None:
    """The default of a schema's ``name`` field (the tag that selects it in a ``loss:`` or ``miner:`` mapping), or
    None."""
    field = getattr(schema, "__dataclass_fields__", {}).get("name")
    return field.default if field is not None else None


class Registry(Generic[R]):
    """The records of one registry package by name. A record registers as its module is imported (again, when a
    module is imported twice, with an equal `identity`); `records()` imports every module of the package first."""

    def __init__(self, package: str, kind: str, identity: Callable[[R], Hashable], sort: bool = True):
        self.package, self.kind, self.identity, self.sort = package, kind, identity, sort
        self._records: dict[str, tuple[R, str]] = {}

    def add(self, name: str, record: R, module: str) -> R:
        """Register `record` under `name` (from `module`); a different record of that name is a TypeError."""
        known = self._records.get(name)
        if known is not None and self.identity(known[0]) != self.identity(record):
            raise TypeError(f"{module}: {self.kind} {name!r} is already registered by {known[1]}")
        self._records[name] = (record, module)
        return record

    def records(self) -> dict[str, R]:
        """Every record by name, in name order (`sort`) or registration order."""
        import_modules(self.package)
        items = sorted(self._records.items()) if self.sort else self._records.items()
        return {name: record for name, (record, _) in items}
