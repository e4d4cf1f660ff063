import pytest

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
