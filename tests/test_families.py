"""The method-family registry: run names parse back to their family, and dvc.yaml gives every family the stages
and params keys its record declares."""

from __future__ import annotations

import pytest
import yaml

from pipeline.families import families
from pipeline.training.runs import all_runs, family_runs, parse_run
from tests.conftest import ROOT


def test_every_family_run_parses_back_to_its_family_loss_and_variant(tiny_params):
    for family in families().values():
        for loss in family.losses:
            for variant in family.variants:
                assert parse_run(f"{loss}_{variant}") == (family, loss, variant)
    assert [r for r in all_runs(tiny_params) if parse_run(r) is None] == list(tiny_params.experiment.methods)


@pytest.mark.parametrize("name", ["ms", "proxy_anchor", "c5_ccp", "ms_xbm", "ms_profs_hncm_x", "ccp"])
def test_other_names_are_no_family_run(name):
    assert parse_run(name) is None


def test_runs_follow_the_sections_lists_loss_by_loss(tiny_params):
    assert family_runs(tiny_params, families()["ccp"]) == ["c2_loss_proxy", "c2_ccp"]
    assert family_runs(tiny_params, families()["profs"]) == ["ms_plain", "ms_profs_hncm"]


def test_variant_lists_hold_every_variant_once():
    for family in families().values():
        listed = [v for variants in family.variant_lists.values() for v in variants]
        assert sorted(listed) == sorted(family.variants), family.section


def test_dvc_yaml_gives_each_family_its_train_stages_and_keys():
    """Per variant list a train stage over <section>.losses x <section>.<list> with the keys its record declares;
    the stages that read every run (tune, export: the whole section; evaluate, pictures: its lists) name it."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for family in families().values():
        s = family.section
        lists = [f"{s}.losses", *(f"{s}.{key}" for key in family.variant_lists)]
        for key in family.variant_lists:
            found = [
                stage
                for stage in stages.values()
                if stage.get("matrix") == {"loss": f"${{{s}.losses}}", "variant": f"${{{s}.{key}}}"}
            ]
            assert len(found) == 1, f"dvc.yaml: no single train stage over {s}.losses x {s}.{key}"
            stage = found[0]
            assert "--method ${item.loss}_${item.variant}" in stage["cmd"]
            params = {p for p in stage["params"] if isinstance(p, str) and p.startswith(s)}
            if family.stage_keys is None:
                assert params == {s}
            else:
                assert params == {f"{s}.${{item.loss}}", *(f"{s}.{k}" for k in family.stage_keys[key])}
        for name in ("tune", "export"):
            assert s in stages[name]["params"], f"dvc.yaml: {name} does not depend on {s}"
        for name in ("evaluate", "pictures"):
            assert set(lists) <= set(stages[name]["params"]), f"dvc.yaml: {name} does not depend on {lists}"
