"""pipeline/models: BN-Inception and ResNet50 trunks, pooling, frozen BatchNorm, weights files, transforms."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest
import torch
from PIL import Image

from pipeline.config import BackboneConfig
from pipeline.methods.objective import trainable
from pipeline.models import backbones
from pipeline.models.backbones import BackboneError, build_backbone
from pipeline.models.bn_inception import BNInception
from pipeline.models.embedder import Embedder, build_head
from pipeline.models.transforms import eval_transform, train_transform


class _Pickled:
    """An arbitrary object: torch.load(weights_only=True) must refuse to unpickle it."""


def _count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_bn_inception_matches_the_published_network():
    model = BNInception(num_classes=1000)
    # 11,295,240 parameters: BN-Inception with conv biases and the 1000-class classifier, as the
    # pretrained-models.pytorch conversion (imgclsmob lists the same count for bninception)
    assert _count(model) == 11_295_240
    state = model.state_dict()
    assert state["conv1_7x7_s2.weight"].shape == (64, 3, 7, 7)
    assert state["inception_3c_double_3x3_2.weight"].shape == (96, 96, 3, 3)
    assert state["inception_5b_pool_proj_bn.running_var"].shape == (128,)
    assert state["last_linear.weight"].shape == (1000, 1024)
    assert model.eval()(torch.zeros(1, 3, 227, 227)).shape == (1, 1024, 7, 7)


def test_resnet50_trunk_matches_torchvision():
    cfg = BackboneConfig(name="resnet50")
    trunk = build_backbone(cfg)
    # torchvision's ResNet50: 25,557,032 parameters, of which the classifier fc is 2048 x 1000 + 1000
    assert _count(trunk) == 25_557_032 - 2_049_000


@pytest.mark.parametrize(
    "name,pooling,width",
    [("bn_inception", "avg", 1024), ("bn_inception", "avg_cat_max", 2048), ("resnet50", "avg_plus_max", 2048)],
)
def test_embedder_gives_the_configured_size(name, pooling, width):
    backbone = build_backbone(BackboneConfig(name=name, pooling=pooling)).eval()
    x = torch.randn(2, 3, 227, 227)
    with torch.no_grad():
        features = backbone(x)
        assert features.shape == (2, width)
        model = Embedder(backbone, build_head(width, 128, 0), "l2").eval()
        assert model(x).shape == (2, 128)


def test_pooling_kinds_by_hand():
    x = torch.arange(8.0).reshape(1, 2, 2, 2)  # channel 0: 0..3, channel 1: 4..7
    got = {k: backbones.GlobalPool(k)(x).tolist() for k in ("avg", "max", "avg_plus_max", "avg_cat_max")}
    assert got == {
        "avg": [[1.5, 5.5]],
        "max": [[3.0, 7.0]],
        "avg_plus_max": [[4.5, 12.5]],
        "avg_cat_max": [[1.5, 5.5, 3.0, 7.0]],
    }


def test_frozen_batchnorm_keeps_statistics_and_affine_weights():
    backbone = build_backbone(BackboneConfig(name="tiny_cnn", freeze_bn=True))
    model = Embedder(backbone, build_head(128, 8, 0), "l2", freeze_bn=True).train()
    bn = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    before = [m.running_mean.clone() for m in bn]
    model(torch.randn(4, 3, 16, 16))
    assert all(not m.training for m in bn) and model.training
    assert all(torch.equal(a, m.running_mean) for a, m in zip(before, bn))
    frozen = {id(p) for m in bn for p in m.parameters()}
    assert frozen and not frozen & {id(p) for p in trainable(model)}


def test_weights_files(tmp_path):
    reference = BNInception(num_classes=1000)
    old_style = {k: v for k, v in reference.state_dict().items() if not k.endswith("num_batches_tracked")}
    torch.save(old_style, tmp_path / "converted.pth")  # files converted with old PyTorch lack this buffer
    cfg = BackboneConfig(name="bn_inception", weights=str(tmp_path / "converted.pth"))
    loaded = build_backbone(cfg)
    assert torch.equal(loaded.trunk.conv1_7x7_s2.weight, reference.conv1_7x7_s2.weight)

    wrong = dict(old_style)
    wrong["extra.weight"] = wrong.pop("inception_4a_1x1.weight")
    torch.save(wrong, tmp_path / "wrong.pth")
    with pytest.raises(
        BackboneError,
        match=r"does not match the model \(1 missing keys, 1 unexpected keys, 0 keys of "
        r"the wrong shape; e.g. inception_4a_1x1.weight\)",
    ):
        build_backbone(dataclasses.replace(cfg, weights=str(tmp_path / "wrong.pth")))
    torch.save({"obj": _Pickled()}, tmp_path / "code.pth")
    with pytest.raises(BackboneError, match="not a loadable state dict"):  # weights_only=True refuses objects
        build_backbone(dataclasses.replace(cfg, weights=str(tmp_path / "code.pth")))


def test_imagenet_weights_are_downloaded_and_verified(tmp_path, file_server, monkeypatch):
    reference = BNInception(num_classes=1000)
    path = tmp_path / "src.pth"
    torch.save(reference.state_dict(), path)
    blob = path.read_bytes()
    name = f"bn_inception-{hashlib.sha256(blob).hexdigest()[:9]}.pth"
    server = file_server({name: blob, "bn_inception-000000000.pth": blob})
    monkeypatch.setitem(backbones.IMAGENET_WEIGHTS, "bn_inception", f"{server.url}/{name}")
    cfg = BackboneConfig(name="bn_inception", weights="imagenet")
    model = build_backbone(cfg, tmp_path / "dl")
    assert (tmp_path / "dl" / "weights" / name).is_file()
    assert torch.equal(model.trunk.inception_5b_3x3.weight, reference.inception_5b_3x3.weight)
    monkeypatch.setitem(backbones.IMAGENET_WEIGHTS, "bn_inception", f"{server.url}/bn_inception-000000000.pth")
    with pytest.raises(Exception, match="does not match the recorded 000000000"):
        build_backbone(cfg, tmp_path / "dl")
    assert not (tmp_path / "dl" / "weights" / "bn_inception-000000000.pth").exists()


def test_bn_inception_input_scaling_and_mlrc_crops():
    cfg = BackboneConfig(
        name="bn_inception",
        input_size=227,
        resize=256,
        input_space="bgr255",
        mean=[104.0, 117.0, 128.0],
        std=[1.0, 1.0, 1.0],
        augment="random_resized_crop",
        flip=True,
    )
    image = Image.fromarray(np.full((300, 400, 3), (10, 20, 30), dtype=np.uint8))
    x = eval_transform(cfg, "white")(image)
    assert x.shape == (3, 227, 227)
    # BGR order, [0, 255], minus the BGR mean: (30 - 104, 20 - 117, 10 - 128)
    assert torch.allclose(x[:, 100, 100], torch.tensor([-74.0, -97.0, -118.0]), atol=1e-4)
    torch.manual_seed(0)
    assert train_transform(cfg, 0, "white")(image).shape == (3, 227, 227)


def _imagenet_input(image: np.ndarray, size: int) -> torch.Tensor:
    """Centre square, resized, ImageNet mean/std: the efficientnet_lite_pytorch package's preprocessing."""
    im = Image.fromarray(image)
    side = min(im.size)
    left, top = (im.size[0] - side) // 2, (im.size[1] - side) // 2
    im = im.crop((left, top, left + side, top + side)).resize((size, size), Image.BILINEAR)
    x = torch.tensor(np.asarray(im), dtype=torch.float32).permute(2, 0, 1)[None] / 255
    return (x - torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)) / torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


def test_efficientnet_lite0_packaged_weights_recognise_imagenet_classes(tmp_path):
    """The packaged weights in the package's model definition classify real photos (scikit-learn's two sample
    images) as ImageNet would: the temple as bell cote / palace, the flower as daisy. Random or wrongly mapped
    weights do not."""
    from sklearn.datasets import load_sample_images

    path = backbones.fetch_imagenet_weights("efficientnet_lite0", tmp_path)
    assert path.name == "efficientnet-lite0-57934424.pth" and not (tmp_path / "weights").exists()  # nothing fetched
    model = backbones.efficientnet_lite("efficientnet_lite0", 224)
    backbones.load_weights(model, path)
    assert _count(model) == 4_652_008  # 4.65 M parameters (the file also holds BatchNorm statistics)
    samples = load_sample_images()
    x = torch.cat([_imagenet_input(img, 224) for img in samples.images])  # china.jpg, flower.jpg
    with torch.no_grad():
        top = model.eval()(x).topk(2).indices.tolist()
    assert set(top[0]) == {442, 698}  # bell cote, palace
    assert top[1][0] == 985  # daisy
    random = backbones.efficientnet_lite("efficientnet_lite0", 224).eval()
    with torch.no_grad():
        assert random(x).argmax(1).tolist() != [442, 985]


def test_efficientnet_lite0_trunk_and_a_wrong_weights_file(tmp_path):
    cfg = BackboneConfig(name="efficientnet_lite0", weights="imagenet", input_size=128, pooling="avg")
    net = build_backbone(cfg, tmp_path).eval()
    assert net.trunk.net._fc is None  # no classifier in the trunk
    with torch.no_grad():
        assert net.trunk(torch.zeros(2, 3, 128, 128)).shape == (2, 1280, 4, 4)
        assert net(torch.zeros(2, 3, 128, 128)).shape == (2, 1280)
    bad = tmp_path / "not-lite0.pth"
    torch.save(BNInception(num_classes=1000).state_dict(), bad)
    with pytest.raises(BackboneError, match=r"not-lite0.pth does not match the model \(\d+ missing keys"):
        build_backbone(dataclasses.replace(cfg, weights=str(bad)), tmp_path)


def test_packaged_weights_are_checked_against_the_hash_in_their_name(tmp_path, monkeypatch):
    from pipeline.infra.download import DownloadError

    package = tmp_path / "fake_weights_pkg"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "models" / "lite-0123abcd.pth").write_bytes(b"not the weights")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(
        backbones.PACKAGED_WEIGHTS, "efficientnet_lite0", ("fake_weights_pkg", "models/lite-0123abcd.pth")
    )
    with pytest.raises(
        DownloadError, match=r"lite-0123abcd.pth: SHA256 [0-9a-f]+ does not match the recorded 0123abcd"
    ):
        backbones.fetch_imagenet_weights("efficientnet_lite0", tmp_path)
    assert (package / "models" / "lite-0123abcd.pth").exists()  # an installed file is never deleted


def test_embedding_on_two_processes_gives_the_one_process_features_bit_for_bit(tiny_data, tiny_params):
    """The embed stage's CPU processes share the batches, not the batch contents: identical features (a
    random-init CNN, so its weights travel from the parent), whatever the number of processes."""
    import dataclasses

    import numpy as np
    import torch

    from pipeline.models.features import extract_features

    manifest, _ = tiny_data
    cfg = dataclasses.replace(tiny_params.backbone, name="tiny_cnn", input_size=16, embed_batch_size=20)
    torch.manual_seed(3)
    one = extract_features(manifest, cfg, "white", torch.device("cpu"), workers=1)
    torch.manual_seed(3)
    two = extract_features(manifest, cfg, "white", torch.device("cpu"), workers=2)
    torch.manual_seed(3)
    three = extract_features(manifest, cfg, "white", torch.device("cpu"), workers=3)
    assert one.features.shape == (len(manifest.table), one.features.shape[1]) and one.features.std() > 0
    assert np.array_equal(one.features, two.features) and np.array_equal(one.features, three.features)
    torch.manual_seed(4)  # another random network: the check can fail
    assert not np.array_equal(
        one.features, extract_features(manifest, cfg, "white", torch.device("cpu"), workers=2).features
    )
