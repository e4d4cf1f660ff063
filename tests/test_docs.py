"""Words no stronger than the numbers: the verdicts docs/results.md states are the committed claims table's."""

import re
import statistics

import pandas as pd

from tests import doc_stats
from tests.conftest import ROOT

SECTION = "## The digit default's verdicts"


def stated_verdicts() -> pd.DataFrame:
    """The table of docs/results.md's verdict section: claim, verdict (with "fragile"), Holm."""
    text = (ROOT / "docs" / "results.md").read_text()
    assert SECTION in text, f"docs/results.md: no section {SECTION!r}"
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in body.splitlines() if line.startswith("| ") and "---" not in line]
    cells = [[c.strip() for c in row] for row in rows[1:]]  # the first row is the header
    return pd.DataFrame(
        {"claim": [c[0] for c in cells], "verdict": [c[2] for c in cells], "holm": [c[3] for c in cells]}
    )


def test_docs_state_the_committed_verdicts():
    claims = pd.read_csv(ROOT / "reports" / "claims.csv", keep_default_na=False)
    stated = stated_verdicts()
    assert stated.claim.tolist() == claims.claim.tolist()
    for (_, s), (_, c) in zip(stated.iterrows(), claims.iterrows()):
        expected = f"**{c.verdict}**" + (" (fragile)" if str(c.fragile) == "True" else "")
        assert s.verdict == expected, c.claim
        assert s.holm == c.verdict_holm, c.claim


def test_every_test_the_docs_name_exists():
    """A `tests/<module>.py::<test>` in the docs, README or CHANGELOG names a test that is there (a renamed or
    moved test must not leave the docs pointing at nothing)."""
    texts = [ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")]
    named = {m for path in texts for m in re.findall(r"tests/(test_\w+\.py)::(\w+)", path.read_text())}
    assert named  # the docs do name tests: the pattern still finds them
    missing = [
        f"{module}::{name}"
        for module, name in sorted(named)
        if f"def {name}(" not in (ROOT / "tests" / module).read_text()
    ]
    assert not missing, missing


def test_no_issue_numbers_where_a_user_reads():
    """The project has no issue tracker a user can open: README, CHANGELOG, docs/, the studies' and benchmarks'
    READMEs, the digit default's reports/, the report templates and every code, test and conf comment name none.
    (reports/emoji/ is written by the emoji default's own run, from templates older than this rule; it is checked once
    that run is made again.)"""
    pattern = re.compile(r"\b(?:pre-)?issues?[ -]#?\d+", re.IGNORECASE)
    files = [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        ROOT / "benchmarks" / "README.md",
        *(ROOT / "docs").glob("*.md"),
    ]
    files += [*(ROOT / "studies").rglob("README.md")]
    files += [p for p in (ROOT / "reports").rglob("*.md") if "emoji" not in p.relative_to(ROOT / "reports").parts]
    for folder, suffixes in (("pipeline", (".py", ".j2")), ("stages", (".py",)), ("conf", (".yaml",))):
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in suffixes]
    files += [*(ROOT / "tests").glob("*.py"), *(ROOT / "benchmarks").glob("*.py"), ROOT / "dvc.yaml"]
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files for m in pattern.finditer(p.read_text())]
    assert not found, found


def test_user_docs_are_short():
    """README + docs/ stay a reference: at most 12,000 prose words, median sentence at most 20 words
    (`python -m tests.doc_stats` prints the figures per file)."""
    texts = [path.read_text() for path in doc_stats.user_docs()]
    words = sum(len(doc_stats.prose(text).split()) for text in texts)
    lengths = [n for text in texts for n in doc_stats.sentence_lengths(text)]
    assert words <= 12_000, words
    assert statistics.median(lengths) <= 20, statistics.median(lengths)


def test_sentence_counting_on_a_small_text():
    text = "# Title\n\nOne two three four. Five six seven!\n\n```bash\nnot counted at all here\n```\n| a | b |\n- ok"
    assert doc_stats.prose(text).split() == "# Title One two three four. Five six seven! - ok".split()
    assert doc_stats.sentence_lengths(text) == [6, 5]  # "# Title One two three four." and "Five six seven! - ok"


def test_no_dates_where_a_user_reads():
    """README, docs/ and the digit default's reports say what is, not when it changed: dates go in CHANGELOG.md."""
    pattern = re.compile(r"\b20\d\d-\d\d-\d\d\b")
    files = [*doc_stats.user_docs(), ROOT / "benchmarks" / "README.md"]
    files += [p for p in (ROOT / "reports").rglob("*.md") if "emoji" not in p.relative_to(ROOT / "reports").parts]
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files for m in pattern.finditer(p.read_text())]
    assert not found, found
