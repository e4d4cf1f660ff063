"""`dml experiments` (pipeline/reporting/experiments.py): `dvc exp show --json` turned into one column per experiment,
the params that vary and the runs whose headline metrics vary, at most 120 columns, no dependency hashes."""

from pipeline.reporting.experiments import columns, experiments_table


def _data(lam: float, alpha: float, c2: float, ms: float = 0.5) -> dict:
    headline = {
        "c2_ccp": {"val_map_at_r": c2, "map_at_r": c2 - 0.1, "precision_at_1": 0.9},
        "ms": {"val_map_at_r": ms, "map_at_r": 0.4, "precision_at_1": 0.8},
    }
    return {
        "params": {"params.yaml": {"data": {"ccp": {"lambda": lam, "c2": {"alpha": alpha}}, "seed": 0}}},
        "metrics": {"reports/headline_metrics.json": {"data": headline}},
        "deps": {"data/ablations": {"hash": f"{lam}"}},
    }


def _shown(experiments: int) -> list[dict]:
    revs = [
        {"rev": f"{i:040x}", "name": f"exp-{i}", "data": _data(1e-3 * (i + 1), 0.5, 0.6 + 0.01 * i)}
        for i in range(experiments)
    ]
    return [
        {"rev": "workspace", "name": None, "data": _data(2e-4, 0.5, 0.7)},
        {"rev": "a" * 40, "name": "main", "data": _data(2e-4, 0.5, 0.7), "experiments": [{"revs": revs}]},
    ]


def test_the_params_that_vary_and_the_runs_that_moved_one_column_each():
    table = experiments_table(_shown(2))
    lines = table.splitlines()
    assert lines[0].split() == ["workspace", "main", "exp-0", "exp-1"]
    assert lines[1].split() == ["ccp.lambda", "0.0002", "0.0002", "0.0010", "0.0020"]
    assert "ccp.c2.alpha" not in table and "seed" not in table  # no experiment changed them
    assert [line.split()[:3] for line in lines[3:]] == [
        ["c2_ccp", "val", "MAP@R"],
        ["c2_ccp", "test", "MAP@R"],
        ["c2_ccp", "P@1", "0.9000"],
    ]
    assert lines[3].split()[3:] == ["0.7000", "0.7000", "0.6000", "0.6100"]
    assert "ms " not in table and "data/" not in table  # ms did not move; no hashes
    assert max(len(line) for line in lines) <= 120


def test_many_experiments_keep_the_workspace_the_commit_and_the_newest():
    names = [name for name, _, _ in columns(_shown(9))]
    assert names[:3] == ["workspace", "main", "exp-0"] and len(names) == 11
    header = experiments_table(_shown(9), last=7).splitlines()[0].split()
    assert header == ["workspace", "main", "exp-4", "exp-5", "exp-6", "exp-7", "exp-8"]
    assert max(len(line) for line in experiments_table(_shown(9)).splitlines()) <= 120


def test_nothing_that_varies_is_said_so():
    shown = [{"rev": "workspace", "name": None, "data": _data(2e-4, 0.5, 0.7)}]
    assert "no param or headline metric differs" in experiments_table(shown)


def test_long_values_are_cut_to_their_column():
    shown = _shown(1)
    shown[0]["data"]["params"]["params.yaml"]["data"]["backbone"] = "efficientnet_lite0"
    shown[0]["data"]["params"]["params.yaml"]["data"]["methods"] = ["ms", "danml", "lifted", "anml_lifted"]
    lines = experiments_table(shown).splitlines()
    row = next(line for line in lines if line.startswith("methods"))
    assert row.split()[1] == '["ms",' and "…" in row and max(map(len, lines)) <= 120
    assert len(row) == 34 + 3 * 12  # every cell in its column
