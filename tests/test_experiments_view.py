"""`dml experiments` (pipeline/reporting/experiments.py): `dvc exp show --json` turned into one column per experiment,
the params that vary and the runs an experiment trained whose headline metrics vary, at most 100 columns, no
dependency hashes."""

from pipeline.reporting.experiments import METRICS_FILE, columns, experiments_table


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
    assert max(len(line) for line in lines) <= 100


def test_many_experiments_keep_the_workspace_the_commit_and_the_newest():
    names = [name for name, _, _, _ in columns(_shown(9))]
    assert names[:3] == ["workspace", "main", "exp-0"] and len(names) == 11
    header = experiments_table(_shown(9), last=5).splitlines()[0].split()
    assert header == ["workspace", "main", "exp-6", "exp-7", "exp-8"]
    assert experiments_table(_shown(9)).splitlines()[0].split()[2:] == ["exp-5", "exp-6", "exp-7", "exp-8"]  # 6 fit
    assert max(len(line) for line in experiments_table(_shown(9), last=20).splitlines()) <= 100


def test_nothing_that_varies_is_said_so():
    shown = [{"rev": "workspace", "name": None, "data": _data(2e-4, 0.5, 0.7)}]
    assert "no param or headline metric differs" in experiments_table(shown)


def test_long_params_are_printed_in_full_under_the_table():
    """Two experiments on two folders whose names share their first 30 characters: each cell holds a note mark, and
    the notes give both paths in full (wrapped at 100 columns), so the two experiments can be told apart."""
    shown = _shown(2)
    folders = [
        "/tmp/newuser/icons/a-very-long-folder-name/set-one",
        "/tmp/newuser/icons/a-very-long-folder-name/set-two",
    ]
    for rev, folder in zip(shown[1]["experiments"][0]["revs"], folders):
        rev["data"]["params"]["params.yaml"]["data"]["data"] = {"source": folder}
    lines = experiments_table(shown).splitlines()
    row = next(line for line in lines if line.startswith("data.source"))
    assert row.split()[1:] == ["-", "-", "[1]", "[2]"]
    assert f"[1] data.source = {folders[0]}" in lines and f"[2] data.source = {folders[1]}" in lines
    assert max(map(len, lines)) <= 100


def test_runs_only_the_commit_holds_are_left_out():
    """Beside the committed default (29 runs in its metrics), experiments on the user's own data train ms only: the
    view shows ms's rows, not the default's other runs, which no experiment trained."""
    shown = _shown(2)
    shown[1]["data"]["metrics"][METRICS_FILE]["data"]["lifted"] = {"val_map_at_r": 0.3, "map_at_r": 0.2}
    for entry in [shown[0], *shown[1]["experiments"][0]["revs"]]:
        entry["data"]["metrics"][METRICS_FILE]["data"]["ms"]["val_map_at_r"] = 0.1 if entry is shown[0] else 0.2
    table = experiments_table(shown)
    assert "lifted" not in table
    assert [line.split()[:3] for line in table.splitlines() if line.startswith("ms ")][0] == ["ms", "val", "MAP@R"]


def test_the_runs_at_a_user_value_are_named_where_a_searched_key_reads_a_number():
    def with_tune(lam) -> dict:
        data = _data(0.5, 0.5, 0.7 if lam == "study" else 0.65)
        tree = data["params"]["params.yaml"]["data"]
        tree["ccp"]["lambda"] = lam
        tree["baselines"] = {"ms": {"loss": {"alpha": "study"}}}
        tree["tune"] = {
            "start": {"ccp": {"lambda": 2e-4}},
            "spaces": {"c2_ccp": {"ccp.lambda": {"low": 1e-5}}, "ms": {"baselines.ms.loss.alpha": {"low": 1}}},
        }
        return data

    shown = [
        {"rev": "workspace", "name": None, "data": with_tune("study")},
        {
            "rev": "a" * 40,
            "name": "main",
            "data": with_tune("study"),
            "experiments": [
                {
                    "revs": [
                        {"rev": "b" * 40, "name": "lam", "data": with_tune(1e-3)},
                    ]
                }
            ],
        },
    ]
    lines = experiments_table(shown).splitlines()
    assert lines[1].split() == ["(runs", "at", "user", "values)", "-", "-", "c2_ccp"]  # ms reads study: not named
    assert lines[2].split() == ["ccp.lambda", "study", "study", "0.0010"]
    older = [{"rev": "workspace", "name": None, "data": _data(2e-4, 0.5, 0.7)}]  # no tune.start: no such row
    assert "user values" not in experiments_table(older)
