import dataclasses

import pytest

from pipeline.config import Params, ParamsError, load_params, params_from_dict, to_dict
from tests.conftest import ROOT, merge, write_params


def test_project_params_load_and_match_schema_defaults():
    params = load_params(ROOT / "params.yaml")
    assert params.train.lr == pytest.approx(1e-3)
    assert isinstance(params.train.min_delta, float)
    assert set(to_dict(params)) == {f.name for f in dataclasses.fields(Params)}


@pytest.mark.parametrize("text,value", [("2e-4", 2e-4), ("1e-10", 1e-10), ("1.5E+2", 150.0)])
def test_scientific_notation_loads_as_float(tmp_path, tiny_dict, text, value):
    path = write_params(tmp_path / "params.yaml", tiny_dict)
    path.write_text(path.read_text().replace("lr: 0.001", f"lr: {text}"))
    assert "lr: " + text in path.read_text()
    assert load_params(path).train.lr == pytest.approx(value)


@pytest.mark.parametrize("override,message", [
    ({"baselines": {"ms": {"loss": {"alpah": 2.0}}}}, "params.yaml: baselines.ms.loss.alpah: unknown key"),
    ({"baselines": {"ms": {"lr": 2.0}}}, "params.yaml: baselines.ms.lr: unknown key"),
    ({"baselines": {"ms": {"loss": {"name": "circle"}}}},
     "params.yaml: baselines.ms.loss.name: 'circle' is not one of ['angular', 'anml_lifted'"),
    ({"baselines": {"ms": {"miner": {"name": "hardest"}}}},
     "params.yaml: baselines.ms.miner.name: 'hardest' is not one of ['distance_weighted', 'multi_similarity'"),
    ({"baselines": {"ms": {"sampler": {"name": "greedy_coreset"}}}},
     "params.yaml: baselines.ms.sampler.name: 'greedy_coreset' is not one of ['spc', 'random_class']"),
    ({"baselines": {"ms": {"p_switch": 0.3}}},
     "params.yaml: baselines.ms.p_switch: rho-regularisation switches mined triplets; needs a miner in"),
    ({"baselines": {"npair": {"xbm_batches": 3}}},
     "params.yaml: baselines.npair.xbm_batches: cross-batch memory supports the losses"),
    ({"baselines": {"ms": {"sampler": {"images_per_class": 3}}}},
     "params.yaml: baselines.ms.sampler.images_per_class: 3 must divide the batch of 8"),
    ({"baselines": {"odd": {"miner": {"name": "random"}}}}, "params.yaml: baselines.odd: must be a mapping with a loss"),
    ({"traing": {"lr": 1.0}}, "params.yaml: traing: unknown key"),
    ({"train": {"max_epochs": "forty"}}, "params.yaml: train.max_epochs:"),
    ({"train": {"lr": -1e-3}}, "params.yaml: train.lr: must be > 0.0, got -0.001"),
    ({"train": {"patience": 0}}, "params.yaml: train.patience: must be >= 1, got 0"),
    ({"train": {"mode": "frozenn"}}, "params.yaml: train.mode: 'frozenn' is not one of"),
    ({"train": {"lr": float("nan")}}, "params.yaml: train.lr: must be finite"),
    ({"experiment": {"methods": ["ms", "nope"]}}, "params.yaml: experiment.methods: unknown method 'nope' (valid: the runs under baselines: angular, anml_lifted, "),
    ({"experiment": {"folds": [0, 2]}}, "params.yaml: experiment.folds:"),
    ({"profs": {"ms": {"name": "triplet"}}}, "params.yaml: profs.ms.name: must be 'multi_similarity' (or left out)"),
    ({"lanml": {"grids": {"lanml_minus": {"gamma1": [-1.0, 0.5]}}}},
     "params.yaml: lanml.grids.lanml_minus.gamma1: every value must be < 0 (LANML- needs gamma1 < 0 < gamma2"),
    ({"lanml": {"grids": {"lanml_plus": {"gamma2": [-2.0]}}}}, "params.yaml: lanml.grids.lanml_plus.gamma2: every value must be > 0"),
    ({"lanml": {"grids": {"lmnn": {"k": [3]}}}}, "params.yaml: lanml.grids.lmnn.k: unknown hyperparameter (valid: n_neighbors, regularization)"),
    ({"lanml": {"grids": {"boost": {"k": [3]}}}}, "params.yaml: lanml.grids.boost: unknown method"),
    ({"lanml": {"datasets": ["mnist"]}}, "params.yaml: lanml.datasets: 'mnist' is not one of"),
    ({"eval": {"recall_at": [0, 1]}}, "params.yaml: eval.recall_at:"),
])
def test_bad_values_name_the_key(tiny_dict, override, message):
    with pytest.raises(ParamsError) as err:
        params_from_dict(merge(tiny_dict, override))
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ParamsError, match="file not found"):
        load_params(tmp_path / "nope.yaml")
    bad = tmp_path / "params.yaml"
    bad.write_text("train: [unclosed\n")
    with pytest.raises(ParamsError, match="params.yaml: cannot parse YAML"):
        load_params(bad)


def test_python_keywords_map_to_trailing_underscore():
    from pipeline.config import _field_name, _rename_keywords, _yaml_key

    assert _rename_keywords({"ccp": {"lambda": 2e-4, "lr": 1}}) == {"ccp": {"lambda_": 2e-4, "lr": 1}}
    assert _yaml_key("lambda_") == "lambda" and _field_name("lambda") == "lambda_"
    assert _yaml_key("lr_") == "lr_"


def test_a_real_data_set_applies_its_setting_and_data_set_presets(tiny_dict):
    cub = params_from_dict(merge(tiny_dict, {"data": {"name": "cub"}}))
    # presets.mlrc: BN-Inception, 128-D, batch 8 x 4, Adam 1e-5, frozen BN, MLRC crops and input scaling
    assert (cub.backbone.name, cub.backbone.weights, cub.backbone.input_size, cub.backbone.resize) == \
        ("bn_inception", "imagenet", 227, 256)
    assert (cub.backbone.input_space, cub.backbone.freeze_bn, cub.backbone.crop_scale) == ("bgr255", True, [0.16, 1.0])
    assert (cub.train.mode, cub.train.embedding_dim, cub.train.lr, cub.train.optimizer) == ("finetune", 128, 1e-5, "adam")
    assert cub.train.classes_per_batch * cub.train.images_per_class == 32
    # presets.cub: the CCP supplement's CUB values; C2 (m+, m-) = (beta - alpha, beta + alpha) = (0, 0.3841)
    assert (cub.ccp.c2.beta - cub.ccp.c2.alpha, cub.ccp.c2.beta + cub.ccp.c2.alpha) == pytest.approx((0.0, 0.3841))
    assert (cub.ccp.proxies_per_class, cub.ccp.pool_size, cub.ccp.triplet.margin) == (8, 12, 0.0961)
    assert cub.baselines["c1_xbm"].xbm_batches == 3 and cub.baselines["c1_xbm"].loss.neg_margin == 0.5
    cars = params_from_dict(merge(tiny_dict, {"data": {"name": "cars196"}}))
    assert (cars.ccp.c2.beta - cars.ccp.c2.alpha, cars.ccp.c2.beta + cars.ccp.c2.alpha) == pytest.approx((0.2652, 0.5409))
    assert (cars.ccp.ms.alpha, cars.ccp.ms.beta, cars.ccp.ms.base) == (14.35, 75.83, 0.66)
    sop = params_from_dict(merge(tiny_dict, {"data": {"name": "sop", "setting": "conventional"}}))
    assert (sop.train.embedding_dim, sop.train.classes_per_batch * sop.train.images_per_class) == (512, 128)
    assert (sop.train.steps_per_epoch, sop.baselines["c1_xbm_l"].xbm_batches, sop.ccp.proxies_per_class) == (250, 1400, 4)
    # the embedded default ignores every preset
    assert params_from_dict(tiny_dict).backbone.name == "pixels"


def test_the_emoji_default_finetunes_only_when_train_mode_says_so(tiny_dict):
    """data.name=emoji applies presets.emoji (frozen features); adding train.mode=finetune applies
    presets.emoji_finetune over it (the GPU variant), and params then say what trains (mode finetune)."""
    frozen = params_from_dict(merge(tiny_dict, {"data": {"name": "emoji"}}))
    assert (frozen.train.mode, frozen.backbone.name, frozen.backbone.augment) == ("frozen", "efficientnet_lite0", "shift")
    tuned = params_from_dict(merge(tiny_dict, {"data": {"name": "emoji"}, "train": {"mode": "finetune"}}))
    assert (tuned.train.mode, tuned.backbone.name, tuned.backbone.weights) == ("finetune", "efficientnet_lite0", "imagenet")
    assert (tuned.backbone.augment, tuned.backbone.crop_scale, tuned.backbone.flip, tuned.backbone.freeze_bn) == \
        ("random_resized_crop", [0.5, 1.0], False, True)
    assert (tuned.train.optimizer, tuned.train.lr, tuned.train.embedding_dim) == ("adam", 1e-5, 128)
    # the digit default's frozen head is untouched by it
    assert params_from_dict(merge(tiny_dict, {"train": {"mode": "finetune"}})).backbone.augment == "shift"


@pytest.mark.parametrize("presets,message", [
    ({"mlrc": {"train": {"lrr": 1.0}}}, "presets.mlrc.train.lrr: unknown key"),
    ({"imagenet": {}}, "presets.imagenet: unknown preset"),
    ({"cub": {"data": {"name": "sop"}}}, "presets.cub: must be a mapping of sections, without presets or data.name"),
    ({"cub": {"train": {"lr": -1.0}}}, r"train.lr: must be > 0.0, got -1.0 \(after applying presets.mlrc, presets.cub\)"),
])
def test_bad_presets_name_the_key(tiny_dict, presets, message):
    data = merge(tiny_dict, {"data": {"name": "cub"}, "presets": presets})
    with pytest.raises(ParamsError, match=message):
        params_from_dict(data)


def test_params_yaml_is_written_as_dvc_writes_it(tmp_path):
    """`dvc exp run -S key=value` rewrites params.yaml through DVC's own override function (every list in
    block form, comments kept by key): the committed file is a fixed point of it, so `git diff params.yaml`
    after an experiment shows the keys that were set and nothing else."""
    from dvc.utils.hydra import apply_overrides

    original = (ROOT / "params.yaml").read_text()
    copy = tmp_path / "params.yaml"
    copy.write_text(original)
    apply_overrides(copy, [])
    assert copy.read_text() == original, "params.yaml: keep mappings and lists in block style (DVC rewrites them so)"
    for override, changed in (("ccp.lambda=1e-3", ["  lambda: 0.001"]),
                              ("baselines.ms.loss.alpha=3.0", ["      alpha: 3.0"]),
                              ("presets.cub.ccp.pool_size=16", ["      pool_size: 16"])):
        copy.write_text(original)
        apply_overrides(copy, [override])
        old, new = original.splitlines(), copy.read_text().splitlines()
        assert len(old) == len(new), override
        assert [b.split("#")[0].rstrip() for a, b in zip(old, new) if a != b] == changed, override


def test_digit_pairs_preset_must_stay_empty(tiny_dict):
    """presets.digit_pairs exists so that dvc.yaml can name presets.<data.name>; it holds nothing."""
    tiny_dict["presets"]["digit_pairs"] = {"train": {"lr": 0.1}}
    with pytest.raises(ParamsError, match=r"presets.digit_pairs: must be empty"):
        params_from_dict(tiny_dict)
