"""pipeline/download.py: resume after a cut, checksums, and extraction that stays in its folder."""

import hashlib
import http.server
import io
import tarfile
import threading
import zipfile

import pytest

from pipeline.download import DownloadError, download, safe_extract

PAYLOAD = bytes(range(256)) * 400  # 100 kB


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves PAYLOAD with Range support; the first full request is cut after `cut` bytes."""

    cut = None
    ranges = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        start = 0
        if "Range" in self.headers:
            start = int(self.headers["Range"].split("=")[1].rstrip("-"))
            RangeHandler.ranges.append(start)
        body = PAYLOAD[start:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if RangeHandler.cut is not None and not start:
            self.wfile.write(body[:RangeHandler.cut])
            RangeHandler.cut = None
            self.close_connection = True
            return
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def url():
    RangeHandler.cut, RangeHandler.ranges = None, []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/archive.tgz"
    httpd.shutdown()


GOOD = hashlib.sha256(PAYLOAD).hexdigest()


def test_a_cut_download_resumes_where_it_stopped(tmp_path, url):
    RangeHandler.cut = 30_000
    path = tmp_path / "archive.tgz"
    with pytest.raises(DownloadError, match="run again to resume"):
        download(url, path, GOOD)
    assert (tmp_path / "archive.tgz.part").stat().st_size == 30_000 and not path.exists()
    assert download(url, path, GOOD).read_bytes() == PAYLOAD
    assert RangeHandler.ranges == [30_000] and not (tmp_path / "archive.tgz.part").exists()


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
    archive = _tar(tmp_path / "a.tgz", [_file("images/001.Black_footed_Albatross/a.jpg", b"jpeg"),
                                        _file("images.txt", b"1 001.Black_footed_Albatross/a.jpg\n")])
    out = safe_extract(archive, tmp_path / "out")
    assert (out / "images" / "001.Black_footed_Albatross" / "a.jpg").read_bytes() == b"jpeg"


@pytest.mark.parametrize("name,kind", [("../evil.txt", tarfile.REGTYPE), ("/etc/evil.txt", tarfile.REGTYPE),
                                       ("ok/../../evil.txt", tarfile.REGTYPE), ("link", tarfile.SYMTYPE),
                                       ("hard", tarfile.LNKTYPE)])
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
        info.external_attr = (0o120777 << 16)
        z.writestr(info, "/etc/passwd")
    with pytest.raises(DownloadError, match="is a link"):
        safe_extract(link, tmp_path / "out")
    assert not (tmp_path / "out").exists()
