"""The method-family registry: run names parse back to their family, and dvc.yaml's one train stage trains every
run params.yaml composes from the lists."""

from __future__ import annotations

import pytest
import yaml

from pipeline.config import ParamsError
from pipeline.families import families
from pipeline.params.root import load_params, params_from_dict
from pipeline.runs import all_runs, family_runs, parse_run
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


def test_one_train_stage_trains_every_composed_run():
    """dvc.yaml trains the runs of experiment.runs (composed from the lists, so no family needs a stage of its own);
    a run's own section is no param of it: its settings reach it through data/tuned/<run>.json."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert [n for n, s in stages.items() if "-m stages.train" in s["cmd"]] == ["train"]
    train = stages["train"]
    assert train["matrix"] == {"run": "${experiment.runs}"} and "--tuned data/tuned/${item.run}.json" in train["cmd"]
    assert not [p for p in train["params"] if p.split(".")[0] in ("baselines", *families())]
    params = load_params(ROOT / "params.yaml")
    assert params.experiment.runs == all_runs(params)


def test_experiment_runs_is_composed_from_the_lists_and_a_stale_one_stops():
    from pipeline.compose import composed

    others = [f"{section}.losses=[]" for section in families() if section != "ccp"]
    runs = composed(["experiment.methods=[ms]", "ccp.losses=[c1]", "ccp.variants=[]", *others])
    assert runs["experiment"]["runs"] == ["ms", "c1_ccp"]
    stale = {**runs, "experiment": {**runs["experiment"], "methods": ["danml"]}}
    with pytest.raises(ParamsError, match=r"params.yaml: experiment.runs: \['ms', 'c1_ccp'\] is not what"):
        params_from_dict(stale)


def test_the_ablation_stages_and_figures_are_the_families():
    """dvc.yaml runs one ablation stage per family with an ablation study (its record's `ablation`), and the report
    stage declares, as outputs and plots, every figure those records draw: a family brings its own."""
    from pipeline.reporting.pages import report_files
    from pipeline.studies import ablation

    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    assert dvc["stages"]["ablation"]["matrix"]["study"] == list(ablation.studies()) == ["ccp", "profs"]
    outs = {next(iter(o)) if isinstance(o, dict) else o for o in dvc["stages"]["report"]["outs"]}
    drawn = {f"reports/figures/{f.file}.png" for name in ablation.studies() for f in ablation.study(name).figures}
    assert drawn == {f"reports/figures/{n}.png" for n in ("ccp_proxies_pool", "ccp_lambda", "profs_lambda", "profs_m")}
    assert drawn <= {f"reports/{f}" for f in report_files()} <= outs and drawn <= set(dvc["plots"])


def test_a_familys_own_report_part_is_its_page_named_by_its_section():
    """pipeline/reporting/pages/<section>.py: CCP's figures, page and paragraphs, a report page like any other."""
    from pipeline.reporting.pages import figure_names, pages

    (ccp,) = [p for p in pages() if p.name in families()]
    assert ccp.name == "ccp" and set(ccp.figures) <= set(figure_names()) and "ccp_subproblems.md" in ccp.outputs
