"""The report's part of each method family that has one: a module here per family, named by the family's params
section, registers a :class:`FamilyReport`: the figures it draws (reports/figures/<name>.png), the pages it writes and
the paragraphs of reports/README.md that say what its figures show. The report (pipeline/reporting/pages.py,
index.py) writes them after the generic ones, family by family, so a family brings its own without an edit there.
A family's ablation figures and paragraphs are its record's (pipeline/families ``Ablation``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.families import families
from pipeline.infra.registry import Registry


@dataclass(frozen=True)
class FamilyReport:
    section: str  # the family's params section (pipeline/families)
    figures: tuple[str, ...]  # what `write` draws, reports/figures/<name>.png (dvc.yaml's report outs)
    write: Callable[[Any, Any, Path, str], None]  # (params, inputs, reports folder, the context lines)
    paragraphs: Callable[[Any, Any], list[str]]  # (params, inputs) -> what its figures show
    pages: tuple[tuple[str, str], ...] = ()  # (file under reports/, what it holds): linked from the index


_REPORTS: Registry[FamilyReport] = Registry(__name__, "family report", identity=lambda r: r.write)


def register_report(report: FamilyReport) -> FamilyReport:
    return _REPORTS.add(report.section, report, report.write.__module__)


def family_reports() -> list[FamilyReport]:
    """The reports of the registered families, in family order."""
    reports = _REPORTS.records()
    return [reports[name] for name in families() if name in reports]
