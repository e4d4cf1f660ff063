"""The claims table (pipeline/reporting/claims.py, its statistics pipeline/evaluation/paired.py) and the papers' run
names (pipeline/reporting/names.py)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pipeline.evaluation.paired import cluster_bootstrap, holm, verdict
from pipeline.families import Claim
from pipeline.params.root import params_from_dict
from pipeline.reporting.claims import (
    NOT_CONVERGED,
    RANGE_END,
    arm_differences,
    claim_differences,
    claims_markdown,
    claims_table,
    flagged_runs_note,
    paper_claims,
)
from pipeline.reporting.names import label, paper_name
from tests.conftest import merge, project_params
from tests.test_rules import study


def run_metrics(map_at_r: list[float], p1: list[float] | None = None) -> dict:
    """A metrics file with one model per value: models 2k and 2k + 1 are fold k's seeds 0 and 1."""
    p1 = p1 or map_at_r
    models = {
        f"fold_{i // 2}_seed_{i % 2}": {"map_at_r": m, "precision_at_1": p}
        for i, (m, p) in enumerate(zip(map_at_r, p1))
    }
    return {"separated": {"models": models}}


def test_the_t_interval_is_over_fold_means_by_hand():
    # differences (points) per model: fold 0: 1, 3; fold 1: 2, 2; fold 2: 4, 2; fold 3: 0, 2 -> fold means 2, 2, 3, 1
    base = [0.50, 0.50, 0.40, 0.40, 0.30, 0.30, 0.20, 0.20]
    better = [0.51, 0.53, 0.42, 0.42, 0.34, 0.32, 0.20, 0.22]
    row = claims_table([Claim("b beats a", "paper", "a", "b")], {"a": run_metrics(base), "b": run_metrics(better)}, {})
    row = row.iloc[0]
    means = np.array([2.0, 2.0, 3.0, 1.0])
    half = stats.t.ppf(0.975, 3) * means.std(ddof=1) / 2
    assert row.map_at_r_diff == pytest.approx(2.0) and (row.pairs, row.folds) == (8, 4)
    assert (row.map_at_r_t_low, row.map_at_r_t_high) == pytest.approx((2 - half, 2 + half))
    assert row.map_at_r_t_p == pytest.approx(stats.ttest_1samp(means, 0).pvalue)
    assert row.verdict == "reproduced" and np.isnan(row.map_at_r_boot_low)  # no per-class scores: t only


def test_pairs_are_matched_by_model_not_by_order():
    a = run_metrics([0.5, 0.6, 0.7, 0.8])
    b = {
        "separated": {"models": dict(reversed(list(run_metrics([0.6, 0.7, 0.8, 0.9])["separated"]["models"].items())))}
    }
    row = claims_table([Claim("c", "s", "a", "b")], {"a": a, "b": b}, {}).iloc[0]
    assert row.map_at_r_diff == pytest.approx(10.0)
    assert row.map_at_r_t_high - row.map_at_r_t_low == pytest.approx(0.0, abs=1e-9)


def fold_means_metrics(means: list[float], base: float = 0.5) -> dict:
    """Runs a and b whose difference b - a is `means[k]` points on both seeds of fold k."""
    a = run_metrics([base] * (2 * len(means)))
    b = run_metrics([base + m / 100 for m in means for _ in range(2)])
    return {"a": a, "b": b}


def test_a_verdict_needs_every_interval():
    assert verdict([(0.1, 2.0), (0.2, 1.0)]) == "reproduced" and verdict([(-2.0, -0.1)]) == "contradicted"
    assert (
        verdict([(0.1, 2.0), (-0.1, 1.0)]) == "inconclusive" and verdict([(-2.0, -0.1), (0.1, 1.0)]) == "inconclusive"
    )
    assert verdict([(float("nan"), float("nan"))]) == "inconclusive" and verdict([]) == "inconclusive"
    metrics = fold_means_metrics([-10.0, -9.0, -11.0])
    table = claims_table([Claim("b beats a", "s", "a", "b"), Claim("z beats a", "s", "a", "z")], metrics, {})
    assert table.verdict.tolist() == ["contradicted", "not run"]
    text = claims_markdown(table, 2)
    assert "**not run**" in text and "| -10.00 [" in text and "| 6 (3) |" in text


def test_holm_adjusts_by_hand():
    p = pd.Series([0.01, 0.04, np.nan, 0.03, 0.005])
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; running maximum 0.02, 0.03, 0.06, 0.06
    adjusted = holm(p)
    assert adjusted[[0, 1, 3, 4]].tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02]) and np.isnan(adjusted[2])


def test_holm_verdicts_keep_only_what_survives_the_family():
    """Five claims with fold means 1, 1, 1 + d, 1 - d: each reproduced alone (t-test p from 0.0001 to 0.047), but
    after Holm over the five only the first (p x 5 = 0.0007; the second's 0.016 x 4 = 0.065)."""
    metrics, claims = {"a": run_metrics([0.5] * 8)}, []
    for k, d in enumerate([0.1, 0.5, 0.6, 0.7, 0.75]):
        metrics[f"b{k}"] = fold_means_metrics([1.0, 1.0, 1.0 + d, 1.0 - d])["b"]
        claims.append(Claim(f"b{k} beats a", "s", "a", f"b{k}"))
    table = claims_table(claims, metrics, {})
    assert table.verdict.tolist() == ["reproduced"] * 5
    assert table.p_holm.tolist() == pytest.approx(holm(table.p).tolist())
    assert table.verdict_holm.tolist() == ["reproduced"] + ["inconclusive"] * 4


def test_failed_models_leave_a_claim_not_tested_unless_its_verdict_survives_without_them():
    """b's fold 3 models failed (they stayed at a's level). Claim 1 (b beats a) gains 2 points on folds 0-2 and
    none on the failed fold: inconclusive with it, reproduced without it, so not tested. Claim 3 (c beats b) gains
    on every fold; leaving out fold 3's pairs keeps its verdict, which stands with the models named."""
    a = run_metrics([0.5] * 8)
    b = run_metrics([0.52, 0.52, 0.522, 0.522, 0.518, 0.518, 0.5, 0.5])
    c = run_metrics([0.55, 0.56, 0.56, 0.55, 0.57, 0.56, 0.58, 0.57])
    failed = frozenset({("b", "fold_3_seed_0"), ("b", "fold_3_seed_1")})
    claims = [Claim("b beats a", "s", "a", "b"), Claim("c beats a", "s", "a", "c"), Claim("c beats b", "s", "b", "c")]
    table = claims_table(claims, {"a": a, "b": b, "c": c}, {}, failed=failed)
    assert table.verdict.tolist() == ["not tested", "reproduced", "reproduced"]
    flagged = "b:fold_3_seed_0 b:fold_3_seed_1"
    assert table.flagged_models.tolist() == [flagged, "", flagged]
    assert table.verdict_without_flagged.tolist() == ["reproduced", "", "reproduced"]
    assert np.isnan(table.p_holm.iloc[0]) and table.verdict_holm.iloc[0] == "not tested"  # not in the family
    text = claims_markdown(table, 2)
    assert (
        "| **not tested** | not tested | sign holds leaving any fold out; P@1 agrees "
        "| 2 failed: verdict without them reproduced |" in text
    )


def test_a_claim_with_more_than_one_model_of_an_arm_cut_by_a_cap_is_not_tested():
    metrics = fold_means_metrics([2.0, 2.2, 1.8])
    claim = [Claim("b beats a", "s", "a", "b")]
    assert claims_table(claim, metrics, {}, cut={"b": 1}).verdict.iloc[0] == "reproduced"  # one: the cap rule allows
    table = claims_table(claim, metrics, {}, cut={"a": 0, "b": 3})
    assert table.verdict.iloc[0] == "not tested" and table.capped_arms.iloc[0] == "b:3"
    assert "| b: 3 models cut by a cap |" in claims_markdown(table, 2)


def test_proof_of_concept_claim_pairs_by_seed():
    poc = {
        "ccp": {"seeds": {"seed_0": {"test_map_at_r": 0.90}, "seed_1": {"test_map_at_r": 0.92}}},
        "sample_ccp": {"seeds": {"seed_0": {"test_map_at_r": 0.95}, "seed_1": {"test_map_at_r": 0.95}}},
    }
    claim = next(c for c in paper_claims(params_with()) if c.where == "poc")
    row = claims_table([claim], {}, poc).iloc[0]
    assert row.map_at_r_diff == pytest.approx(4.0) and np.isnan(row.precision_at_1_diff)  # MAP@R only in 2-D
    assert (row.pairs, row.folds) == (2, 2)  # the seeds are its unit


def test_a_verdict_that_one_fold_carries_is_fragile():
    """Fold means +9, +0.5, +0.5, +0.4 points: reproduced by the t interval, but without fold 0 the mean stays
    positive, so the sign holds; fold means +6, -1, -1, -1.5 flip without fold 0 (mean -1.17)."""
    one_fold = fold_means_metrics([6.0, -1.0, -1.0, -1.5])
    table = claims_table([Claim("b beats a", "s", "a", "b")], one_fold, {})
    assert table.sign_flips_without.iloc[0] == "0"
    steady = fold_means_metrics([2.0, 2.2, 1.8, 2.1])
    table = claims_table([Claim("b beats a", "s", "a", "b")], steady, {})
    assert table.sign_flips_without.iloc[0] == "" and table.verdict.iloc[0] == "reproduced"
    assert not table.fragile.iloc[0] and not table.p1_disagrees.iloc[0]


def test_a_verdict_whose_p1_has_the_other_sign_is_fragile():
    base = [0.5] * 8
    better = [0.52, 0.52, 0.522, 0.522, 0.518, 0.518, 0.521, 0.521]  # +2 points MAP@R on every fold
    p1_better = [0.49] * 8  # P@1 -1 point
    metrics = {"a": run_metrics(base), "b": run_metrics(better, p1_better)}
    table = claims_table([Claim("b beats a", "s", "a", "b")], metrics, {})
    row = table.iloc[0]
    assert row.verdict == "reproduced" and row.p1_disagrees and row.fragile and row.sign_flips_without == ""
    text = claims_markdown(table, 2)
    assert "| **reproduced** (fragile) |" in text and "P@1 has the other sign (-1.00)" in text


def test_inconclusive_verdicts_are_never_marked_fragile():
    table = claims_table([Claim("b beats a", "s", "a", "b")], fold_means_metrics([6.0, -1.0, -1.0, -1.5]), {})
    assert table.verdict.iloc[0] == "inconclusive" and not table.fragile.iloc[0]


def test_the_proof_of_concept_is_under_the_cap_rule():
    def seeds(values, cut):
        return {
            "seeds": {
                f"seed_{i}": {"test_map_at_r": v, "cut_while_improving": c} for i, (v, c) in enumerate(zip(values, cut))
            }
        }

    claim = next(c for c in paper_claims(params_with()) if c.where == "poc")
    poc = {"ccp": seeds([0.90, 0.91, 0.92], [True, False, False]), "sample_ccp": seeds([0.95] * 3, [False] * 3)}
    assert claims_table([claim], {}, poc).verdict.iloc[0] == "reproduced"  # one seed cut: the rule allows it
    poc["sample_ccp"] = seeds([0.95] * 3, [True, True, False])
    table = claims_table([claim], {}, poc)
    assert table.verdict.iloc[0] == "not tested" and table.capped_arms.iloc[0] == "sample_ccp:2"


def test_arm_differences_name_each_setting_that_differs():
    npair = {"embedding_norm": "none", "loss": {"name": "npair", "embedding_reg": 0.005}, "loss_lr": 0.01}
    anml = {"embedding_norm": "l2", "loss": {"name": "anml_npair", "gamma": 2.0, "lambda": 0.1}, "loss_lr": 0.01}
    assert (
        arm_differences(npair, anml)
        == "embedding_norm: none → l2; loss: npair (embedding_reg 0.005) → anml_npair (gamma 2, lambda 0.1)"
    )
    margin = {"loss": {"name": "margin", "beta": 1.2}, "p_switch": 0.0}
    assert arm_differences(margin, {"loss": {"name": "margin", "beta": 0.6}, "p_switch": 0.3}) == (
        "loss.beta: 1.2 → 0.6; p_switch: 0 → 0.3"
    )


def test_claim_differences_show_the_settings_each_arm_trained_at():
    """A row names what the models were trained with (data/tuned/<run>.json's settings), a family's variant first."""
    proxy = {"c1": {"name": "c1", "neg_margin": 0.94}, "embedding_norm": "lipschitz", "pool_size": 8}
    ccp = {**proxy, "c1": {"name": "c1", "neg_margin": 0.98}, "pool_size": 9, "lambda": 6.7e-06}
    npair = {"loss": {"name": "npair", "embedding_reg": 0.0114}}
    anml = {"loss": {"name": "anml_npair", "gamma": 11.6, "lambda": 0.124}}
    claims = [
        Claim("CCP beats Loss-Proxy", "s", "c1_loss_proxy", "c1_ccp"),
        Claim("ANML-N-pair beats N-pair", "s", "npair", "anml_npair"),
        Claim("untrained pair", "s", "lifted", "anml_lifted"),
        Claim("2-D", "s", "loss_proxy", "ccp", where="poc"),
    ]
    settings = {"c1_loss_proxy": proxy, "c1_ccp": ccp, "npair": npair, "anml_npair": anml}
    assert claim_differences(claims, settings) == {
        ("c1_loss_proxy", "c1_ccp"): "variant: loss_proxy → ccp; c1.neg_margin: 0.94 → 0.98; pool_size: 8 → 9; "
        "lambda: - → 6.7e-06",
        ("npair", "anml_npair"): "loss: npair (embedding_reg 0.0114) → anml_npair (gamma 11.6, lambda 0.124)",
        ("loss_proxy", "ccp"): "variant: loss_proxy → ccp",
    }


def params_with(**sections):
    """The committed params.yaml, with `sections` merged in."""
    return params_from_dict(merge(project_params(), sections))


def test_paper_claims_cover_the_issue_list():
    """Declared by the families' records (CCP, PROFS) and report.claims (the baselines'); the MLRC runs' first."""
    claims = paper_claims(
        params_with(ccp={"losses": ["c1", "c2", "ms", "triplet"]}, profs={"losses": ["contrastive", "triplet", "ms"]})
    )
    assert claims[-1].where == "poc" and all(c.where == "runs" for c in claims[:-1])
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


def per_class_scores(values: dict[str, list[float]], queries: list[int]):
    """Per-class scores of one run: columns queries and <model>:map_at_r / :precision_at_1 (same values)."""
    frame = pd.DataFrame({"queries": queries}, index=pd.Index(range(len(queries)), name="class"))
    for model, v in values.items():
        frame[f"{model}:map_at_r"] = v
        frame[f"{model}:precision_at_1"] = v
    return frame


def test_bootstrap_of_a_constant_difference_is_that_difference():
    rng = np.random.default_rng(0)
    base = {m: rng.random(6).tolist() for m in ("fold_0_seed_0", "fold_1_seed_0", "fold_0_seed_1")}
    better = {m: [x + 0.03 for x in v] for m, v in base.items()}  # +3 points on every class of every model
    queries = [2, 5, 1, 3, 3, 9]
    low, high, p = cluster_bootstrap(
        per_class_scores(base, queries), per_class_scores(better, queries), sorted(base), "map_at_r", 500, seed=1
    )
    assert low == pytest.approx(3.0) and high == pytest.approx(3.0) and p == 0.0


def test_cluster_bootstrap_against_an_explicit_resampling_loop():
    """The vectorised statistic equals, replicate by replicate, the mean over resampled folds of each fold's mean
    over its model pairs of the query-weighted mean difference over resampled classes (the same draws, computed
    the long way), and its p-value the share of replicates on either side of 0."""
    rng = np.random.default_rng(3)
    models, queries = ["fold_0_seed_0", "fold_0_seed_1", "fold_1_seed_0", "fold_2_seed_0"], [1, 4, 2, 3, 5]
    base = {m: rng.random(5).tolist() for m in models}
    better = {m: (rng.random(5) - 0.3).tolist() for m in models}
    samples, seed = 400, 7
    low, high, p = cluster_bootstrap(
        per_class_scores(base, queries), per_class_scores(better, queries), models, "map_at_r", samples, seed
    )
    draw = np.random.default_rng(seed)
    u = draw.multinomial(3, np.full(3, 1 / 3), size=samples)
    w = draw.multinomial(5, np.full(5, 1 / 5), size=samples)
    by_fold = {0: models[:2], 1: models[2:3], 2: models[3:]}
    stats_ = []
    for r in range(samples):
        classes = np.repeat(np.arange(5), w[r])  # the resampled classes, each with its queries
        fold_means = []
        for f in np.repeat(np.arange(3), u[r]):
            pair_values = [
                100 * sum((better[m][c] - base[m][c]) * queries[c] for c in classes) / sum(queries[c] for c in classes)
                for m in by_fold[f]
            ]
            fold_means.append(np.mean(pair_values))
        stats_.append(np.mean(fold_means))
    stats_ = np.array(stats_)
    assert (low, high) == pytest.approx(tuple(np.percentile(stats_, [2.5, 97.5])), rel=1e-9)
    assert p == pytest.approx(min(1, 2 * min(np.mean(stats_ <= 0), np.mean(stats_ >= 0))))


def test_a_gain_on_one_test_class_is_not_reproduced():
    """Every fold gains 2 points on average (a tight t interval over fold means), but the gain sits on one test
    class of five: resampling the test classes shows that the evidence rests on that class, so the bootstrap
    interval holds 0 and the verdict, which needs both, is inconclusive."""
    models = [f"fold_{f}_seed_{s}" for f in range(4) for s in (0, 1)]
    base_values = {m: [0.5] * 5 for m in models}
    better_values = {m: [0.5, 0.5, 0.5, 0.5, 0.6 + 0.001 * i] for i, m in enumerate(models)}
    queries = [4] * 5

    def metric_file(values):
        return {
            "separated": {
                "models": {
                    m: {"map_at_r": float(np.average(v, weights=queries)), "precision_at_1": 0.5}
                    for m, v in values.items()
                }
            }
        }

    metrics = {"a": metric_file(base_values), "b": metric_file(better_values)}
    per_class = {"a": per_class_scores(base_values, queries), "b": per_class_scores(better_values, queries)}
    claim = [Claim("b beats a", "paper", "a", "b")]
    assert claims_table(claim, metrics, {}).iloc[0].verdict == "reproduced"  # t over fold means alone
    row = claims_table(claim, metrics, {}, per_class, samples=2000, seed=0).iloc[0]
    assert row.map_at_r_boot_low <= 0 < row.map_at_r_t_low and row.verdict == "inconclusive"
    assert row.map_at_r_diff == pytest.approx(100 * (0.1 + 0.0035) / 5)  # mean of (0.1 + 0.001 i) / 5, i = 0..7


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


def test_compared_runs_tuned_by_an_unconverged_study_are_named_with_the_study():
    metrics = {"a": run_metrics([0.5, 0.6]), "b": run_metrics([0.6, 0.7])}
    table = claims_table([Claim("b beats a", "s", "a", "b")], metrics, {})
    note = flagged_runs_note(table, {"b": ["a_study"], "z": ["z"]}, NOT_CONVERGED)
    assert note.startswith("\n**Runs tuned by a study that had not converged**")
    assert note.endswith("[tuning.md](tuning.md)): `b` (`a_study`).\n") and "`z`" not in note
    assert flagged_runs_note(table, {"z": ["z"]}, NOT_CONVERGED) == ""


def test_the_tuning_rule_replaces_verdicts_and_leaves_them_out_of_holm():
    """Two reproduced claims (each alone p < 0.05); b's arm is untuned, so its claim reads untuned, has no p, and
    Holm's family is c's claim alone (its adjusted p is its own)."""
    metrics = {
        "a": run_metrics([0.5] * 8),
        "b": fold_means_metrics([1.0, 1.0, 1.6, 0.4])["b"],
        "c": fold_means_metrics([1.0, 1.0, 1.5, 0.5])["b"],
    }
    claims = [Claim("b beats a", "s", "a", "b"), Claim("c beats a", "s", "a", "c")]
    records = {"a": study("a", 20, {"x": 5.0}), "b": study("b", 0, {}), "c": study("c", 20, {"x": 5.0, "y": 1.0})}
    table = claims_table(claims, metrics, {}, tuning=records)
    assert table.verdict.tolist() == ["untuned", "reproduced"] and np.isnan(table.p.iloc[0])
    assert table.p_holm.iloc[1] == pytest.approx(table.p.iloc[1]) and np.isnan(table.p_holm.iloc[0])
    assert table.verdict_holm.tolist() == ["untuned", "reproduced"]
    assert "| untuned: b: no study (trained at params.yaml's values) |" in claims_markdown(table, 2)
    assert claims_table(claims, metrics, {}).verdict.tolist() == ["reproduced", "reproduced"]  # the numbers say so


def test_the_proof_of_concept_is_a_holm_family_of_its_own():
    """A claim on the runs and the 2-D one, both tested: each is a family of one, so Holm leaves each p as it is
    (one family of two would double the smaller)."""
    poc = {
        "ccp": {"seeds": {f"seed_{s}": {"test_map_at_r": 0.90} for s in range(4)}},
        "sample_ccp": {"seeds": {f"seed_{s}": {"test_map_at_r": 0.95 + s / 1000} for s in range(4)}},
    }
    runs_claim = Claim("b beats a", "s", "a", "b")
    poc_claim = next(c for c in paper_claims(params_with()) if c.where == "poc")
    table = claims_table([runs_claim, poc_claim], fold_means_metrics([1.0, 1.1, 0.9, 1.0]), poc)
    assert table.verdict.tolist() == ["reproduced", "reproduced"]
    assert table.p_holm.tolist() == pytest.approx(table.p.tolist())
    records = {"a": study("a", 0, {}), "b": study("b", 0, {})}  # the tuning rule passes the 2-D claim by
    assert claims_table([runs_claim, poc_claim], fold_means_metrics([1.0, 1.1, 0.9, 1.0]), poc, tuning=records)[
        "verdict"
    ].tolist() == ["untuned", "reproduced"]
