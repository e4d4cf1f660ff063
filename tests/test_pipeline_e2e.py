"""End to end: `dvc repro` on a tiny params override in a temporary git repository."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.reporting.names import label
from tests.conftest import ROOT, TINY_OVERRIDES, write_params_like_dvc

pytestmark = pytest.mark.slow
DVC = [sys.executable, "-m", "dvc"]


def sh(cmd, cwd):
    # dvc.yaml's commands call `python`: the interpreter running the tests must come first on PATH
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def stages_run(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("project")
    for name in ("pipeline", "stages", "reference"):
        shutil.copytree(ROOT / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "dvc.yaml", repo)
    write_params_like_dvc(repo / "params.yaml", TINY_OVERRIDES)
    sh(["git", "init", "-q"], repo)
    sh(["git", "config", "user.email", "test@example.com"], repo)
    sh(["git", "config", "user.name", "test"], repo)
    sh(DVC + ["init", "-q"], repo)
    sh(DVC + ["config", "core.analytics", "false"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", "tiny project"], repo)
    return repo


RUNS = ("ms", "proxy_anchor", "c2_loss_proxy", "c2_ccp", "ms_plain", "ms_profs_hncm")
FIGURES = ("tuning_history", "validation_curves", "ccp_proxies_pool", "ccp_lambda", "profs_lambda", "profs_m", "ccp_loss_proxy_vs_ccp",
           "ccp_steps_per_projection", "ccp_subproblems", "spectrum", "ccp_poc")


def test_repro_builds_every_output(repo):
    out = sh(DVC + ["repro"], repo)
    expected = {"prepare", "embed", "tune", "poc", "report", "lanml@iris", "lanml_timing", "evaluate", "train@ms",
                "train@proxy_anchor",
                "train_ccp_base@c2-loss_proxy",
                "train_ccp@c2-ccp", "train_profs@ms-plain", "train_profs@ms-profs_hncm", "ablation@ccp",
                "ablation@profs"}
    assert stages_run(out) == expected
    reports = repo / "reports"
    results = (reports / "results.md").read_text()
    assert "c2_ccp, fold 0, seed 0" in (reports / "ccp_subproblems.md").read_text()
    for method in RUNS:
        assert f"| {label(method)} | separated-8D |" in results and f"| {label(method)} | concatenated-16D |" in results
        for fold, seed in ((0, 0), (1, 0), (0, 1), (1, 1)):  # folds x seeds trained in two worker processes
            assert (reports / "train_logs" / method / f"fold-{fold}-seed-{seed}.csv").read_text().startswith("epoch,")
    assert "pixels (raw grey intensities" in results
    for name in FIGURES:
        assert (reports / "figures" / f"{name}.png").stat().st_size > 10_000, name
    for protocol in ("mlrc", "conventional"):
        for suffix in (".md", ".csv", ".tex"):
            text = (reports / "tables" / f"{protocol}_digit_pairs{suffix}").read_text()
            assert all(run.replace("_", r"\_" if suffix == ".tex" else "_") in text for run in RUNS), (protocol, suffix)
    assert "no paper reports this data set" in (reports / "tables" / "mlrc_digit_pairs.md").read_text()
    index = (reports / "README.md").read_text()
    assert "params hash" in index and "**#proxy x pool size (CCP Fig. 5)**" in index
    assert index.index("claims.md") < index.index("## What was run") and "MKL_CBWR=COMPATIBLE" in index
    claims = (reports / "claims.md").read_text()
    assert "C2-CCP (`c2_ccp`)" in claims and "4 paired models" in claims
    for pair in ("C2-Loss-Proxy (`c2_loss_proxy`) → C2-CCP (`c2_ccp`)", "MS (plain) (`ms_plain`) → MS-PROFS (`ms_profs`)",
                 "ccp → sample_ccp (2-D proof of concept)"):
        assert pair in claims, pair
    assert "**not run**" in claims  # the tiny config trains no batch run, no ANML pair: listed, not dropped
    assert "bootstrap over test classes and models" in claims
    budgets = (reports / "budgets.md").read_text()
    assert all(f"| {run} | 2 / 3 |" in budgets for run in RUNS)
    assert "No run was tuned (`tune.trials` is 0" in (reports / "tuning.md").read_text()
    assert "as written in params.yaml (`tune.trials` 0" in claims  # the tiny config's patience / max epochs
    assert (reports / "per_class" / "c2_ccp.csv").read_text().startswith("class,queries,fold_0_seed_0:map_at_r,")
    assert all(f"figures/{name}.png" in index for name in FIGURES)
    assert len((reports / "ablations" / "ccp.csv").read_text().splitlines()) == 1 + 4 + 2
    lanml = (reports / "lanml.md").read_text()
    assert "## iris (150 samples, 4 features, 3 classes)" in lanml and "| lanml_minus |" in lanml
    timing = (reports / "lanml_timing.md").read_text()
    assert "| iris (105 x 4) | LANML- |" in timing and "| iris (105 x 4) | LMNN-7 |" in timing
    shown = sh(DVC + ["metrics", "show", "--json"], repo)
    assert "map_at_r" in shown and "c2_ccp" in shown
    plots = sh(DVC + ["plots", "show", "--json"], repo)
    assert "reports/train_logs/ms/fold-0-seed-0.csv" in plots
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", "results"], repo)


def test_second_repro_is_a_no_op(repo):
    out = sh(DVC + ["repro"], repo)
    assert stages_run(out) == set()
    assert "up to date" in out.lower() or "didn't change" in out


def _snapshot(repo):
    reports = repo / "reports"
    rows = (reports / "results.csv").read_text().splitlines()
    return {"rows": {r.split(",")[0] + r.split(",")[1]: r for r in rows[1:]},
            "figures": {p.name: p.read_bytes() for p in (reports / "figures").glob("*.png")},
            "lanml": (reports / "lanml.md").read_text()}


def test_ccp_lambda_changes_only_ccp_rows_and_figures(repo):
    before = _snapshot(repo)
    out = sh(DVC + ["exp", "run", "-S", "ccp.lambda=3e-2"], repo)
    ran = stages_run(out)
    # not Loss-Proxy: no lambda there; tune reads every run's section, and at 0 trials rewrites the same records
    assert ran == {"tune", "train_ccp@c2-ccp", "ablation@ccp", "poc", "evaluate", "report"}
    diff = sh(["git", "diff", "--unified=0", "params.yaml"], repo)
    changed = [line.split("#")[0].rstrip() for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == ["-  lambda: 2e-4", "+  lambda: 0.03"]  # the one key, nothing else rewritten
    after = _snapshot(repo)
    changed_rows = {k for k in before["rows"] if before["rows"][k] != after["rows"][k]}
    assert changed_rows and all(k.startswith("c2_ccp") for k in changed_rows)  # loss_proxy has no lambda
    changed_figures = {k for k in before["figures"] if before["figures"][k] != after["figures"][k]}
    assert changed_figures and all(k.startswith(("ccp_", "spectrum", "validation_curves")) for k in changed_figures), \
        changed_figures
    assert not {"profs_lambda.png", "profs_m.png"} & changed_figures
    assert before["lanml"] == after["lanml"]
    assert "lambda: 0.03" in (repo / "params.yaml").read_text()


def test_exp_run_reruns_only_the_changed_method(repo):
    out = sh(DVC + ["exp", "run", "-S", "baselines.ms.loss.alpha=3.0"], repo)
    assert stages_run(out) == {"tune", "train@ms", "evaluate", "report"}
    params = yaml.safe_load((repo / "params.yaml").read_text())
    assert params["baselines"]["ms"]["loss"]["alpha"] == 3.0
    shown = sh(DVC + ["exp", "show", "--csv"], repo)
    assert "baselines.ms.loss.alpha" in shown and "map_at_r" in shown and "val_map_at_r" in shown
