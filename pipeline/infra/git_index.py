"""Detect a stale git index entry: a file whose content differs from the staged version while git, trusting
the file's cached stat data, reports it unchanged.

Seen after a failed `dvc exp run -S key=value` whose new value has the same length as the old one: DVC rewrites
params.yaml within the timestamp granularity of git's index, `git status` and `git diff` show nothing, and the next
`dvc repro` runs the new value. Touching the file (a new modification time; DVC reads params by value, so
nothing else notices) makes git compare the content again: `git update-index --really-refresh` alone does not
when every stat field it checks still matches.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30)


def is_stale(path: str | Path) -> bool:
    """True when git's index lists `path` as unchanged although its content is not the staged blob. False
    outside a git work tree, for an untracked file, or when git is not installed."""
    path = Path(path).resolve()
    try:
        staged = _git(["ls-files", "-s", "--", path.name], path.parent).stdout.split()
        if len(staged) < 2:
            return False
        if _git(["hash-object", "--", path.name], path.parent).stdout.strip() == staged[1]:
            return False
        return _git(["diff-files", "--quiet", "--", path.name], path.parent).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def refresh_if_stale(path: str | Path) -> bool:
    """When `path`'s index entry is stale, touch the file so that git sees the change, and log a warning
    naming it; True if it was stale."""
    stale = is_stale(path)
    if stale:
        Path(path).touch()
        log.warning(
            "%s: changed since git last looked, but `git status` / `git diff` showed it unchanged (git's "
            "index trusted a stale timestamp, e.g. after a failed `dvc exp run -S`); touched it so that git "
            "shows the change. These are the values that run now.",
            Path(path).name,
        )
    return stale
