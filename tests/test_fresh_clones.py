"""End to end on fresh clones of the tiny project (tests/test_pipeline_e2e.py) that nothing has run in yet: the run
cache shared between two machines, and a user's own image folder on a fresh machine. Their own module, so that
`pytest -n 2` runs them beside the trained project's tests instead of after them."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipeline.cli import misses_first
from pipeline.orchestration import fanout
from tests.conftest import ROOT, write_params_like_dvc
from tests.test_pipeline_e2e import DVC, RUNS, _tree, sh, stages_run, tiny_project

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return tiny_project(tmp_path_factory.mktemp("project"))


def _clone(repo, folder, remote):
    sh(["git", "clone", "-q", str(repo), str(folder)], folder.parent)
    sh(DVC + ["remote", "add", "--local", "-d", "shared", str(remote)], folder)
    write_params_like_dvc(
        folder / "params.yaml", {"baselines": {"ms": {"loss": {"alpha": 3.3}}}}, template=folder / "params.yaml"
    )


def test_the_run_cache_travels_through_a_remote(repo, tmp_path_factory):
    """Two clones at the same commit and the same new value: A trains train@ms and pushes its run cache; B pulls
    it and restores train@ms (and the stages before it) without training, and trains only proxy_anchor."""
    root = tmp_path_factory.mktemp("machines")
    remote = root / "remote"
    remote.mkdir()
    a, b = root / "a", root / "b"
    for clone in (a, b):
        _clone(repo, clone, remote)
    ran_a = stages_run(sh(DVC + ["repro", "train@ms"], a))
    assert ran_a == {"code", "prepare", "embed", "values", "train@ms"}
    sh(DVC + ["push", "--run-cache"], a)
    out = sh(DVC + ["repro", "--pull", "train@ms", "train@proxy_anchor"], b)  # pulls the run cache first
    # embed, values, train@ms: restored from A's runs; prepare reruns (a persisted output has no run cache) and
    # writes the same data set, so nothing after it retrains
    assert stages_run(out) == {"prepare", "train@proxy_anchor"}
    assert "Stage 'train@ms' is cached - skipping run" in out
    for name in ("data/models/ms", "data/train_logs/ms"):
        assert _tree(a / name) == _tree(b / name)


def test_your_own_image_folder_trains_exports_and_the_command_line_searches_it(repo, tmp_path_factory):
    """On a fresh machine (an empty HOME, no git identity), docs/your-data.md's commands in order, twice: a folder of
    class folders made here, planned with `--dry -f`, trained with `dvc exp run -S dataset=folder -S data.source=...
    -S scope=methods` (the runs, evaluate, pictures, export and nothing of the paper's), every run's best
    model exported (data/export/<run>.pt2); then `dml embed` and `dml search` on new images of the same classes from
    the command line, with nothing of the project's config: the model file alone."""
    from tests.test_folder import make_folder

    root = tmp_path_factory.mktemp("own")
    home = root / "home"
    home.mkdir()
    images = make_folder(root / "images", classes=8, per_class=6)
    new = make_folder(root / "new", classes=8, per_class=2, seed=1)
    here = root / "project"
    sh(["git", "clone", "-q", str(repo), str(here)], root)
    docs = (ROOT / "docs" / "your-data.md").read_text()
    identity = [line.split("#")[0].strip() for line in docs.splitlines() if line.startswith("git config user.")]
    assert len(identity) == 2  # the documented lines that give a fresh clone a git identity
    for line in identity:
        sh(["bash", "-c", line], here, home)
    # scope=methods: the runs, evaluate, pictures and export, none of the paper's own stages (poc, lanml, ...)
    options = [
        "-S",
        "dataset=folder",
        "-S",
        f"data.source={images}",
        "-S",
        "backbone.name=pixels",
        "-S",
        "scope=methods",
    ]
    ours = {"code", "prepare", "embed", "values", "evaluate", "pictures", "export"}
    planned = stages_run(sh(DVC + ["exp", "run", "--dry", "-f", *options], here, home))  # before any output exists
    assert planned == ours | {s for s in fanout.fanned_stages(here) if s.startswith("train")}, planned
    assert not any("@paper" in s for s in planned)
    for attempt in range(2):  # the second run stashes the first one's results: without an identity git refuses
        ran = stages_run(sh(DVC + ["exp", "run", *options], here, home))
        assert ran == (planned if attempt == 0 else set()), ran
    # after the first run, what a changed value reruns (docs/your-data.md): params.yaml composed as `dvc exp run -S`
    # composes it, then `dvc status` (DVC's `exp run --dry` works in a copy without the outputs: it fails there)
    values = ["dataset=folder", "data.source=/path/to/images", "scope=methods", "ccp.lambda=1e-3"]
    assert f"python -m pipeline.compose {' '.join(values)}" in docs
    values[1] = f"data.source={images}"
    sh([sys.executable, "-m", "pipeline.compose", *values, "backbone.name=pixels"], here, home)
    status = sh(DVC + ["status"], here, home)
    assert [line for line in status.splitlines() if line.endswith(":") and not line[0].isspace()] == [
        "code:",
        "values:",
    ], status
    # good -> bad -> good: a folder with an empty class stops before prepare's last output is touched
    broken = make_folder(root / "broken", classes=8, per_class=6)
    for f in (broken / "class_03").rglob("*.png"):
        f.unlink()
    prepared, log = _tree(here / "data" / "prepared"), (here / "data" / "logs" / "prepare.log").read_text()
    bad = [*options[:2], "-S", f"data.source={broken}", *options[4:]]
    out = sh(DVC + ["exp", "run", *bad], here, home, fails=True)
    assert f"error: class 'class_03': 0 images in {broken / 'class_03'}" in out, out
    assert _tree(here / "data" / "prepared") == prepared
    assert (here / "data" / "logs" / "prepare.log").read_text() == log
    hint = next(line for line in out.splitlines() if line.startswith("back to your last experiment "))
    apply = hint.split(": ", 1)[1].split()  # dvc exp apply <the last good experiment>
    assert apply[:3] == ["dvc", "exp", "apply"]
    sh(DVC + apply[1:], here, home)
    assert f"source: {images}" in (here / "params.yaml").read_text()
    assert stages_run(sh(DVC + ["exp", "run", *options], here, home)) == set()
    exported = sorted(p.name for p in (here / "data" / "export").iterdir())
    assert exported == sorted(f"{run}.pt2" for run in RUNS)
    assert sorted(json.loads((here / "reports" / "headline_metrics.json").read_text())) == sorted([*RUNS, "backbone"])
    dml = Path(sys.executable).parent / "dml"
    view = sh([str(dml), "experiments"], here, home).splitlines()  # the experiments' metrics without the report
    assert {"ms", "c2_ccp"} <= {line.split()[0] for line in view[1:] if line.strip()}, view
    out = sh([str(dml), "embed", str(here / "data/export/ms.pt2"), str(new), "--out", str(root / "new.npz")], root)
    assert "new.npz: 16 embeddings of 128 dimensions (ms, fold-" in out  # conf/dataset/folder.yaml: 128-D
    out = sh(
        [
            str(dml),
            "search",
            str(here / "data/export/ms.pt2"),
            "--gallery",
            str(images),
            "--queries",
            str(root / "new.npz"),
            "-k",
            "3",
            "--out",
            str(root / "search.csv"),
            "--picture",
            str(root / "search.png"),
        ],
        root,
    )
    table = pd.read_csv(root / "search.csv")
    assert len(table) == 16 * 3 and table["rank"].tolist()[:3] == [1, 2, 3]
    first = table[table["rank"] == 1]
    assert first.same_folder.mean() >= 0.75, first  # new images of a class find their class
    assert f"{int(first.same_folder.sum())} of 16 first matches in a folder of the query's name" in out
    assert (root / "search.png").stat().st_size > 10_000
    misses = int((~first.same_folder).sum())
    assert f"{root / 'search.png'}: 8 queries, {misses_first(min(misses, 8))}; " in out
    missing = subprocess.run(
        [str(dml), "embed", str(here / "nothing.pt2"), str(new), "--out", "x.npz"],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert missing.returncode == 2 and missing.stderr.strip().endswith(
        "nothing.pt2: no exported model (the export stage writes data/export/<run>.pt2)"
    )
    # the narrowed run of docs/your-data.md, twice: one run trained (ms, already trained: restored, not retrained)
    narrowed = ["-S", "experiment.methods=[ms]", "-S", "ccp.losses=[]", "-S", "profs.losses=[]"]
    assert "-S 'experiment.methods=[ms]' -S 'ccp.losses=[]' -S 'profs.losses=[]'" in docs
    for attempt in range(2):
        ran = stages_run(sh(DVC + ["exp", "run", *options, *narrowed], here, home))
        assert ran == ({"code", "values", "evaluate", "pictures", "export"} if attempt == 0 else set()), ran
    assert sorted(p.name for p in (here / "data" / "export").iterdir()) == ["ms.pt2"]
    assert "train@ms" in sh(DVC + ["dag"], here, home)
