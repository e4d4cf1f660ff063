"""UCI / LibSVM parsers on files the tests write, checksums, downloads from a loopback server."""

import bz2
import functools
import hashlib
import http.server
import io
import threading
import zipfile

import pytest

from pipeline.download import DownloadError
from pipeline.linear import datasets
from pipeline.linear.datasets import DatasetError, fetch, load_dataset

FILES = {
    "australian": {"australian.dat": "1 22.08 11.46 0\n0 22.67 7 1\n0 29.58 1.75 1\n"},
    "ecoli": {"ecoli.data": "AAT_ECOLI 0.49 0.29 cp\nACEA_ECOLI 0.07 0.40 im\nACEK_ECOLI 0.56 0.40 cp\n"},
    "glass": {"glass.data": "1,1.52101,13.64,1\n2,1.51761,13.89,1\n3,1.51618,13.53,2\n"},
    "german": {"german.data": "A11 6 A34 A410 1\nA12 48 A32 A43 2\nA14 12 A34 A46 1\n"},
    "monk1": {"monks-1.test": " 1 1 1 1 1 3 1 data_5\n 0 1 1 1 1 3 2 data_6\n 1 1 1 1 1 1 1 data_1\n"},
    "solar": {"flare.data1": "header line\nC S O 1 2 1 1 2 1 2 0 0 0\nD A O 1 3 1 1 2 1 2 0 0 0\n"
                             "C K O 1 2 1 1 2 1 1 0 0 0\n"},
    "letter": {"letter-recognition.data": "T,2,8,3\nI,5,12,3\nT,4,11,6\n"},
    "pendigits": {"pendigits.tra": "47,100,27,8\n0,89,27,2\n", "pendigits.tes": "88,92,2,8\n"},
    "cars": {"auto-mpg.data": '18.0 8 307.0 130.0 3504. 12.0 70 1 "chevrolet chevelle"\n'
                              '25.0 4 98.00 ? 2046. 19.0 71 1 "ford pinto"\n'
                              '31.0 4 71.00 65.00 1773. 19.0 71 3 "toyota corolla"\n'},
}


def write(cache, files):
    for name, text in files.items():
        (cache / name).write_bytes(text if isinstance(text, bytes) else text.encode())


@pytest.mark.parametrize("name,shape,labels", [
    ("australian", (3, 3), [0, 1, 1]),
    ("ecoli", (3, 2), [0, 1, 0]),
    ("glass", (3, 2), [0, 0, 1]),
    ("german", (3, 4), [0, 1, 0]),
    ("monk1", (3, 6), [1, 0, 1]),
    ("solar", (3, 12), [0, 1, 0]),
    ("letter", (3, 3), [1, 0, 1]),
    ("pendigits", (3, 3), [1, 0, 1]),
    ("cars", (2, 7), [1, 0]),  # the car without horsepower is left out; label mpg >= 23
])
def test_parsers(tmp_path, name, shape, labels):
    write(tmp_path, FILES[name])
    x, y = load_dataset(name, tmp_path)
    assert x.shape == shape and y.tolist() == labels


def test_german_levels_and_solar_letters(tmp_path):
    write(tmp_path, FILES["german"])
    x, _ = load_dataset("german", tmp_path)
    assert x[0].tolist() == [1, 6, 4, 10]  # A11 -> 1, A34 -> 4, A410 -> 10
    write(tmp_path, FILES["solar"])
    x, _ = load_dataset("solar", tmp_path)
    assert x[1][:2].tolist() == [0, ord("O") - ord("A")]  # letters by alphabet rank


def test_libsvm_and_coil20(tmp_path):
    (tmp_path / "usps.bz2").write_bytes(bz2.compress(b"1 1:0.5 256:-1\n2 3:1\n"))
    (tmp_path / "usps.t.bz2").write_bytes(bz2.compress(b"1 2:0.25\n"))
    x, y = load_dataset("usps", tmp_path)
    assert x.shape == (3, 256) and x[0, 0] == 0.5 and x[0, 255] == -1 and y.tolist() == [0, 1, 0]
    from PIL import Image

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for obj, idx in ((1, 0), (1, 1), (2, 0)):
            png = io.BytesIO()
            Image.new("L", (128, 128), color=obj * 50).save(png, format="PNG")
            archive.writestr(f"coil-20-proc/obj{obj}__{idx}.png", png.getvalue())
    (tmp_path / "coil-20-proc.zip").write_bytes(buffer.getvalue())
    x, y = load_dataset("coil20", tmp_path)
    assert x.shape == (3, 1024) and y.tolist() == [0, 0, 1] and x[2, 0] == 100


@pytest.mark.parametrize("files,message", [
    ({"glass.data": "1,1.5,x,1\n2,1.5,13.8,2\n"}, "glass.data: non-numeric feature value"),
    ({"glass.data": "1,1.5,13.6,1\n2,1.5,13.8,1\n"}, "glass: a single class"),
])
def test_bad_files(tmp_path, files, message):
    write(tmp_path, files)
    with pytest.raises(DatasetError, match=message):
        load_dataset("glass", tmp_path)


def test_unknown_dataset(tmp_path):
    with pytest.raises(DatasetError, match="unknown data set 'mnist' \\(valid: iris, wine, australian"):
        load_dataset("mnist", tmp_path)


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_download_and_checksums(tmp_path, server):
    root, url = server
    (root / "glass.data").write_text(FILES["glass"]["glass.data"])
    good = hashlib.sha256(FILES["glass"]["glass.data"].encode()).hexdigest()
    cache = tmp_path / "cache"
    path = fetch(f"{url}/glass.data", good, cache)
    assert path.read_text() == FILES["glass"]["glass.data"] and not list(cache.glob("*.part"))
    path.unlink()
    with pytest.raises(DownloadError, match="does not match the recorded"):
        fetch(f"{url}/glass.data", "0" * 64, cache)
    assert not list(cache.iterdir())  # the bad download is gone, nothing half-written
    with pytest.raises(DownloadError, match="download failed"):
        fetch(f"{url}/missing.data", None, cache)
    assert not list(cache.iterdir())


def test_every_source_downloads_over_https():
    for name, source in datasets.SOURCES.items():
        assert source.files and all(u.startswith("https://") for u, _ in source.files), name
