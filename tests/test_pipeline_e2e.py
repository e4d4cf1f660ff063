"""End to end: `dvc repro` on a tiny params override in a temporary git repository."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, TINY_OVERRIDES, merge, project_params

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
    (repo / "params.yaml").write_text(yaml.safe_dump(merge(project_params(), TINY_OVERRIDES), sort_keys=False))
    sh(["git", "init", "-q"], repo)
    sh(["git", "config", "user.email", "test@example.com"], repo)
    sh(["git", "config", "user.name", "test"], repo)
    sh(DVC + ["init", "-q"], repo)
    sh(DVC + ["config", "core.analytics", "false"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", "tiny project"], repo)
    return repo


def test_repro_builds_every_output(repo):
    out = sh(DVC + ["repro"], repo)
    expected = {"prepare", "embed", "poc", "report", "lanml@iris", "evaluate@ms", "evaluate@proxy_anchor",
                "evaluate_ccp@c2-loss_proxy", "evaluate_ccp@c2-ccp", "evaluate_profs@ms-plain",
                "evaluate_profs@ms-profs_hncm"}
    expected |= {f"train_profs@ms-{v}-{f}" for v in ("plain", "profs_hncm") for f in (0, 1)}
    expected |= {f"train@{m}-{f}" for m in ("ms", "proxy_anchor") for f in (0, 1)}
    expected |= {f"train_ccp@c2-{v}-{f}" for v in ("loss_proxy", "ccp") for f in (0, 1)}
    assert stages_run(out) == expected
    results = (repo / "reports" / "results.md").read_text()
    assert (repo / "reports" / "figures" / "ccp_poc.png").stat().st_size > 10_000
    assert "c2_ccp, fold 0" in (repo / "reports" / "ccp_subproblems.md").read_text()
    for method in ("ms", "proxy_anchor", "c2_loss_proxy", "c2_ccp", "ms_plain", "ms_profs_hncm"):
        assert f"| {method} | separated-8D |" in results and f"| {method} | concatenated-16D |" in results
        assert (repo / "reports" / "train_logs" / method / "fold-1.csv").read_text().startswith("epoch,")
    assert "pixels (raw grey intensities" in results
    lanml = (repo / "reports" / "lanml.md").read_text()
    assert "## iris (150 samples, 4 features, 3 classes)" in lanml and "| lanml_minus |" in lanml
    shown = sh(DVC + ["metrics", "show", "--json"], repo)
    assert "map_at_r" in shown
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", "results"], repo)


def test_second_repro_is_a_no_op(repo):
    out = sh(DVC + ["repro"], repo)
    assert stages_run(out) == set()
    assert "up to date" in out.lower() or "didn't change" in out


def test_ccp_lambda_reruns_only_ccp_stages(repo):
    out = sh(DVC + ["exp", "run", "-S", "ccp.lambda=1e-10"], repo)
    ran = stages_run(out)
    assert {"train_ccp@c2-ccp-0", "train_ccp@c2-ccp-1"} <= ran  # report reruns only if the metrics moved
    assert not any(s.startswith(("train@", "evaluate@", "prepare", "embed")) for s in ran)
    assert "lambda: 1e-10" in (repo / "params.yaml").read_text()


def test_exp_run_reruns_only_the_changed_method(repo):
    out = sh(DVC + ["exp", "run", "-S", "baselines.ms.loss.alpha=3.0"], repo)
    assert stages_run(out) == {"train@ms-0", "train@ms-1", "evaluate@ms", "report"}
    params = yaml.safe_load((repo / "params.yaml").read_text())
    assert params["baselines"]["ms"]["loss"]["alpha"] == 3.0
    shown = sh(DVC + ["exp", "show", "--csv"], repo)
    assert "baselines.ms.loss.alpha" in shown
