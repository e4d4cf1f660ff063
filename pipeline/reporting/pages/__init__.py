"""The report as records: each module here registers one :class:`Page`, a part of reports/ with the inputs it reads,
the files it writes, its render function and what it adds to reports/README.md (its lines under "Tables", its
figures, the paragraphs that say what they show). A method family brings its own part as a module named by its
params section (``ccp.py``). The list of figures, the report stage's outputs (dvc.yaml, checked by
tests/test_report_pages.py) and the index all follow these records; the long texts are Jinja2 templates
(pipeline/reporting/templates/<page>.md.j2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pipeline.infra.io import write_text
from pipeline.infra.registry import Registry
from pipeline.reporting import index
from pipeline.reporting.inputs import ReportInputs, context_lines


def _nothing(*_: Any) -> list[str]:
    return []


@dataclass(frozen=True)
class Page:
    """One part of reports/. `write(params, inputs, out, context, done)` renders it into the reports folder `out`
    (`inputs` holds only the fields named in `reads`; `context` the lines that say what was run; `done` what the
    pages named in `needs` returned) and returns what later pages may read."""

    name: str
    order: int  # where it is written, and where its lines, figures and paragraphs appear in the index
    reads: tuple[str, ...]  # the ReportInputs fields `write` and `paragraphs` read (they see no other)
    outputs: tuple[str, ...]  # files and folders under reports/ it writes, its figures aside
    write: Callable[..., Any]
    figures: tuple[str, ...] = ()  # reports/figures/<name>.png it draws, listed in the index
    shows: tuple[str, ...] = ()  # figures another stage draws that its paragraphs describe, listed after all others
    needs: tuple[str, ...] = ()  # pages whose results `write` reads (`done`)
    links: Callable[[Any, Any], list[str]] = _nothing  # (params, its result) -> its lines under the index's "Tables"
    paragraphs: Callable[[Any, Any], list[str]] = _nothing  # (params, inputs) -> what its figures show

    def files(self) -> tuple[str, ...]:
        """Everything it writes under reports/."""
        return (*self.outputs, *(f"figures/{name}.png" for name in self.figures))


_PAGES: Registry[Page] = Registry(__name__, "report page", identity=lambda p: p.write)


def register_page(page: Page) -> Page:
    return _PAGES.add(page.name, page, page.write.__module__)


def pages() -> list[Page]:
    """Every page in report order (`order`, then name); a page must come after the pages it needs."""
    records = _PAGES.records()
    for page in records.values():
        missing = [n for n in page.needs if n not in records]
        if missing:
            raise TypeError(f"{page.write.__module__}: report page {page.name!r} needs unknown page(s) {missing}")
        late = [n for n in page.needs if (records[n].order, n) >= (page.order, page.name)]
        if late:
            raise TypeError(f"{page.write.__module__}: report page {page.name!r} is ordered before its needs {late}")
    ordered = sorted(records.values(), key=lambda p: (p.order, p.name))
    return ordered


def figure_names() -> tuple[str, ...]:
    """Every figure the index lists (reports/figures/<name>.png), in its order: each page's own, then what the pages
    show from other stages."""
    listed = pages()
    return (*(f for p in listed for f in p.figures), *(f for p in listed for f in p.shows))


def report_files() -> tuple[str, ...]:
    """Every file and folder `write_report` writes under reports/: the index, then each page's (the report stage's
    outputs beside its published copies, pipeline/reporting/publish.py)."""
    return ("README.md", *(f for p in pages() for f in p.files()))


def view(inputs: ReportInputs, page: Page) -> SimpleNamespace:
    """The inputs a page declared it reads, and no other."""
    return SimpleNamespace(**{name: getattr(inputs, name) for name in page.reads})


def write_report(params, inputs: ReportInputs, out: Path) -> None:
    """Every page of reports/ in order, then the index of them all (reports/README.md, pipeline/reporting/index.py);
    each file replaced atomically. The published copies are not pages (pipeline/reporting/publish.py)."""
    context = context_lines(params, inputs)
    listed, done = pages(), {}
    for page in listed:
        done[page.name] = page.write(params, view(inputs, page), out, context, {n: done[n] for n in page.needs})
    parts = [(p, view(inputs, p), done[p.name]) for p in listed]
    write_text(out / "README.md", index.index_markdown(params, inputs, context, parts, figure_names()))
