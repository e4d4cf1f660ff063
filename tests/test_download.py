"""pipeline/infra/download.py: resume after a cut, checksums, and extraction that stays in its folder."""

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from pipeline.infra.download import DownloadError, download, download_folder, fetch_with_client, safe_extract

PAYLOAD = bytes(range(256)) * 400  # 100 kB


@pytest.fixture
def server(file_server):
    return file_server({"archive.tgz": PAYLOAD})


@pytest.fixture
def url(server):
    return f"{server.url}/archive.tgz"


GOOD = hashlib.sha256(PAYLOAD).hexdigest()


def test_a_cut_download_resumes_where_it_stopped(tmp_path, server, url):
    server.cut["archive.tgz"] = 30_000
    path = tmp_path / "archive.tgz"
    with pytest.raises(DownloadError, match="run again to resume"):
        download(url, path, GOOD)
    assert (tmp_path / "archive.tgz.part").stat().st_size == 30_000 and not path.exists()
    assert download(url, path, GOOD).read_bytes() == PAYLOAD
    assert server.ranges == [30_000] and not (tmp_path / "archive.tgz.part").exists()


def test_md5_and_prefix_checksums(tmp_path, url):
    md5 = hashlib.md5(PAYLOAD).hexdigest()
    assert download(url, tmp_path / "a", f"md5:{md5}").read_bytes() == PAYLOAD
    assert download(url, tmp_path / "b", f"sha256:{GOOD[:9]}").read_bytes() == PAYLOAD  # torch.hub-style prefix
    with pytest.raises(DownloadError, match="MD5 .* does not match the recorded 00000000"):
        download(url, tmp_path / "c", "md5:" + "0" * 32)
    with pytest.raises(DownloadError, match="checksum 'crc:1234'"):
        download(url, tmp_path / "d", "crc:1234")
    assert not (tmp_path / "c").exists() and not (tmp_path / "c.part").exists()


def test_a_wrong_checksum_keeps_nothing(tmp_path, url):
    with pytest.raises(DownloadError, match="does not match the recorded 000"):
        download(url, tmp_path / "archive.tgz", "0" * 64)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_is_verified_not_downloaded_again(tmp_path, url):
    path = tmp_path / "archive.tgz"
    path.write_bytes(b"something else")
    with pytest.raises(DownloadError, match="does not match"):
        download(url, path, GOOD)
    assert not path.exists()


def test_a_registry_client_writes_into_place_once_and_is_verified(tmp_path):
    # a stand-in for `npm pack NAME@VERSION`: writes the file into its working folder
    path = tmp_path / "cache" / "pkg-1.0.tgz"
    client = ["sh", "-c", "printf package > pkg-1.0.tgz"]
    good = "sha256:" + hashlib.sha256(b"package").hexdigest()
    assert fetch_with_client(path, client, good).read_bytes() == b"package"
    assert sorted(p.name for p in path.parent.iterdir()) == ["pkg-1.0.tgz"]  # no temporary folder left
    assert fetch_with_client(path, ["false"], good) == path  # present: verified, the client not run
    with pytest.raises(DownloadError, match="pkg-1.0.tgz: SHA256 [0-9a-f]+ does not match the recorded 000"):
        fetch_with_client(path, client, "sha256:" + "0" * 64)
    assert not path.exists()  # a bad fetched file is removed
    with pytest.raises(DownloadError, match="`sh -c exit 3` failed: no file"):
        fetch_with_client(path, ["sh", "-c", "exit 3"], good)
    with pytest.raises(
        DownloadError,
        match=r"`sh -c echo E: Unable to locate package >&2; exit 100` failed: E: Unable to locate package \(run apt-get update\)$",
    ):
        fetch_with_client(
            path, ["sh", "-c", "echo E: Unable to locate package >&2; exit 100"], good, "run apt-get update"
        )
    with pytest.raises(DownloadError, match="no no-such-client here to run `no-such-client pack pkg@1.0`"):
        fetch_with_client(path, ["no-such-client", "pack", "pkg@1.0"], good)
    assert list(path.parent.iterdir()) == []


def _tar(path, members):
    with tarfile.open(path, "w:gz") as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name, data=b"x"):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def test_extraction_of_a_good_archive(tmp_path):
    archive = _tar(
        tmp_path / "a.tgz",
        [
            _file("images/001.Black_footed_Albatross/a.jpg", b"jpeg"),
            _file("images.txt", b"1 001.Black_footed_Albatross/a.jpg\n"),
        ],
    )
    out = safe_extract(archive, tmp_path / "out")
    assert (out / "images" / "001.Black_footed_Albatross" / "a.jpg").read_bytes() == b"jpeg"


@pytest.mark.parametrize(
    "name,kind",
    [
        ("../evil.txt", tarfile.REGTYPE),
        ("/etc/evil.txt", tarfile.REGTYPE),
        ("ok/../../evil.txt", tarfile.REGTYPE),
        ("link", tarfile.SYMTYPE),
        ("hard", tarfile.LNKTYPE),
    ],
)
def test_extraction_refuses_members_outside_the_target(tmp_path, name, kind):
    info, data = _file(name)
    info.type = kind
    if kind != tarfile.REGTYPE:
        info.linkname, info.size, data = "/etc/passwd", 0, None
    archive = _tar(tmp_path / "a.tgz", [_file("fine.txt"), (info, data)])
    with pytest.raises(DownloadError, match="nothing extracted"):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "evil.txt").exists()


def test_zip_traversal_and_symlink_are_refused(tmp_path):
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("fine.txt", "x")
        z.writestr("../evil.txt", "x")
    with pytest.raises(DownloadError, match="outside the target folder"):
        safe_extract(bad, tmp_path / "out")
    link = tmp_path / "link.zip"
    with zipfile.ZipFile(link, "w") as z:
        info = zipfile.ZipInfo("link")
        info.external_attr = 0o120777 << 16
        z.writestr(info, "/etc/passwd")
    with pytest.raises(DownloadError, match="is a link"):
        safe_extract(link, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_downloads_of_a_queued_experiment_are_the_workspaces(tmp_path):
    """DVC runs queued / --temp experiments in <workspace>/.dvc/tmp/exps/<tmp>/ without git-ignored folders:
    a relative data.download_dir there is the workspace's own."""

    temp = tmp_path / "project" / ".dvc" / "tmp" / "exps" / "tmpab12cd"
    assert download_folder("data/downloads", temp) == tmp_path / "project" / "data" / "downloads"
    assert download_folder("data/downloads", temp / "sub") == tmp_path / "project" / "data" / "downloads"
    assert download_folder("data/downloads", tmp_path / "project") == Path("data/downloads")
    assert download_folder("/shared/downloads", temp) == Path("/shared/downloads")
