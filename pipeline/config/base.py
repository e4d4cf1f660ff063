"""What every params section shares: the error type and the YAML key names. Sections are
:func:`pipeline.infra.schema.section` dataclasses; :mod:`pipeline.config.loader` turns pydantic's errors into one
line naming the key.

``lambda`` is a Python keyword: YAML keys that are keywords map to fields with a trailing underscore
(``lambda`` -> ``lambda_``).
"""

from __future__ import annotations

import dataclasses
import keyword
from typing import Any

from pipeline.infra.errors import PipelineError


class ParamsError(PipelineError, ValueError):
    """A params.yaml problem; the message is one line naming the key."""


def yaml_key(name: str) -> str:
    """The YAML key of a schema field (``lambda_`` -> ``lambda``)."""
    return name[:-1] if name.endswith("_") and keyword.iskeyword(name[:-1]) else name


def field_name(key: str) -> str:
    """The schema field of a YAML key (``lambda`` -> ``lambda_``)."""
    return key + "_" if keyword.iskeyword(key) else key


def rename_keywords(node: Any) -> Any:
    """Map YAML keys that are Python keywords to their schema field names, recursively."""
    if isinstance(node, dict):
        return {field_name(str(k)): rename_keywords(v) for k, v in node.items()}
    if isinstance(node, list):
        return [rename_keywords(v) for v in node]
    return node


def dotted(tree: dict, key: str, parent: bool = False) -> Any:
    """The value a dotted key (e.g. baselines.ms.loss.alpha) names in a plain params dict, or None; with
    `parent`, the mapping that holds its last part (None when the key does not exist)."""
    *path, last = key.split(".")
    node = tree
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or last not in node:
        return None
    return node if parent else node[last]


def to_dict(node: Any) -> Any:
    """A params (sub)tree as plain dict with YAML key names (for logs and reports)."""
    if dataclasses.is_dataclass(node):
        return {yaml_key(f.name): to_dict(getattr(node, f.name)) for f in dataclasses.fields(node)}
    if isinstance(node, list):
        return [to_dict(v) for v in node]
    if isinstance(node, dict):
        return {k: to_dict(v) for k, v in node.items()}
    return node
