"""The claims table (pipeline/reporting/claims.py) and the papers' run names (pipeline/reporting/names.py)."""

import numpy as np
import pytest
from scipy import stats

from pipeline.reporting.claims import Claim, claims_markdown, claims_table, paper_claims, verdict
from pipeline.reporting.names import label, paper_name


def run_metrics(map_at_r: list[float], p1: list[float] | None = None) -> dict:
    """A metrics file with one model per value: fold k, seed 0 / 1 alternating."""
    p1 = p1 or map_at_r
    models = {f"fold_{i // 2}_seed_{i % 2}": {"map_at_r": m, "precision_at_1": p} for i, (m, p) in enumerate(zip(map_at_r, p1))}
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
    b = {"separated": {"models": dict(reversed(list(run_metrics([0.6, 0.7, 0.8, 0.9])["separated"]["models"].items())))}}
    row = claims_table([Claim("c", "s", "a", "b")], {"a": a, "b": b}, {}).iloc[0]
    assert row.map_at_r_diff == pytest.approx(10.0) and row.map_at_r_high - row.map_at_r_low == pytest.approx(0.0, abs=1e-9)


def test_verdicts_and_not_run():
    assert verdict(0.1, 2.0) == "reproduced" and verdict(-2.0, -0.1) == "contradicted"
    assert verdict(-0.1, 0.1) == "inconclusive" and verdict(float("nan"), float("nan")) == "inconclusive"
    metrics = {"a": run_metrics([0.5, 0.6]), "b": run_metrics([0.4, 0.5])}
    table = claims_table([Claim("b beats a", "s", "a", "b"), Claim("z beats a", "s", "a", "z")], metrics, {})
    assert table.verdict.tolist() == ["contradicted", "not run"]
    text = claims_markdown(table, 2)
    assert "**not run**" in text and "-10.00 [-10.00, -10.00]" in text


def test_proof_of_concept_claim_pairs_by_seed():
    poc = {"ccp": {"seeds": {"seed_0": {"test_map_at_r": 0.90}, "seed_1": {"test_map_at_r": 0.92}}},
           "sample_ccp": {"seeds": {"seed_0": {"test_map_at_r": 0.95}, "seed_1": {"test_map_at_r": 0.95}}}}
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
    assert {("lifted", "anml_lifted"), ("npair", "anml_npair"), ("ms", "danml"), ("margin_d", "r_margin_d"),
            ("ccp", "sample_ccp")} <= pairs


def test_paper_names():
    assert [paper_name(r) for r in ("c2_ccp", "c2_loss_proxy", "proxy_anchor", "margin_d", "ms_profs_hncm",
                                    "triplet_batch", "my_run")] == [
        "C2-CCP", "C2-Loss-Proxy", "ProxyAnchor", "Margin (D)", "MS-PROFS-HNCM", "Triplet (batch)", "my_run"]
    assert label("c2_ccp") == "C2-CCP (`c2_ccp`)" and label("c2_ccp", latex=True) == r"C2-CCP (c2\_ccp)"
