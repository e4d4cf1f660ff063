"""Atomic writes: outputs appear complete under their final name or not at all; .npz files whose bytes depend only on
their arrays; and reading the arrays back with one clear error when a file is not what a stage wrote (truncated,
corrupt, another format)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.infra.errors import PipelineError


@contextlib.contextmanager
def atomic_path(final: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `final`; move it into place only on success.

    Works for files and folders. On an exception the temporary path is removed
    and whatever was at `final` before is left untouched. A stop signal that arrives while the temporary folder is
    being made or removed waits until that is done (`stops_deferred`), so it is never left behind.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = None
    try:
        with stops_deferred():  # a stop right after the folder is made would otherwise leave it, nameless to us
            tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
        target = tmp / final.name
        yield target
        if final.is_dir() and not final.is_symlink():
            shutil.rmtree(final)
        os.replace(target, final)
    finally:
        if tmp is not None:
            with stops_deferred():
                shutil.rmtree(tmp, ignore_errors=True)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM until the block is done, then deliver them to their own handlers: cleanup that a stop
    must not cut short (a second Ctrl-C, or a stop that lands mid-cleanup). Off the main thread signals cannot be
    handled, and need not be."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {s: signal.signal(s, lambda signum, _frame: caught.append(signum)) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        for s in dict.fromkeys(caught):
            signal.raise_signal(s)


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path: str | Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text())


class CorruptFileError(PipelineError):
    """A file an earlier stage wrote cannot be read back."""


def write_npz(path: str | Path, **arrays: np.ndarray) -> None:
    """`np.savez(path, **arrays)` with bytes that depend only on the arrays. np.savez forces zip64 headers, which
    Python's zipfile writes differently between patch releases (3.11.2 and 3.11.7 give other bytes for the same
    arrays, so another dvc.lock hash and a missed run cache); here each member is stored with its size known before
    it is written (`writestr`), at a fixed date and as written on Unix, so no such choice is left to the release. The
    file loads with `np.load` / `read_npz` as before. (A member over about 2 GB would still need zip64.)"""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3  # Unix, on every platform
            archive.writestr(info, member.getvalue())


def read_npz(path: str | Path, required: tuple[str, ...], hint: str) -> dict[str, np.ndarray]:
    """Every array of the .npz file `path`. A truncated or corrupt file, or one without the `required`
    arrays, is a CorruptFileError naming the file and `hint` (how to write it again)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, EOFError, ValueError, OSError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CorruptFileError(f"{path}: unreadable ({reason}; truncated or corrupt?): {hint}") from err
    missing = [k for k in required if k not in arrays]
    if missing:
        raise CorruptFileError(f"{path}: no {', '.join(missing)} array in it: {hint}")
    return arrays
