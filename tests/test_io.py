import os
import shutil
import signal
import sys
import tempfile

import pytest

from pipeline.infra import io
from pipeline.infra.io import atomic_path, write_text


def test_failed_write_leaves_previous_file(tmp_path):
    target = tmp_path / "out.txt"
    write_text(target, "old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_folder_replaced_whole(tmp_path):
    target = tmp_path / "dir"
    target.mkdir()
    (target / "stale").write_text("x")
    with atomic_path(target) as tmp:
        tmp.mkdir()
        (tmp / "fresh").write_text("y")
    assert [p.name for p in target.iterdir()] == ["fresh"]


@pytest.fixture
def sigterm_exits():
    """SIGTERM as a stage process handles it (stages/_common.py): an exit that unwinds."""

    def handler(*_):
        sys.exit(128 + signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, handler)
    yield handler
    signal.signal(signal.SIGTERM, previous)


def _sigterm_at(fn, after: bool):
    """`fn` with a SIGTERM to this process just after it (mkdtemp: the folder is there) or just before it (rmtree:
    the folder is still there): a stop that lands the moment the temporary folder is made or about to be removed."""

    def wrapped(*args, **kwargs):
        if not after:
            os.kill(os.getpid(), signal.SIGTERM)
        result = fn(*args, **kwargs)
        if after:
            os.kill(os.getpid(), signal.SIGTERM)
        return result

    return wrapped


@pytest.mark.parametrize("moment", ["made", "removed"])
def test_a_stop_while_the_temporary_folder_is_made_or_removed_leaves_none(tmp_path, monkeypatch, sigterm_exits, moment):
    # what test_stages' terminated train stage hit on a loaded machine: its SIGTERM came just after mkdtemp
    if moment == "made":
        monkeypatch.setattr(io.tempfile, "mkdtemp", _sigterm_at(tempfile.mkdtemp, after=True))
    else:
        monkeypatch.setattr(io.shutil, "rmtree", _sigterm_at(shutil.rmtree, after=False))
    with pytest.raises(SystemExit):
        with atomic_path(tmp_path / "out") as tmp:
            tmp.write_text("x")
    assert [p.name for p in tmp_path.iterdir()] == (["out"] if moment == "removed" else [])
    assert signal.getsignal(signal.SIGTERM) is sigterm_exits  # the stage's own handler is back


def test_an_npz_file_has_the_same_bytes_under_every_python_release(tmp_path):
    """write_npz: the sha256 below came out the same under Python 3.11.2 (Debian) and 3.11.7 (pyenv), where np.savez of
    the same arrays gives two different files; the local headers carry the real sizes (no zip64 placeholder left to
    the release), and np.load reads the arrays back."""
    import hashlib
    import struct

    import numpy as np

    from pipeline.infra.io import write_npz

    path = tmp_path / "a.npz"
    write_npz(path, a=np.arange(5, dtype=np.int64), b=np.array(["x", "yz"]))
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == "895cf7bd9369780ae5e38ef829616a05b6da246fc8afd966a19975c858aba617"
    version, compressed, size = struct.unpack("<H", data[4:6])[0], *struct.unpack("<II", data[18:26])
    assert version == 20 and compressed == size != 0xFFFFFFFF
    with np.load(path) as z:
        assert z["a"].tolist() == [0, 1, 2, 3, 4] and z["b"].tolist() == ["x", "yz"]
