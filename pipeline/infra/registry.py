"""Registry packages: a package whose modules register themselves when imported (pipeline/losses, pipeline/miners,
pipeline/families, pipeline/methods) calls :func:`import_modules` with its own name, so that nothing lists its
modules. pipeline/orchestration/dvc_deps.py recognises that call in a package's `__init__.py` and makes every module
beside it a dependency of the stages that import the package.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache


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
