"""Comparison tables beside the papers' numbers, the reference file, and the rank agreement."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from pipeline.reporting import comparison
from pipeline.reporting.reference import COLUMNS, ReferenceError, read_published


def fake_metrics(value: float, std: float = 0.01, concat: float | None = None, concat_std: float = 0.03) -> dict:
    keys = ("precision_at_1", "r_precision", "map_at_r", "recall_at_1", "nmi", "f1")
    return {
        "separated": {"mean": {k: value for k in keys}, "std": {k: std for k in keys}},
        "concatenated": {
            "mean": {k: value if concat is None else concat for k in keys},
            "std": {k: concat_std for k in keys},
        },
    }


def published_rows(rows: list[dict]) -> pd.DataFrame:
    base = {
        "paper": "CCP",
        "table": "T",
        "dataset": "CUB",
        "protocol": "mlrc-separated-128D",
        "method": "m",
        "run": "",
        "metric": "map_at_r",
        "value": 0.0,
        "std": np.nan,
        "note": "",
    }
    return pd.DataFrame([{**base, **r} for r in rows], columns=COLUMNS)


def test_measured_values_are_percent_with_std_over_models_and_seeds():
    table = comparison.measured({"a": fake_metrics(0.5, 0.02, concat=0.6, concat_std=0.03)}, comparison.MLRC)
    sep = table[table.column == "separated:map_at_r"].iloc[0]
    con = table[table.column == "concatenated:map_at_r"].iloc[0]
    assert (sep.value, sep["std"], con.value, con["std"]) == (50.0, 2.0, 60.0, 3.0)


def test_published_value_and_difference_only_on_the_papers_data_set():
    published = published_rows(
        [
            {"run": "a", "value": 40.0, "std": 1.5},
            {"run": "a", "value": 99.0, "dataset": "SOP"},
            {"run": "a", "value": 77.0, "protocol": "mlrc-concatenated-512D"},
        ]
    )
    table = comparison.measured({"a": fake_metrics(0.5)}, comparison.MLRC)
    on_cub = comparison.attach_published(table, published, "CUB", "mlrc").set_index("column")
    assert on_cub.loc["separated:map_at_r", ["paper_value", "paper_std", "difference"]].tolist() == [40.0, 1.5, 10.0]
    assert on_cub.loc["concatenated:map_at_r", "difference"] == 50.0 - 77.0
    assert np.isnan(on_cub.loc["separated:precision_at_1", "paper_value"])  # the paper gives no P@1 row here
    assert on_cub.loc["separated:map_at_r", "source"] == "CCP T"
    assert comparison.attach_published(table, published, None, "mlrc").paper_value.isna().all()


def test_render_marks_the_best_run_and_shows_paper_columns_when_there_are_any():
    table = comparison.measured({"a": fake_metrics(0.5), "b": fake_metrics(0.7)}, comparison.MLRC)
    plain = comparison.render(comparison.attach_published(table, published_rows([]), None, "mlrc"), comparison.MLRC, 1)
    assert "| b (`b`) | **70.0 ± 1.0** |" in plain and "| a (`a`) | 50.0 ± 1.0 |" in plain and "paper" not in plain
    published = published_rows([{"run": "a", "value": 45.0}])
    with_paper = comparison.render(comparison.attach_published(table, published, "CUB", "mlrc"), comparison.MLRC, 1)
    assert "| MAP@R (sep.) | MAP@R paper | Δ |" in with_paper.splitlines()[0]
    row_a = next(line for line in with_paper.splitlines() if line.startswith("| a (`a`) |"))
    assert "| 50.0 ± 1.0 | 45.0 | +5.0 |" in row_a and row_a.endswith("| CCP T |")
    latex = comparison.render(
        comparison.attach_published(table, published, None, "mlrc"), comparison.MLRC, 1, latex=True
    )
    assert r"\textbf{70.0 $\pm$ 1.0}" in latex and latex.startswith(r"\begin{tabular}{lrrrrrr}")


def test_latex_escapes_run_names():
    table = comparison.measured({"c2_ccp": fake_metrics(0.5)}, comparison.MLRC)
    latex = comparison.render(
        comparison.attach_published(table, published_rows([]), None, "mlrc"), comparison.MLRC, 1, latex=True
    )
    assert r"C2-CCP (c2\_ccp) &" in latex


def test_rank_agreement_matches_scipy():
    ours = {"a": fake_metrics(0.1), "b": fake_metrics(0.2), "c": fake_metrics(0.3), "d": fake_metrics(0.4)}
    theirs = {"a": 20.0, "b": 10.0, "c": 30.0, "d": 40.0}
    published = published_rows([{"run": r, "value": v} for r, v in theirs.items()] + [{"run": "zz", "value": 1.0}])
    table = comparison.measured(ours, [("separated:map_at_r", "MAP@R")])
    agreement = comparison.rank_agreement(table, published, "mlrc")
    assert len(agreement) == 1 and agreement.runs[0] == 4
    expected = spearmanr([0.1, 0.2, 0.3, 0.4], [20.0, 10.0, 30.0, 40.0]).statistic
    assert agreement.spearman_rho[0] == pytest.approx(expected) == pytest.approx(0.8)
    assert comparison.rank_agreement(table, published, "mlrc", min_runs=5).empty


def test_conventional_columns_match_conventional_protocols_only():
    published = published_rows(
        [
            {"run": "a", "metric": "recall_at_1", "protocol": "revisiting-conventional", "value": 60.0},
            {"run": "a", "metric": "recall_at_1", "protocol": "mlrc-separated-128D", "value": 1.0},
        ]
    )
    columns = comparison.conventional_columns([1])
    table = comparison.attach_published(
        comparison.measured({"a": fake_metrics(0.5)}, columns), published, "CUB", "conventional"
    )
    assert table.set_index("column").loc["separated:recall_at_1", "paper_value"] == 60.0


def test_orientation_lists_mlrc_map_at_r_and_the_first_r_at_1():
    published = published_rows(
        [
            {"run": "a", "value": 20.0},
            {"run": "a", "metric": "recall_at_1", "protocol": "conventional-x", "value": 60.0},
            {"run": "a", "metric": "recall_at_1", "protocol": "conventional-y", "value": 61.0},
            {"run": "b", "metric": "nmi", "protocol": "conventional-x", "value": 1.0},
        ]
    )
    wide = comparison.orientation(["a", "b"], published)
    assert list(wide.index) == ["a"]
    assert wide.loc["a", "CUB MAP@R (MLRC sep.)"] == 20.0 and wide.loc["a", "CUB R@1"] == 60.0


def test_project_reference_file_reads_and_has_known_values():
    from tests.conftest import ROOT

    table = read_published(ROOT / "reference" / "published.csv")
    pick = table[
        (table.paper == "CCP")
        & (table.table == "supplement MLRC tables")
        & (table.run == "c2_ccp")
        & (table.dataset == "SOP")
        & (table.protocol == "mlrc-separated-128D")
        & (table.metric == "map_at_r")
    ]
    assert pick.value.tolist() == [48.18]
    revisiting = table[
        (table.table == "supplement Table 5") & (table.run == "margin_d") & (table.metric == "recall_at_1")
    ]
    assert revisiting[["value", "std"]].values.tolist() == [[79.86, 0.33]]
    assert set(table.paper) == {"CCP", "PROFS", "ANML", "Revisiting"}


@pytest.mark.parametrize(
    "text,message",
    [
        ("paper,table\nCCP,T\n", "missing column(s) dataset"),
        (",".join(COLUMNS) + "\nCCP,T,CUB,mlrc,m,,map_at_r,abc,,\n", "row 1 (m, T): value 'abc' is not a number"),
    ],
)
def test_bad_reference_file_is_named(tmp_path, text, message):
    path = tmp_path / "published.csv"
    path.write_text(text)
    with pytest.raises(ReferenceError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_published(path)


def test_every_benchmark_maps_to_its_published_rows():
    """data.name of each real data set names a data set of reference/published.csv (the report attaches
    the papers' numbers through this mapping)."""
    from pipeline.datasets import datasets
    from pipeline.reporting.reference import paper_dataset
    from tests.conftest import ROOT

    published = read_published(ROOT / "reference" / "published.csv")
    benchmarks = [name for name, record in datasets().items() if record.paper_name]
    assert benchmarks == ["cub", "cars196", "sop", "inshop"]
    for name in benchmarks:
        assert (published.dataset == paper_dataset(name)).sum() > 50, name
    assert paper_dataset("digit_pairs") is None and paper_dataset("emoji") is None


def test_budget_table_and_patience_replay_by_hand():
    """A hand-made log: best epoch, stop epoch, a model cut by the epoch cap, and what shorter patience keeps."""
    from pipeline.reporting import budgets

    curve = [0.1, 0.5, 0.4, 0.4, 0.6, 0.6, 0.6, 0.6]  # best at epoch 4, then 3 stale epochs: stopped by patience 3
    rising = [0.1, 0.2, 0.3, 0.4]  # still improving at the cap
    tie = [0.1, 0.5, 0.4, 0.500001, 0.4, 0.4]  # epoch 3 beats epoch 1 by less than min_delta: epoch 1 is kept
    ccp = [0.1, 0.5, 0.4, 0.3, 0.7, 0.6, 0.6, 0.6]  # sub-problems 1 (epochs 1-3) and 2 (epochs 4-7)
    logs = pd.concat(
        [
            pd.DataFrame({"epoch": range(8), "val_map_at_r": curve, "run": "a", "model": "m0"}),
            pd.DataFrame({"epoch": range(4), "val_map_at_r": rising, "run": "a", "model": "m1"}),
            pd.DataFrame(
                {
                    "epoch": range(8),
                    "val_map_at_r": ccp,
                    "subproblem": [1, 1, 1, 1, 2, 2, 2, 2],
                    "run": "b",
                    "model": "m0",
                }
            ),
            pd.DataFrame({"epoch": range(6), "val_map_at_r": tie, "run": "c", "model": "m0"}),
        ],
        ignore_index=True,
    )
    models = budgets.per_model(logs, {"a": 3, "b": 3, "c": 4}, 1e-5)
    assert models[["best_epoch", "stop_epoch"]].values.tolist() == [[4, 7], [3, 3], [4, 7], [1, 5]]
    assert models.cut_while_improving.tolist() == [False, True, False, False]
    assert models.failed.tolist() == [False, False, False, True]  # c/m0 kept epoch 1
    models, logs = models[models.run != "c"], logs[logs.run != "c"]
    assert models.units.iloc[2] == 2 and models.unit.iloc[2] == "sub-problems" and pd.isna(models.units.iloc[0])
    # patience 1: model a/m0 stops after epoch 2 keeping 0.5 (0.1 lost); a/m1 keeps rising (nothing lost); CCP b/m0
    # is stale after epoch 2 but may stop only where sub-problem 1 ends (epoch 3): keeps 0.5, loses 0.2
    replay = budgets.replay_shorter_patience(logs, {"a": 3, "b": 3}, 1e-5, shorter=(1, 3))
    assert replay.patience.tolist() == [1] and replay.models_stopping_earlier.tolist() == [2]
    assert replay.mean_val_map_at_r_lost.iloc[0] == pytest.approx(100 * (0.1 + 0.0 + 0.2) / 3)
    assert replay.max_val_map_at_r_lost.iloc[0] == pytest.approx(20.0)
    text = budgets.budget_markdown(models, {"a": 3, "b": 3}, {"a": 3, "b": 10})
    assert "| a | 3 / 3 | 3.5 (3-4) | 5 (3-7) | - | **1 of 2** | - |" in text
    assert "| b | 3 / 10 | 4 (4-4) | 7 (7-7) | 2 (2-2) sub-problems | 0 of 1 | - |" in text


def test_the_failed_models_are_named_as_the_metrics_files_name_them():
    from pipeline.reporting import budgets

    models = pd.DataFrame({"run": ["a", "a", "b"], "model": ["fold-0-seed-0", "fold-3-seed-1", "fold-3-seed-1"]})
    models["failed"] = [False, True, True]
    assert budgets.failed_models(models) == {("a", "fold_3_seed_1"), ("b", "fold_3_seed_1")}


def test_publish_copies_byte_for_byte_and_replaces_whole_folders(tmp_path):
    from pipeline.reporting.publish import publish

    src, out = tmp_path / "data", tmp_path / "reports"
    (src / "logs" / "ms").mkdir(parents=True)
    (src / "logs" / "ms" / "fold-0.csv").write_bytes(b"epoch,val\r\n0,0.5\n")
    (src / "h.json").write_text('{"a": 1}\n')
    (out / "train_logs" / "old_run").mkdir(parents=True)  # a run no longer configured
    publish({"train_logs": [src / "logs" / "ms"], "headline.json": [src / "h.json"]}, out)
    assert (out / "train_logs" / "ms" / "fold-0.csv").read_bytes() == b"epoch,val\r\n0,0.5\n"
    assert not (out / "train_logs" / "old_run").exists() and (out / "headline.json").read_text() == '{"a": 1}\n'
    assert sorted(p.name for p in out.iterdir()) == ["headline.json", "train_logs"]  # no temporary folder left


def test_publish_checks_every_source_before_writing(tmp_path):
    from pipeline.reporting.publish import publish

    (tmp_path / "a.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=r"missing\.json: not found \(needed for reports/b\.json"):
        publish({"a.json": [tmp_path / "a.json"], "b.json": [tmp_path / "missing.json"]}, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_ablation_paragraphs_name_the_point_validation_chose(tiny_params):
    """The test MAP@R is highest at pool size 4, the validation MAP@R at pool size 2: the paragraph names pool size 2
    with both numbers, and its gain over random selection (b = #proxy = 1) is pool size 2's test minus b = 1's (the
    families' records write them: pipeline/families/ccp.py, profs.py)."""
    from pipeline.families.ccp import ABLATION as CCP
    from pipeline.families.profs import ABLATION as PROFS

    grid = pd.DataFrame(
        {
            "sweep": "proxies_pool",
            "proxies_per_class": [1, 1, 1],
            "pool_size": [1, 2, 4],
            "lambda": 2e-4,
            "best_val_map_at_r": [0.80, 0.86, 0.84],
            "test_map_at_r": [0.50, 0.53, 0.60],
        }
    )
    text = CCP.paragraphs(grid, tiny_params)[0]
    assert "the best point by validation MAP@R is #proxy = 1, b = 2 (validation 86.0%, test 53.0%)" in text
    assert "gains +3.0 points (#proxy = 1)" in text
    lam = pd.DataFrame(
        {
            "sweep": "lambda",
            "lambda": [0.0, 0.01],
            "m": 30,
            "best_val_map_at_r": [0.7, 0.6],
            "test_map_at_r": [0.3, 0.4],
        }
    )
    assert "best by validation MAP@R at λ = 0 (validation 70.0%, test 30.0%)" in PROFS.paragraphs(lam, tiny_params)[0]
