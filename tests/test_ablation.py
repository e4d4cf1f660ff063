"""The ablation grids (pipeline/studies/ablation.py) and their results table."""

import math

import pytest

from pipeline.infra.errors import PipelineError
from pipeline.studies import ablation
from pipeline.training.jobs import FoldOutcome
from tests.conftest import merge


def test_ccp_grid_is_proxies_times_pool_factors_then_lambdas(tiny_params):
    points = ablation.grid(tiny_params, "ccp")  # tiny: proxies [1, 2] x factors [1, 2], lambdas [0, 2e-4]
    rows = [row for row, _ in points]
    assert [(r["proxies_per_class"], r["pool_size"]) for r in rows[:4]] == [(1, 1), (1, 2), (2, 2), (2, 4)]
    assert [r["lambda"] for r in rows[4:]] == [0.0, 2e-4]
    for row, params in points:  # each point trains with exactly its settings, the rest of ccp unchanged
        assert (params.ccp.proxies_per_class, params.ccp.pool_size, params.ccp.lambda_) == (
            row["proxies_per_class"],
            row["pool_size"],
            row["lambda"],
        )
        assert params.ccp.patience == tiny_params.ccp.patience and params.profs == tiny_params.profs
    assert rows[4]["pool_size"] == tiny_params.ccp.pool_size  # the lambda sweep keeps the section's #proxy, b


def test_profs_grid_sweeps_lambda_then_a_fixed_m(tiny_params):
    points = ablation.grid(tiny_params, "profs")  # tiny: lambdas [0, 1e-3], m [5]
    assert [(r["sweep"], r["m_mode"], r["m"], r["lambda"]) for r, _ in points] == [
        ("lambda", "derived", 30, 0.0),
        ("lambda", "derived", 30, 1e-3),
        ("m", "fixed", 5, 1e-3),
    ]
    assert points[2][1].profs.m_mode == "fixed" and points[2][1].profs.m == 5
    _, jobs = ablation.jobs(tiny_params, "profs", "d", "f")
    assert {(j.setup.name, j.fold, j.evaluate, j.out) for j in jobs} == {("ms_profs", 0, True, None)}
    assert [(j.setup.method.m_mode, j.setup.method.lambda_) for j in jobs] == [
        ("derived", 0.0),
        ("derived", 1e-3),
        ("fixed", 1e-3),
    ]  # each job carries its grid point's section


def test_unknown_study_is_refused(tiny_params):
    with pytest.raises(PipelineError, match="unknown ablation study 'x' \\(valid: ccp, profs\\)"):
        ablation.grid(tiny_params, "x")


def test_results_table_averages_the_steps_per_projection():
    metrics = {"map_at_r": 0.5, "r_precision": 0.6, "precision_at_1": 0.9}
    outcomes = [FoldOutcome([], [{"steps": 10}, {"steps": 30}], 4, 0.7, metrics), FoldOutcome([], [], 2, 0.6, metrics)]
    table = ablation.results_table([{"sweep": "lambda", "lambda": 0.0}, {"sweep": "lambda", "lambda": 1.0}], outcomes)
    assert list(table.projections[:1]) == [2] and math.isnan(table.projections[1])
    assert table.mean_steps_per_projection[0] == 20 and table.test_map_at_r.tolist() == [0.5, 0.5]


def test_results_table_drops_columns_no_point_has():
    metrics = {"map_at_r": 0.5, "r_precision": 0.6, "precision_at_1": 0.9}
    table = ablation.results_table([{"sweep": "m", "m": 5}], [FoldOutcome([], [], 1, 0.5, metrics)])
    assert "projections" not in table and "mean_steps_per_projection" not in table


@pytest.mark.parametrize(
    "override,message",
    [
        ({"ablation": {"fold": 3}}, "ablation.fold: 3 is not one of experiment.folds [0, 1]"),
        ({"ablation": {"ccp": {"lambdas": []}}}, "ablation.ccp.lambdas: needs one or more values"),
        ({"ablation": {"ccp": {"pool_factors": [0]}}}, "ablation.ccp.pool_factors: must be >= 1, got 0"),
        ({"ablation": {"profs": {"lambdas": [-1.0]}}}, "ablation.profs.lambdas: must be >= 0.0, got -1.0"),
        ({"ablation": {"profs": {"loss": "lifted_x"}}}, "ablation.profs.loss: 'lifted_x' is not one of"),
    ],
)
def test_bad_ablation_params(tiny_dict, override, message):
    from pipeline.config import ParamsError
    from pipeline.params.root import params_from_dict

    with pytest.raises(ParamsError, match=message.replace("[", r"\[").replace("]", r"\]")):
        params_from_dict(merge(tiny_dict, override))
