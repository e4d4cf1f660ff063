"""The 2-D proof of concept (pipeline/studies/poc.py): each seed records where and why it stopped, under the cap rule."""

import pytest

from pipeline.params.root import params_from_dict
from pipeline.reporting.budgets import poc_markdown
from pipeline.studies.poc import poc_job, poc_setup
from pipeline.training.stopping import cut_while_improving
from tests.conftest import merge


@pytest.mark.parametrize(
    "best,stop,patience,cut", [(3, 3, 2, True), (1, 3, 2, False), (5, 24, 20, True), (4, 24, 20, False)]
)
def test_the_cap_rule_by_hand(best, stop, patience, cut):
    assert cut_while_improving(best, stop, patience) is cut


@pytest.mark.parametrize("variant", ["loss_proxy", "ccp"])
def test_a_seed_records_its_stop(tiny_dict, variant):
    params = params_from_dict(merge(tiny_dict, {"train": {"patience": 2}, "poc": {"max_epochs": 4}}))
    r = poc_job((poc_setup(params), variant, 0))
    assert 0 <= r["best_epoch"] <= r["epochs"] <= 4
    assert r["stop_reason"] in ("patience", "max_epochs", "method")
    assert r["cut_while_improving"] == (r["epochs"] - r["best_epoch"] < 2)
    if r["stop_reason"] == "patience":
        assert not r["cut_while_improving"]
    assert 0.0 <= r["test_precision_at_1"] <= 1.0 and 0.0 <= r["test_map_at_r"] <= 1.0
    table = poc_markdown({variant: {"seeds": {"seed_0": r}}})
    stop = f"| {variant} | 0 | {r['best_epoch']} | {r['epochs']} | {r['stop_reason']} | {r['subproblems']} |"
    assert stop in table
