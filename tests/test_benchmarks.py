"""pipeline/datasets/benchmarks.py: the four benchmarks from tiny fake archives in their real layouts, served
from a loopback HTTP server or a local folder: download, resume, checksums, traversal, manifest and folds."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import tarfile
import zipfile

import numpy as np
import pytest
from PIL import Image

from pipeline.data.manifest import DataError, read_manifest
from pipeline.datasets import benchmarks
from pipeline.infra.download import DownloadError
from pipeline.params.root import params_from_dict
from tests.conftest import merge, project_params


def _jpeg(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    out = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (12, 10, 3), dtype=np.uint8)).save(out, "JPEG")
    return out.getvalue()


def _tgz(members: dict[str, bytes], extra: list[tarfile.TarInfo] = ()) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        for info in extra:
            t.addfile(info, io.BytesIO(b"x" * info.size))
    return out.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def fake_cub(classes=8, per_class=3) -> dict[str, bytes]:
    members, lines, labels = {}, [], []
    for c in range(1, classes + 1):
        for i in range(per_class):
            rel = f"{c:03d}.Bird_{c}/Bird_{c}_{i:04d}_{c * 100 + i}.jpg"
            n = len(lines) + 1
            members[f"CUB_200_2011/images/{rel}"] = _jpeg(n)
            lines.append(f"{n} {rel}")
            labels.append(f"{n} {c}")
    members["CUB_200_2011/images.txt"] = ("\n".join(lines) + "\n").encode()
    members["CUB_200_2011/image_class_labels.txt"] = ("\n".join(labels) + "\n").encode()
    members["CUB_200_2011/classes.txt"] = "".join(f"{c} {c:03d}.Bird_{c}\n" for c in range(1, classes + 1)).encode()
    members["attributes.txt"] = b"1 has_bill_shape::curved\n"  # the real archive has this beside the folder
    return {"CUB_200_2011.tgz": _tgz(members)}


def fake_cars(classes=8, per_class=3) -> dict[str, bytes]:
    from scipy.io import savemat

    images, rows = {}, []
    for n in range(classes * per_class):
        name = f"car_ims/{n + 1:06d}.jpg"
        images[name] = _jpeg(n)
        rows.append((name, 1, 2, 9, 9, n // per_class + 1, n % 2))
    dtype = [
        ("relative_im_path", "O"),
        ("bbox_x1", "O"),
        ("bbox_y1", "O"),
        ("bbox_x2", "O"),
        ("bbox_y2", "O"),
        ("class", "O"),
        ("test", "O"),
    ]
    annotations = np.array([rows], dtype=dtype)
    mat = io.BytesIO()
    savemat(
        mat, {"annotations": annotations, "class_names": np.array([f"car {c}" for c in range(classes)], dtype=object)}
    )
    return {"car_ims.tgz": _tgz(images), "cars_annos.mat": mat.getvalue()}


def fake_sop(train_classes=6, test_classes=5, per_class=2) -> dict[str, bytes]:
    members, n = {}, 0
    for split, classes in (
        ("train", range(1, train_classes + 1)),
        ("test", range(train_classes + 1, train_classes + test_classes + 1)),
    ):
        lines = ["image_id class_id super_class_id path"]
        for c in classes:
            for i in range(per_class):
                n += 1
                path = f"bicycle_final/{1000 + c}_{i}.JPG"
                members[f"Stanford_Online_Products/{path}"] = _jpeg(n)
                lines.append(f"{n} {c} 1 {path}")
        members[f"Stanford_Online_Products/Ebay_{split}.txt"] = ("\n".join(lines) + "\n").encode()
    members["Stanford_Online_Products/Ebay_info.txt"] = b"image_id class_id super_class_id path\n"
    return {"Stanford_Online_Products.zip": _zip(members)}


def fake_inshop(train_items=4, test_items=3) -> dict[str, bytes]:
    members, lines = {}, []
    for item in range(1, train_items + test_items + 1):
        kinds = ["train", "train"] if item <= train_items else ["query", "gallery", "gallery"]
        for i, status in enumerate(kinds):
            name = f"img/WOMEN/Dresses/id_{item:08d}/{i + 1:02d}_1_front.jpg"
            members[name] = _jpeg(len(lines))
            lines.append(f"{name} id_{item:08d} {status}")
    partition = f"{len(lines)}\nimage_name item_id evaluation_status\n" + "\n".join(lines) + "\n"
    return {"img.zip": _zip(members), "list_eval_partition.txt": partition.encode()}


FAKES = {"cub": fake_cub, "cars196": fake_cars, "sop": fake_sop, "inshop": fake_inshop}


@pytest.fixture
def recorded(monkeypatch):
    """Record the fakes' MD5 sums as the data sets' known sums (the real sums are of the real files)."""

    def record(key: str, files: dict[str, bytes]):
        bench = benchmarks.BENCHMARKS[key]
        fixed = tuple(
            dataclasses.replace(f, checksum=f"md5:{hashlib.md5(files[f.name]).hexdigest()}") for f in bench.files
        )
        monkeypatch.setitem(benchmarks.BENCHMARKS, key, dataclasses.replace(bench, files=fixed))
        return files

    return record


EXPECTED = {  # (train classes, test classes, train images, test images, query images)
    "cub": (4, 4, 12, 12, 0),
    "cars196": (4, 4, 12, 12, 0),
    "sop": (6, 5, 12, 10, 0),
    "inshop": (4, 3, 8, 9, 3),
}


@pytest.mark.parametrize("key", list(FAKES))
def test_download_and_manifest_of_each_benchmark(tmp_path, file_server, recorded, key):
    files = recorded(key, FAKES[key]())
    server = file_server(files)
    manifest = benchmarks.prepare_benchmark(key, tmp_path / "prepared", "", tmp_path / "downloads", server.url, 2)
    train_c, test_c, train_n, test_n, query_n = EXPECTED[key]
    train = manifest[manifest.split == "train"]
    test = manifest[manifest.split != "train"]
    assert (train.label.nunique(), test.label.nunique(), len(train), len(test)) == (train_c, test_c, train_n, test_n)
    assert (manifest.split == "query").sum() == query_n
    assert not set(train.label) & set(test.label)
    assert (test.fold == -1).all()
    # MLRC folds: contiguous blocks of the sorted training classes, half of them each
    blocks = train.groupby("fold").label.agg(["min", "max", "nunique"])
    assert blocks["nunique"].tolist() == [train_c // 2, train_c - train_c // 2]
    assert blocks["max"].iat[0] < blocks["min"].iat[1]
    loaded = read_manifest(tmp_path / "prepared")
    assert all(loaded.image_path(r).is_file() for r in range(len(manifest)))
    assert sorted(server.requests) == sorted(files)
    assert {p.name for p in (tmp_path / "downloads").iterdir()} == set(files)  # kept for the next run


def test_cub_is_cut_in_class_order_and_sop_follows_its_files(tmp_path, file_server, recorded):
    server = file_server(recorded("cub", fake_cub()))
    cub = benchmarks.prepare_benchmark("cub", tmp_path / "cub", "", tmp_path / "dl", server.url, 4)
    assert sorted(cub[cub.split == "train"].label.unique()) == [1, 2, 3, 4]  # classes 1..C/2 (CUB: 1-100)
    assert cub[cub.split == "train"].groupby("fold").label.unique().map(list).tolist() == [[1], [2], [3], [4]]
    server = file_server(recorded("sop", fake_sop(train_classes=6, test_classes=8)))
    sop = benchmarks.prepare_benchmark("sop", tmp_path / "sop", "", tmp_path / "dl", server.url, 2)
    assert sop[sop.split == "train"].label.nunique() == 6  # Ebay_train.txt, not a half of the 14 classes


def test_a_cut_download_resumes_on_the_next_run(tmp_path, file_server, recorded):
    files = recorded("cub", fake_cub())
    server = file_server(files)
    server.cut["CUB_200_2011.tgz"] = 500
    with pytest.raises(DownloadError, match="run again to resume"):
        benchmarks.prepare_benchmark("cub", tmp_path / "p1", "", tmp_path / "dl", server.url, 2)
    assert (tmp_path / "dl" / "CUB_200_2011.tgz.part").stat().st_size == 500
    benchmarks.prepare_benchmark("cub", tmp_path / "p2", "", tmp_path / "dl", server.url, 2)
    assert server.ranges == [500]


def _prepare_stage(tmp_path, data: dict):
    from stages.prepare import main

    params = params_from_dict(
        merge(project_params(), {"data": {"setting": "mlrc", **data}, "experiment": {"folds": [0, 1]}})
    )
    main(params, type("Args", (), {"out": str(tmp_path / "prepared")}))


def test_a_checksum_failure_keeps_no_data(tmp_path, file_server, recorded):
    files = recorded("cub", fake_cub())
    server = file_server({"CUB_200_2011.tgz": files["CUB_200_2011.tgz"][:-10] + b"tampered!!"})
    with pytest.raises(DownloadError, match="MD5 .* does not match the recorded"):
        _prepare_stage(tmp_path, {"name": "cub", "mirror": server.url, "download_dir": str(tmp_path / "dl")})
    assert not (tmp_path / "prepared").exists()
    assert list((tmp_path / "dl").iterdir()) == []  # neither the file nor a .part


def test_an_archive_member_outside_the_folder_is_refused(tmp_path, recorded):
    evil = tarfile.TarInfo("CUB_200_2011/../../evil.txt")
    evil.size = 1
    archive = _tgz({"CUB_200_2011/images.txt": b""}, [evil])
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "CUB_200_2011.tgz").write_bytes(archive)
    recorded("cub", {"CUB_200_2011.tgz": archive})
    with pytest.raises(DownloadError, match="would land outside the target folder"):
        _prepare_stage(tmp_path, {"name": "cub", "source": str(tmp_path / "src" / "CUB_200_2011.tgz")})
    assert not (tmp_path / "prepared").exists() and not (tmp_path / "evil.txt").exists()


def test_local_sources_folder_archive_and_extracted(tmp_path, recorded):
    files = recorded("inshop", fake_inshop())
    official = tmp_path / "In-shop Clothes Retrieval Benchmark"  # the Google Drive layout
    (official / "Img").mkdir(parents=True)
    (official / "Eval").mkdir()
    (official / "Img" / "img.zip").write_bytes(files["img.zip"])
    (official / "Eval" / "list_eval_partition.txt").write_bytes(files["list_eval_partition.txt"])
    shop = benchmarks.prepare_benchmark("inshop", tmp_path / "shop", str(official), tmp_path / "dl", "", 2)
    assert (shop.split == "query").sum() == 3 and not (tmp_path / "dl").exists()  # nothing downloaded

    cub = recorded("cub", fake_cub())["CUB_200_2011.tgz"]
    (tmp_path / "CUB_200_2011.tgz").write_bytes(cub)
    a = benchmarks.prepare_benchmark("cub", tmp_path / "a", str(tmp_path / "CUB_200_2011.tgz"), tmp_path / "dl", "", 2)
    extracted = tmp_path / "already"
    benchmarks.gather_files("cub", extracted, str(tmp_path / "CUB_200_2011.tgz"), tmp_path / "dl", "")
    b = benchmarks.prepare_benchmark("cub", tmp_path / "b", str(extracted), tmp_path / "dl", "", 2)
    assert a.equals(b)

    (tmp_path / "bad.tgz").write_bytes(cub[:-4] + b"oops")
    with pytest.raises(DownloadError, match="does not match the recorded"):
        benchmarks.prepare_benchmark("cub", tmp_path / "c", str(tmp_path / "bad.tgz"), tmp_path / "dl", "", 2)
    assert (tmp_path / "bad.tgz").exists()  # the user's own file is never deleted


def test_inshop_without_a_mirror_or_source_says_what_to_do(tmp_path):
    with pytest.raises(DownloadError, match="Google Drive.*set data.source"):
        benchmarks.prepare_benchmark("inshop", tmp_path / "p", "", tmp_path / "dl", "", 2)


def test_broken_annotations_name_the_file(tmp_path, recorded):
    files = fake_cub()
    with tarfile.open(fileobj=io.BytesIO(files["CUB_200_2011.tgz"])) as t:
        members = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
    members["CUB_200_2011/images.txt"] += b"999 001.Bird_1/missing.jpg\n"
    members["CUB_200_2011/image_class_labels.txt"] += b"999 1\n"
    archive = tmp_path / "CUB_200_2011.tgz"
    archive.write_bytes(_tgz(members))
    recorded("cub", {"CUB_200_2011.tgz": archive.read_bytes()})
    with pytest.raises(DataError, match="missing.jpg: image listed in the annotations but not in the data set"):
        benchmarks.prepare_benchmark("cub", tmp_path / "p", str(archive), tmp_path / "dl", "", 2)
