"""The report's page records (pipeline/reporting/pages): dvc.yaml's report outputs and plots follow them, a page sees
only the inputs it declares, the order respects what a page needs, and a new page reaches the index with no edit of
the generic code."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from pipeline.params.root import load_params
from pipeline.reporting import pages as report_pages
from pipeline.reporting.inputs import ReportInputs, published
from pipeline.reporting.pages import Page, figure_names, pages, report_files, view
from tests.conftest import ROOT


def dvc_outs(stage: dict) -> set[str]:
    return {next(iter(o)) if isinstance(o, dict) else o for o in stage.get("outs", []) + stage.get("metrics", [])}


def test_the_report_stage_declares_exactly_what_the_pages_and_the_published_copies_write():
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    folders = ("train_logs", "subproblems", "metrics", "spectra", "per_class", "ablations", "lanml", "tuned", "tuning")
    args = SimpleNamespace(**{k: "x" for k in (*folders, "pictures")})
    copies = published(load_params(ROOT / "params.yaml"), args)
    expected = {f"reports/{f}" for f in (*report_files(), *copies)}
    assert dvc_outs(dvc["stages"]["report"]) == expected
    assert len(report_files()) == len(set(report_files()))  # no two pages write one file


def test_the_plots_are_figures_some_stage_writes_and_the_index_lists_every_figure():
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    written = set().union(*(dvc_outs(s) for s in dvc["stages"].values()))
    assert set(dvc["plots"]) <= written
    listed = figure_names()
    assert len(listed) == len(set(listed))
    shown = {f for p in pages() for f in p.shows}  # drawn by another stage: the poc stage's Fig. 2
    assert {f"reports/figures/{f}.png" for f in shown} <= written - {f"reports/{f}" for f in report_files()}
    assert listed[:2] == ("tuning_history", "validation_curves") and listed[-1] == "ccp_poc"


def test_each_page_reads_declared_inputs_only():
    known = {f.name for f in fields(ReportInputs)}
    for page in pages():
        assert set(page.reads) <= known, page.name
    results = next(p for p in pages() if p.name == "results")
    inputs = SimpleNamespace(**{name: name for name in known})
    seen = view(inputs, results)
    assert seen.metrics == "metrics"
    with pytest.raises(AttributeError):
        seen.budgets  # noqa: B018 (not among what results.md declared)


@pytest.fixture
def registry(monkeypatch):
    """The page registry with the project's pages, restored after the test."""
    report_pages._PAGES.records()  # every page module imported
    monkeypatch.setattr(report_pages._PAGES, "_records", dict(report_pages._PAGES._records))
    return report_pages._PAGES


def _page(name: str, order: int, **kw) -> Page:
    def write(params, inputs, out: Path, context: str, done: dict):
        return done

    return Page(name=name, order=order, reads=(), outputs=(f"{name}.md",), write=write, **kw)


def test_a_new_page_brings_its_files_figures_and_links(registry):
    registry.add("zz_new", _page("zz_new", 85, figures=("zz_figure",), links=lambda p, r: ["[zz.md](zz.md)"]), "t")
    assert "zz_new.md" in report_files() and "figures/zz_figure.png" in report_files()
    assert figure_names().index("zz_figure") == figure_names().index("spectrum") + 1  # by its order, before ccp_poc
    assert figure_names()[-1] == "ccp_poc"


def test_a_page_ordered_before_what_it_needs_is_refused(registry):
    registry.add("aa_early", _page("aa_early", 5, needs=("claims",)), "t")
    with pytest.raises(TypeError, match="'aa_early' is ordered before its needs \\['claims'\\]"):
        pages()
    registry._records.pop("aa_early")
    registry.add("aa_unknown", _page("aa_unknown", 95, needs=("nope",)), "t")
    with pytest.raises(TypeError, match="needs unknown page"):
        pages()


def test_a_page_module_is_code_of_the_report_stage_only():
    """Adding or editing a page reruns the report stage and no other (the code stage's fingerprints,
    pipeline/orchestration/dvc_deps.py: the pages package is a registry, so every module beside it is its code)."""
    from pipeline.orchestration.dvc_deps import closure, stage_modules

    for page in (Path("pipeline/reporting/pages/results.py"), Path("pipeline/reporting/templates/claims.md.j2")):
        assert {m for m in stage_modules(ROOT / "dvc.yaml") if page in closure(m)} == {"stages.report"}, page


def test_the_pages_context_counts_the_studies_by_their_trials():
    """Studies extended past tune.trials are counted apart: "29 studies of 50 trials" must not stand for 23 of 30."""
    from pipeline.reporting.inputs import _tuned_line

    records = [
        {"run": "a", "trials": 30},
        {"run": "b", "trials": 50},
        {"run": "c", "trials": 30},
        {"run": "d", "trials": 0},
    ]
    assert "(3 studies: 2 of 30 trials, 1 of 50 trials;" in _tuned_line(records)
    assert _tuned_line(records[3:]).startswith("not tuned")
