"""Words and median sentence length of README.md and docs/*.md: `python -m tests.doc_stats`.

Prose only: fenced code blocks and table rows ("|" lines) are left out. Words split at whitespace; sentences end at
". ", "! " or "? " before a capital, a backtick, "*", "(" or "["; a "sentence" of fewer than 3 words (a heading,
a list label) is not counted.
"""

import re
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\[])")


def prose(text: str) -> str:
    """The text without fenced code blocks and table rows."""
    kept, inside = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
        elif not inside and not line.lstrip().startswith("|"):
            kept.append(line)
    return "\n".join(kept)


def sentence_lengths(text: str) -> list[int]:
    """Words per sentence of the prose (sentences of 3 words or more)."""
    sentences = SENTENCE_END.split(re.sub(r"\s+", " ", prose(text)))
    return [n for n in (len(s.split()) for s in sentences) if n >= 3]


def user_docs(root: Path = ROOT) -> list[Path]:
    """README.md and docs/*.md: what a user reads."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def main() -> None:
    words, lengths = 0, []
    for path in user_docs():
        text = path.read_text()
        n, sentences = len(prose(text).split()), sentence_lengths(text)
        words, lengths = words + n, lengths + sentences
        print(f"{path.relative_to(ROOT)}: {n} words, median sentence {statistics.median(sentences):g}")
    print(f"all: {words} words, median sentence {statistics.median(lengths):g}")


if __name__ == "__main__":
    main()
