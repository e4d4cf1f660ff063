"""The report's long texts are Jinja2 templates (pipeline/reporting/templates/<page>.md.j2): `render` fills one."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

# a block tag's own line leaves no blank line; a template ends as its file does
TEMPLATES = Environment(
    loader=PackageLoader("pipeline.reporting", "templates"),
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=StrictUndefined,
)


def render(template: str, **values: Any) -> str:
    """pipeline/reporting/templates/<template> with `values` (a missing value is an error, not a blank)."""
    return TEMPLATES.get_template(template).render(**values)
