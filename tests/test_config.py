import dataclasses

import pytest

from pipeline.compose import compose, composed
from pipeline.config import ParamsError, to_dict
from pipeline.params.root import Params, load_params, params_from_dict
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


@pytest.mark.parametrize(
    "override,message",
    [
        ({"baselines": {"ms": {"loss": {"alpah": 2.0}}}}, "params.yaml: baselines.ms.loss.alpah: unknown key"),
        ({"baselines": {"ms": {"lr": 2.0}}}, "params.yaml: baselines.ms.lr: unknown key"),
        (
            {"baselines": {"ms": {"loss": {"name": "circle"}}}},
            "params.yaml: baselines.ms.loss.name: 'circle' is not one of 'angular', 'anml_lifted', 'anml_npair'",
        ),
        (
            {"baselines": {"ms": {"miner": {"name": "hardest"}}}},
            "params.yaml: baselines.ms.miner.name: 'hardest' is not one of 'distance_weighted', 'multi_similarity', 'none'",
        ),
        (
            {"baselines": {"ms": {"sampler": {"name": "greedy_coreset"}}}},
            "params.yaml: baselines.ms.sampler.name: 'greedy_coreset' is not one of 'spc' or 'random_class'",
        ),
        (
            {"baselines": {"ms": {"p_switch": 0.3}}},
            "params.yaml: baselines.ms.p_switch: rho-regularisation switches mined triplets; needs a miner in",
        ),
        (
            {"baselines": {"npair": {"xbm_batches": 3}}},
            "params.yaml: baselines.npair.xbm_batches: cross-batch memory supports the losses",
        ),
        (
            {"baselines": {"ms": {"sampler": {"images_per_class": 3}}}},
            "params.yaml: baselines.ms.sampler.images_per_class: 3 must divide the batch of 8",
        ),
        ({"baselines": {"odd": {"miner": {"name": "random"}}}}, "params.yaml: baselines.odd.loss: required"),
        ({"traing": {"lr": 1.0}}, "params.yaml: traing: unknown key"),
        ({"train": {"max_epochs": "forty"}}, "params.yaml: train.max_epochs:"),
        ({"train": {"lr": -1e-3}}, "params.yaml: train.lr: must be > 0.0, got -0.001"),
        ({"train": {"patience": 0}}, "params.yaml: train.patience: must be >= 1, got 0"),
        ({"train": {"mode": "frozenn"}}, "params.yaml: train.mode: 'frozenn' is not one of"),
        ({"train": {"lr": float("nan")}}, "params.yaml: train.lr: must be finite"),
        (
            {"experiment": {"methods": ["ms", "nope"]}},
            "params.yaml: experiment.methods: unknown method 'nope' (valid: the runs under baselines: angular, anml_lifted, ",
        ),
        ({"experiment": {"folds": [0, 2]}}, "params.yaml: experiment.folds:"),
        (
            {"profs": {"ms": {"name": "triplet"}}},
            "params.yaml: profs.ms.name: 'triplet' is not one of 'multi_similarity'",
        ),
        (
            {"lanml": {"grids": {"lanml_minus": {"gamma1": [-1.0, 0.5]}}}},
            "params.yaml: lanml.grids.lanml_minus.gamma1: every value must be < 0 (LANML- needs gamma1 < 0 < gamma2",
        ),
        (
            {"lanml": {"grids": {"lanml_plus": {"gamma2": [-2.0]}}}},
            "params.yaml: lanml.grids.lanml_plus.gamma2: every value must be > 0",
        ),
        (
            {"lanml": {"grids": {"lmnn": {"k": [3]}}}},
            "params.yaml: lanml.grids.lmnn.k: unknown hyperparameter (valid: n_neighbors, regularization)",
        ),
        ({"lanml": {"grids": {"boost": {"k": [3]}}}}, "params.yaml: lanml.grids.boost: unknown method"),
        ({"lanml": {"datasets": ["mnist"]}}, "params.yaml: lanml.datasets: 'mnist' is not one of"),
        ({"eval": {"recall_at": [0, 1]}}, "params.yaml: eval.recall_at:"),
    ],
)
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
    from pipeline.config import field_name, rename_keywords, yaml_key

    assert rename_keywords({"ccp": {"lambda": 2e-4, "lr": 1}}) == {"ccp": {"lambda_": 2e-4, "lr": 1}}
    assert yaml_key("lambda_") == "lambda" and field_name("lambda") == "lambda_"
    assert yaml_key("lr_") == "lr_"


def test_batch_size_is_classes_times_images_per_class(tiny_dict):
    train = params_from_dict(merge(tiny_dict, {"train": {"classes_per_batch": 6, "images_per_class": 3}})).train
    assert train.batch_size == 18


def test_params_yaml_is_conf_composed_as_dvc_composes_it(tmp_path):
    """The committed params.yaml is exactly what `dvc exp run -S ...` writes for the default choice (DVC's
    compose_and_dump on conf/), so an experiment's `git diff params.yaml` shows only what it set."""
    composed_default = tmp_path / "params.yaml"
    compose([], composed_default)
    assert composed_default.read_text() == (ROOT / "params.yaml").read_text(), (
        "params.yaml is stale: run `python -m pipeline.compose` after editing conf/"
    )
    compose(["ccp.lambda=1e-3", "baselines.ms.loss.alpha=3.0"], composed_default)
    old, new = (ROOT / "params.yaml").read_text().splitlines(), composed_default.read_text().splitlines()
    assert [b for a, b in zip(old, new) if a != b] == ["      alpha: 3.0", "  lambda: 0.001"]


def test_an_override_next_to_a_data_set_is_what_trains(tmp_path):
    """`dvc exp run -S dataset=cub -S train.lr=3e-5` trains at 3e-5, and params.yaml (what dvc exp show lists)
    says so; the data set's own settings come with it (conf/dataset/cub.yaml over conf/protocol/mlrc.yaml)."""
    cub = params_from_dict(composed(["dataset=cub", "train.lr=3e-5"]))
    assert cub.train.lr == 3e-5 and (cub.data.name, cub.data.setting) == ("cub", "mlrc")
    assert (cub.backbone.name, cub.backbone.weights, cub.backbone.input_size, cub.backbone.resize) == (
        "bn_inception",
        "imagenet",
        227,
        256,
    )
    assert (cub.backbone.input_space, cub.backbone.freeze_bn, cub.backbone.crop_scale) == ("bgr255", True, [0.16, 1.0])
    assert (cub.train.mode, cub.train.embedding_dim, cub.train.optimizer) == ("finetune", 128, "adam")
    assert cub.train.classes_per_batch * cub.train.images_per_class == 32
    # CCP supplement: C2 (m+, m-) = (beta - alpha, beta + alpha) = (0, 0.3841) on CUB
    assert (cub.ccp.c2.beta - cub.ccp.c2.alpha, cub.ccp.c2.beta + cub.ccp.c2.alpha) == pytest.approx((0.0, 0.3841))
    assert (cub.ccp.proxies_per_class, cub.ccp.pool_size, cub.ccp.triplet.margin) == (8, 12, 0.0961)
    assert cub.baselines["c1_xbm"].xbm_batches == 3 and cub.baselines["c1_xbm"].loss.neg_margin == 0.5
    assert params_from_dict(composed(["dataset=cub"])).train.lr == 1e-5  # the protocol's own value
    cars = params_from_dict(composed(["dataset=cars196"]))
    assert (cars.ccp.c2.beta - cars.ccp.c2.alpha, cars.ccp.c2.beta + cars.ccp.c2.alpha) == pytest.approx(
        (0.2652, 0.5409)
    )
    assert (cars.ccp.ms.alpha, cars.ccp.ms.beta, cars.ccp.ms.base) == (14.35, 75.83, 0.66)
    sop = params_from_dict(composed(["dataset=sop", "protocol=conventional"]))
    assert (sop.data.setting, sop.train.embedding_dim, sop.train.classes_per_batch * sop.train.images_per_class) == (
        "conventional",
        512,
        128,
    )
    assert (sop.train.steps_per_epoch, sop.baselines["c1_xbm_l"].xbm_batches, sop.ccp.proxies_per_class) == (
        250,
        1400,
        4,
    )


def test_a_data_set_name_alone_stops_with_one_line(tmp_path):
    """`-S data.name=cub -S train.lr=3e-5` (the name without the data set's settings) would train CUB at the
    embedded default's pixels and frozen head: the loader stops, naming the conflict and the fix."""
    with pytest.raises(ParamsError) as err:
        composed(["data.name=cub", "train.lr=3e-5"])
    assert str(err.value) == (
        "params.yaml: data.setting: 'none' does not go with data.name 'cub': compose the data "
        "set's settings with dvc exp run -S dataset=cub (protocol mlrc; or -S "
        "protocol=conventional) (conf/dataset/cub.yaml)"
    )
    with pytest.raises(ParamsError, match="data.setting: 'mlrc' does not go with data.name 'digit_pairs'"):
        composed(["data.setting=mlrc"])


def test_the_emoji_defaults_frozen_and_finetuned(tmp_path):
    """dataset=emoji: frozen ImageNet features; dataset=emoji_finetune: conf/dataset/emoji.yaml, then the GPU
    variant's finetune settings over it."""
    frozen = params_from_dict(composed(["dataset=emoji"]))
    assert (frozen.train.mode, frozen.backbone.name, frozen.backbone.augment) == (
        "frozen",
        "efficientnet_lite0",
        "shift",
    )
    assert (frozen.data.name, frozen.data.setting, frozen.tune.trials) == ("emoji", "none", 30)
    # emoji widens Margin's beta, and R-Margin's with it (a claim's two arms search one range); the rest as conf/
    margin, r_margin = (frozen.tune.spaces[run][f"baselines.{run}.loss.beta"] for run in ("margin_d", "r_margin_d"))
    assert (margin.low, margin.high) == (r_margin.low, r_margin.high) == (0.1, 6.0)
    assert frozen.tune.spaces["r_margin_d"]["baselines.r_margin_d.p_switch"].high == 0.6
    tuned = params_from_dict(composed(["dataset=emoji_finetune"]))
    assert (tuned.train.mode, tuned.backbone.name, tuned.backbone.weights) == (
        "finetune",
        "efficientnet_lite0",
        "imagenet",
    )
    assert (tuned.backbone.augment, tuned.backbone.crop_scale, tuned.backbone.flip, tuned.backbone.freeze_bn) == (
        "random_resized_crop",
        [0.5, 1.0],
        False,
        True,
    )
    assert (tuned.train.optimizer, tuned.train.lr, tuned.train.embedding_dim) == ("adam", 1e-5, 128)


def test_compose_refuses_what_does_not_validate(tmp_path, capsys):
    """A composition that fails validation leaves the previous params.yaml as it was, with one line."""
    from pipeline.compose import main

    target = tmp_path / "params.yaml"
    target.write_text("kept")
    with pytest.raises(SystemExit) as done:
        main(["train.lr=-1", "--output", str(target)])
    assert done.value.code == 2 and target.read_text() == "kept"
    assert capsys.readouterr().err.strip().endswith("train.lr: must be > 0.0, got -1")
    with pytest.raises(SystemExit):
        main(["dataset=imagenet", "--output", str(target)])
    assert "dataset" in capsys.readouterr().err and target.read_text() == "kept"


def test_stages_depend_on_no_config_group(tmp_path):
    """params.yaml holds no presets: dvc.yaml's stages depend on the keys they read, nothing else."""
    assert "presets" not in (ROOT / "params.yaml").read_text()
    assert "presets" not in (ROOT / "dvc.yaml").read_text()


def test_the_whole_root_refuses_an_unknown_section_and_a_stage_root_leaves_it(tmp_path, tiny_dict):
    """A misspelt top-level key (`ccpp:`) stops the code stage's whole check; prepare's root reads only its own."""
    from pipeline.config.loader import load_params as load_sections
    from pipeline.config.loader import params_type
    from pipeline.config.run import EXPERIMENT, SEED

    path = write_params(tmp_path / "params.yaml", {**tiny_dict, "ccpp": {"lambda": 1.0}})
    with pytest.raises(ParamsError, match=r"^params.yaml: ccpp: unknown key$"):
        load_params(path)
    assert load_sections(path, params_type(SEED, EXPERIMENT)).seed == tiny_dict.get("seed", 0)
