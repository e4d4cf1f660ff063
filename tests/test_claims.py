"""The claims table (pipeline/reporting/claims.py) and the papers' run names (pipeline/reporting/names.py)."""

import numpy as np
import pytest
from scipy import stats

from pipeline.reporting.claims import (
    RANGE_END,
    STILL_IMPROVING,
    Claim,
    claims_markdown,
    claims_table,
    flagged_runs_note,
    paper_claims,
    verdict,
)
from pipeline.reporting.names import label, paper_name


def run_metrics(map_at_r: list[float], p1: list[float] | None = None) -> dict:
    """A metrics file with one model per value: fold k, seed 0 / 1 alternating."""
    p1 = p1 or map_at_r
    models = {
        f"fold_{i // 2}_seed_{i % 2}": {"map_at_r": m, "precision_at_1": p}
        for i, (m, p) in enumerate(zip(map_at_r, p1))
    }
    return {"separated": {"models": models}}


def test_paired_difference_interval_and_verdict_by_hand():
    # differences 0.01, 0.02, 0.03, 0.02 (in fractions) -> 1, 2, 3, 2 points: mean 2, s = sqrt(2/3)
    metrics = {"a": run_metrics([0.50, 0.40, 0.30, 0.20]), "b": run_metrics([0.51, 0.42, 0.33, 0.22])}
    row = claims_table([Claim("b beats a", "paper", "a", "b")], metrics, {}).iloc[0]
    half = stats.t.ppf(0.975, 3) * np.sqrt(2 / 3) / 2
    assert row.map_at_r_diff == pytest.approx(2.0)
    assert (row.map_at_r_low, row.map_at_r_high) == pytest.approx((2 - half, 2 + half))
    assert row.pairs == 4 and row.verdict == "reproduced"


def test_pairs_are_matched_by_model_not_by_order():
    a = run_metrics([0.5, 0.6, 0.7, 0.8])
    b = {
        "separated": {"models": dict(reversed(list(run_metrics([0.6, 0.7, 0.8, 0.9])["separated"]["models"].items())))}
    }
    row = claims_table([Claim("c", "s", "a", "b")], {"a": a, "b": b}, {}).iloc[0]
    assert row.map_at_r_diff == pytest.approx(10.0) and row.map_at_r_high - row.map_at_r_low == pytest.approx(
        0.0, abs=1e-9
    )


def test_verdicts_and_not_run():
    assert verdict(0.1, 2.0) == "reproduced" and verdict(-2.0, -0.1) == "contradicted"
    assert verdict(-0.1, 0.1) == "inconclusive" and verdict(float("nan"), float("nan")) == "inconclusive"
    metrics = {"a": run_metrics([0.5, 0.6]), "b": run_metrics([0.4, 0.5])}
    table = claims_table([Claim("b beats a", "s", "a", "b"), Claim("z beats a", "s", "a", "z")], metrics, {})
    assert table.verdict.tolist() == ["contradicted", "not run"]
    text = claims_markdown(table, 2)
    assert "**not run**" in text and "-10.00 [-10.00, -10.00]" in text


def test_a_claim_on_a_run_that_did_not_train_gets_no_verdict():
    """The difference is still shown, but a run whose models kept their untrained start decides nothing."""
    metrics = {"a": run_metrics([0.5, 0.6]), "b": run_metrics([0.6, 0.7]), "c": run_metrics([0.7, 0.8])}
    claims = [Claim("b beats a", "s", "a", "b"), Claim("c beats b", "s", "b", "c"), Claim("z beats a", "s", "a", "z")]
    table = claims_table(claims, metrics, {}, untrained=frozenset({"a"}))
    assert table.verdict.tolist() == ["not trained", "reproduced", "not run"]
    assert table.map_at_r_diff.iloc[0] == pytest.approx(10.0)


def test_proof_of_concept_claim_pairs_by_seed():
    poc = {
        "ccp": {"seeds": {"seed_0": {"test_map_at_r": 0.90}, "seed_1": {"test_map_at_r": 0.92}}},
        "sample_ccp": {"seeds": {"seed_0": {"test_map_at_r": 0.95}, "seed_1": {"test_map_at_r": 0.95}}},
    }
    claim = next(c for c in paper_claims([], []) if c.where == "poc")
    row = claims_table([claim], {}, poc).iloc[0]
    assert row.map_at_r_diff == pytest.approx(4.0) and np.isnan(row.precision_at_1_diff)  # MAP@R only in 2-D


def test_paper_claims_cover_the_issue_list():
    claims = paper_claims(["c1", "c2", "ms", "triplet"], ["contrastive", "triplet", "ms"])
    pairs = {(c.base, c.better) for c in claims}
    for loss in ("c1", "c2", "ms", "triplet"):
        assert {(f"{loss}_loss_proxy", f"{loss}_ccp"), (f"{loss}_batch", f"{loss}_loss_proxy")} <= pairs
    for loss in ("contrastive", "triplet", "ms"):
        assert {(f"{loss}_plain", f"{loss}_profs"), (f"{loss}_profs", f"{loss}_profs_hncm")} <= pairs
    assert {
        ("lifted", "anml_lifted"),
        ("npair", "anml_npair"),
        ("ms", "danml"),
        ("margin_d", "r_margin_d"),
        ("ccp", "sample_ccp"),
    } <= pairs


def test_paper_names():
    assert [
        paper_name(r)
        for r in ("c2_ccp", "c2_loss_proxy", "proxy_anchor", "margin_d", "ms_profs_hncm", "triplet_batch", "my_run")
    ] == ["C2-CCP", "C2-Loss-Proxy", "ProxyAnchor", "Margin (D)", "MS-PROFS-HNCM", "Triplet (batch)", "my_run"]
    assert label("c2_ccp") == "C2-CCP (`c2_ccp`)" and label("c2_ccp", latex=True) == r"C2-CCP (c2\_ccp)"


def per_class_scores(values: dict[str, list[float]], queries: list[int], metric_values=None):
    """Per-class scores of one run: columns queries and <model>:map_at_r / :precision_at_1 (same values)."""
    import pandas as pd

    frame = pd.DataFrame({"queries": queries}, index=pd.Index(range(len(queries)), name="class"))
    for model, v in values.items():
        frame[f"{model}:map_at_r"] = v
        frame[f"{model}:precision_at_1"] = v
    return frame


def test_bootstrap_of_a_constant_difference_is_that_difference():
    from pipeline.reporting.claims import class_bootstrap

    rng = np.random.default_rng(0)
    base = {m: rng.random(6).tolist() for m in ("fold_0_seed_0", "fold_1_seed_0", "fold_0_seed_1")}
    better = {m: [x + 0.03 for x in v] for m, v in base.items()}  # +3 points on every class of every model
    low, high = class_bootstrap(
        per_class_scores(base, [2, 5, 1, 3, 3, 9]),
        per_class_scores(better, [2, 5, 1, 3, 3, 9]),
        sorted(base),
        "map_at_r",
        500,
        seed=1,
    )
    assert low == pytest.approx(3.0) and high == pytest.approx(3.0)


def test_bootstrap_formula_against_an_explicit_resampling_loop():
    """The vectorised statistic equals, replicate by replicate, the mean over resampled model pairs of the
    query-weighted mean difference over resampled classes (the same draws, computed the long way)."""
    from pipeline.reporting.claims import class_bootstrap

    rng = np.random.default_rng(3)
    models, queries = ["fold_0_seed_0", "fold_1_seed_0", "fold_2_seed_0"], [1, 4, 2, 3, 5]
    base = {m: rng.random(5).tolist() for m in models}
    better = {m: rng.random(5).tolist() for m in models}
    samples, seed = 400, 7
    low, high = class_bootstrap(
        per_class_scores(base, queries), per_class_scores(better, queries), models, "map_at_r", samples, seed
    )
    draw = np.random.default_rng(seed)
    w = draw.multinomial(5, np.full(5, 1 / 5), size=samples)
    v = draw.multinomial(3, np.full(3, 1 / 3), size=samples)
    stats_ = []
    for b in range(samples):
        classes = np.repeat(np.arange(5), w[b])  # the resampled classes, each with its queries
        pairs = np.repeat(np.arange(3), v[b])
        per_pair = []
        for p in pairs:
            m = models[p]
            diff = sum((better[m][c] - base[m][c]) * queries[c] for c in classes)
            per_pair.append(100 * diff / sum(queries[c] for c in classes))
        stats_.append(np.mean(per_pair))
    assert (low, high) == pytest.approx(tuple(np.percentile(stats_, [2.5, 97.5])), rel=1e-9)


def test_verdict_takes_the_wider_interval():
    """Every model gains 2 points on average (a tight t interval), but the gain sits on one class of five:
    resampling the test classes shows that the evidence rests on that class, and the verdict follows it."""
    models = [f"fold_{f}_seed_{s}" for f in range(4) for s in (0, 1)]
    base_values = {m: [0.5] * 5 for m in models}
    better_values = {m: [0.5, 0.5, 0.5, 0.5, 0.6 + 0.001 * i] for i, m in enumerate(models)}
    queries = [4] * 5
    metrics = {
        "a": {"separated": {"models": {m: {"map_at_r": 0.5, "precision_at_1": 0.5} for m in models}}},
        "b": {
            "separated": {
                "models": {
                    m: {
                        "map_at_r": float(np.average(better_values[m], weights=queries)),
                        "precision_at_1": float(np.average(better_values[m], weights=queries)),
                    }
                    for m in models
                }
            }
        },
    }
    per_class = {"a": per_class_scores(base_values, queries), "b": per_class_scores(better_values, queries)}
    claim = [Claim("b beats a", "paper", "a", "b")]
    t_only = claims_table(claim, metrics, {}).iloc[0]
    assert t_only.verdict == "reproduced" and t_only.map_at_r_interval == "t"
    row = claims_table(claim, metrics, {}, per_class, samples=2000, seed=0).iloc[0]
    assert row.map_at_r_interval == "bootstrap" and row.map_at_r_boot_low <= 0 < row.map_at_r_t_low
    assert row.verdict == "inconclusive" and (row.map_at_r_low, row.map_at_r_high) == (
        row.map_at_r_boot_low,
        row.map_at_r_boot_high,
    )
    assert row.map_at_r_diff == pytest.approx(100 * (0.1 + 0.0035) / 5)  # mean of (0.1 + 0.001 i) / 5, i = 0..7
    text = claims_markdown(claims_table(claim, metrics, {}, per_class, 2000, 0), 2)
    assert "| +2.07 [+2.03, +2.11] | **+2.07 [" in text  # the t interval, then the bootstrap's in bold


def test_compared_runs_tuned_at_a_range_end_are_named_under_the_table():
    metrics = {"a": run_metrics([0.5, 0.6]), "b": run_metrics([0.6, 0.7]), "c": run_metrics([0.7, 0.8])}
    table = claims_table([Claim("b beats a", "s", "a", "b"), Claim("c beats b", "s", "b", "c")], metrics, {})
    at_ends = {"c": ["ccp.lambda", "ccp.pool_size"], "z": ["ccp.lambda"]}  # z: tuned but in no claim
    note = flagged_runs_note(table, at_ends, RANGE_END)
    assert note.endswith("[tuning.md](tuning.md)): `c` (`ccp.lambda`, `ccp.pool_size`).\n") and "`z`" not in note
    assert (
        flagged_runs_note(table, {"z": ["ccp.lambda"]}, RANGE_END) == ""
        and flagged_runs_note(table, {}, RANGE_END) == ""
    )


def test_compared_runs_tuned_by_a_study_still_improving_are_named_with_the_study():
    metrics = {"a": run_metrics([0.5, 0.6]), "b": run_metrics([0.6, 0.7])}
    table = claims_table([Claim("b beats a", "s", "a", "b")], metrics, {})
    note = flagged_runs_note(table, {"b": ["a_study"], "z": ["z"]}, STILL_IMPROVING)
    assert note.startswith("\n**Runs tuned by a study still improving at its last trials**")
    assert note.endswith("[tuning.md](tuning.md)): `b` (`a_study`).\n") and "`z`" not in note
    assert flagged_runs_note(table, {"z": ["z"]}, STILL_IMPROVING) == ""
