"""UCI / LibSVM parsers on files the tests write, checksums, downloads from a loopback server."""

import bz2
import functools
import hashlib
import http.server
import io
import threading
import zipfile

import pytest

from pipeline.infra.download import DownloadError
from pipeline.linear import datasets
from pipeline.linear.datasets import DatasetError, fetch, load_dataset

FILES = {
    "australian": {"australian.dat": "1 22.08 11.46 0\n0 22.67 7 1\n0 29.58 1.75 1\n"},
    "ecoli": {"ecoli.data": "AAT_ECOLI 0.49 0.29 cp\nACEA_ECOLI 0.07 0.40 im\nACEK_ECOLI 0.56 0.40 cp\n"},
    "glass": {"glass.data": "1,1.52101,13.64,1\n2,1.51761,13.89,1\n3,1.51618,13.53,2\n"},
    "german": {"german.data": "A11 6 A34 A410 1\nA12 48 A32 A43 2\nA14 12 A34 A46 1\n"},
    "monk1": {"monks-1.test": " 1 1 1 1 1 3 1 data_5\n 0 1 1 1 1 3 2 data_6\n 1 1 1 1 1 1 1 data_1\n"},
    "solar": {
        "flare.data1": "header line\nC S O 1 2 1 1 2 1 2 0 0 0\nD A O 1 3 1 1 2 1 2 0 0 0\nC K O 1 2 1 1 2 1 1 0 0 0\n"
    },
    "pendigits": {"pendigits.tra": "47,100,27,8\n0,89,27,2\n", "pendigits.tes": "88,92,2,8\n"},
    "cars": {
        "auto-mpg.data": '18.0 8 307.0 130.0 3504. 12.0 70 1 "chevrolet chevelle"\n'
        '25.0 4 98.00 ? 2046. 19.0 71 1 "ford pinto"\n'
        '31.0 4 71.00 65.00 1773. 19.0 71 3 "toyota corolla"\n'
    },
}


def write(cache, files):
    for name, text in files.items():
        (cache / name).write_bytes(text if isinstance(text, bytes) else text.encode())


@pytest.mark.parametrize(
    "name,shape,labels",
    [
        ("australian", (3, 3), [0, 1, 1]),
        ("ecoli", (3, 2), [0, 1, 0]),
        ("german", (3, 4), [0, 1, 0]),
        ("monk1", (3, 6), [1, 0, 1]),
        ("solar", (3, 12), [0, 1, 0]),
        ("pendigits", (3, 3), [1, 0, 1]),
        ("cars", (2, 7), [1, 0]),  # the car without horsepower is left out; label mpg >= 23
    ],
)
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


@pytest.mark.parametrize(
    "files,message",
    [
        ({"ecoli.data": "A 0.49 x cp\nB 0.07 0.40 im\n"}, "ecoli.data: non-numeric feature value"),
        ({"ecoli.data": "A 0.49 0.29 cp\nB 0.07 0.40 cp\n"}, "ecoli: a single class"),
    ],
)
def test_bad_files(tmp_path, files, message):
    write(tmp_path, files)
    with pytest.raises(DatasetError, match=message):
        load_dataset("ecoli", tmp_path)


def test_unknown_dataset(tmp_path):
    with pytest.raises(
        DatasetError,
        match="unknown data set 'mnist' \\(valid: iris, wine, breast_cancer, digits, glass, vehicle, letter, australian",
    ):
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


def build_mlbench_deb(tmp_path, frames: dict) -> bytes:
    """A .deb laid out like r-cran-mlbench's, holding R data files written by pyreadr (needs dpkg-deb)."""
    import shutil
    import subprocess

    import pyreadr

    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb not installed")
    root = tmp_path / "pkg"
    data = root / datasets.MLBENCH_DATA.removeprefix("./")
    data.mkdir(parents=True)
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text(
        "Package: r-cran-mlbench\nVersion: 2.1-3-1\nArchitecture: amd64\nMaintainer: test <t@t>\nDescription: test\n"
    )
    for name, frame in frames.items():
        pyreadr.write_rdata(str(data / f"{name}.rda"), frame, df_name=name)
    subprocess.run(["dpkg-deb", "--build", str(root), str(tmp_path / "built.deb")], check=True, capture_output=True)
    return (tmp_path / "built.deb").read_bytes()


def test_mlbench_sets_from_the_debian_package(tmp_path, monkeypatch):
    import pandas as pd

    glass = pd.DataFrame({"RI": [1.52, 1.51, 1.53], "Na": [13.6, 13.9, 13.5], "Type": pd.Categorical(["1", "2", "1"])})
    deb = build_mlbench_deb(tmp_path, {"Glass": glass, "Vehicle": glass.drop(columns="Type")})
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / datasets.MLBENCH.filename).write_bytes(deb)
    package = datasets.DebianPackage("r-cran-mlbench", "2.1-3-1", "amd64", hashlib.sha256(deb).hexdigest())
    monkeypatch.setattr(datasets, "MLBENCH", package)
    x, y = load_dataset("glass", cache)
    assert x.tolist() == [[1.52, 13.6], [1.51, 13.9], [1.53, 13.5]] and y.tolist() == [0, 1, 0]
    with pytest.raises(DatasetError, match="expected one factor column"):
        load_dataset("vehicle", cache)
    with pytest.raises(DatasetError, match="has no ./usr/lib/R/site-library/mlbench/data/LetterRecognition.rda"):
        load_dataset("letter", cache)
    monkeypatch.setattr(datasets, "MLBENCH", datasets.DebianPackage("r-cran-mlbench", "2.1-3-1", "amd64", "0" * 64))
    with pytest.raises(DownloadError, match="r-cran-mlbench_2.1-3-1_amd64.deb: SHA256 [0-9a-f]+ does not match"):
        load_dataset("glass", cache)
    assert not (cache / datasets.MLBENCH.filename).exists()  # the bad file is gone
    monkeypatch.setattr(datasets.shutil, "which", lambda _: None)
    with pytest.raises(DownloadError, match="no apt-get here to run `apt-get download r-cran-mlbench:amd64=2.1-3-1`"):
        load_dataset("glass", cache)


@pytest.mark.parametrize("name,shape,classes", [("breast_cancer", (569, 30), 2), ("digits", (1797, 64), 10)])
def test_more_offline_sets_from_scikit_learn(tmp_path, name, shape, classes):
    x, y = load_dataset(name, tmp_path)
    assert x.shape == shape and len(set(y.tolist())) == classes
