"""pipeline/infra/git_index.py: a params.yaml that git's index shows unchanged although its content changed."""

import os
import subprocess
import sys

import pytest

from pipeline.infra.git_index import is_stale, refresh_if_stale
from tests.conftest import ROOT


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    _git("init", "-q", cwd=tmp_path)
    _git("config", "user.email", "t@example.com", cwd=tmp_path)
    _git("config", "user.name", "t", cwd=tmp_path)
    _git("config", "core.trustctime", "false", cwd=tmp_path)  # the test rewrites within git's stat resolution
    (tmp_path / "params.yaml").write_text("lambda: 2e-4\n")
    past = (tmp_path / "params.yaml").stat().st_mtime_ns - 10**10  # older than the index: git trusts its stat
    os.utime(tmp_path / "params.yaml", ns=(past, past))
    _git("add", "params.yaml", cwd=tmp_path)
    _git("commit", "-qm", "params", cwd=tmp_path)
    return tmp_path


def _rewrite_keeping_stat(path, text):
    before = path.stat()
    assert len(text.encode()) == before.st_size  # a value of the same length, as in the reported case
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_same_length_rewrite_git_cannot_see_is_stale(repo):
    params = repo / "params.yaml"
    assert not is_stale(params)
    _rewrite_keeping_stat(params, "lambda: 3e-4\n")
    diff = subprocess.run(["git", "diff", "--quiet", "--", "params.yaml"], cwd=repo).returncode
    assert diff == 0  # git shows nothing ...
    assert is_stale(params)  # ... and the check says so
    assert refresh_if_stale(params)  # what every stage does first: touch it ...
    assert subprocess.run(["git", "diff", "--quiet", "--", "params.yaml"], cwd=repo).returncode == 1  # ... git sees it
    assert not is_stale(params) and params.read_text() == "lambda: 3e-4\n"


def test_an_ordinary_edit_or_no_git_is_not_stale(repo, tmp_path_factory):
    (repo / "params.yaml").write_text("lambda: 3e-4   \n")
    assert not is_stale(repo / "params.yaml")  # git sees this change itself
    outside = tmp_path_factory.mktemp("plain") / "params.yaml"
    outside.write_text("lambda: 2e-4\n")
    assert not is_stale(outside)


def test_a_stage_warns_about_a_stale_params_file(repo):
    _rewrite_keeping_stat(repo / "params.yaml", "lambda: 3e-4\n")
    done = subprocess.run(
        [sys.executable, "-m", "stages.prepare", "--params", str(repo / "params.yaml"), "--out", str(repo / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert "params.yaml: changed since git last looked" in done.stderr
    assert subprocess.run(["git", "diff", "--quiet", "--", "params.yaml"], cwd=repo).returncode == 1
