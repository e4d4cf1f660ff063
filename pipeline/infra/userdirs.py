"""The one folder outside the repository that the project writes: its per-user cache.

Everything else the pipeline reads or writes lives in the repository (``data/``, ``reports/``) or in an
installed package (EfficientNet-Lite0's weights, the emoji drawings, scikit-learn's digits). What does not:

- the compiled IEEE square-root library (pipeline/numerics.py): ``<cache>/dml-repro``;
- matplotlib's font cache: ``MPLCONFIGDIR``, pointed at ``<cache>/dml-repro/matplotlib`` when unset, so a
  user's own ``matplotlibrc`` cannot change the report's figures and a read-only ``$HOME`` costs no warning.

``<cache>`` is ``DML_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/dml-repro``, else ``~/.cache/dml-repro``;
when that cannot be created or written (no ``$HOME``, a read-only one) the project falls back to
``<tmp>/dml-repro-<uid>`` and says so in one line. Every file in it is built on first use and may be deleted
at any time. DVC keeps its own state in the repository (``.dvc/tmp``) and in ``/var/tmp/dvc`` (its site
cache); pip's cache is pip's (docs/reproducibility.md lists them all).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

CACHE_VARIABLE = "DML_CACHE_DIR"


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def _preferred() -> Path | None:
    """The cache folder the environment asks for, or None when no home folder can be found."""
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "dml-repro"
    try:
        return Path.home() / ".cache" / "dml-repro"
    except RuntimeError:  # no HOME and no passwd entry
        return None


def cache_dir(name: str = "") -> Path:
    """``<cache>/<name>``, created (module docstring); the fallback is announced once per process."""
    preferred = _preferred()
    root = preferred if preferred is not None and _writable(preferred) else None
    if root is None:
        root = Path(tempfile.gettempdir()) / f"dml-repro-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
        if not _writable(root):
            raise OSError(f"no writable cache folder: {preferred} and {root} (set {CACHE_VARIABLE})")
        if not getattr(cache_dir, "_announced", False):
            print(f"pipeline: cache folder {preferred} is not writable; using {root}", file=sys.stderr)
            cache_dir._announced = True
    folder = root / name if name else root
    folder.mkdir(parents=True, exist_ok=True)
    return folder
