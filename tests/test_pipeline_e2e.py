"""End to end: `dvc repro` on a tiny params override in a temporary git repository."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.orchestration import fanout
from pipeline.reporting.names import label
from pipeline.reporting.pages import figure_names, report_files
from tests.conftest import ONE_PROCESS, ROOT, TINY_OVERRIDES, copy_companion, merge, write_params_like_dvc
from tests.test_report_pages import dvc_outs

pytestmark = pytest.mark.slow
DVC = [sys.executable, "-m", "dvc"]


# a first-run machine may have no git identity (CI starts with an empty HOME): the commits below bring their own
GIT_IDENTITY = {
    f"GIT_{who}_{what}": value
    for who in ("AUTHOR", "COMMITTER")
    for what, value in (("NAME", "test"), ("EMAIL", "test@example.com"))
}


def _env() -> dict[str, str]:
    """This process's environment, with a git identity; dvc.yaml's commands call `python`: the interpreter running
    the tests comes first on PATH."""
    return {
        **GIT_IDENTITY,
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def sh(cmd, cwd, home: Path | None = None, fails: bool = False):
    """Run `cmd` (`fails`: expecting a non-zero exit); with `home`, as on a fresh machine: that (empty) HOME and
    caches, no git identity in the environment."""
    env = _env()
    if home is not None:
        env = {k: v for k, v in env.items() if not k.startswith("GIT_")}
        env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"))
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    assert (done.returncode != 0) == fails, f"{cmd} exit {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def stages_run(output: str) -> set[str]:
    return set(fanout.stages_run(output))


def tiny_project(repo: Path, overrides: dict | None = None) -> Path:
    """The project's code and conf/ at the tiny values (and `overrides`), each stage in one process (ONE_PROCESS),
    committed in a new git + DVC repository `repo`."""
    for name in ("pipeline", "stages", "reference", "conf", "hydra_plugins"):
        shutil.copytree(ROOT / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    # studies/README.md: the values stage's studies folder (a dep)
    for name in ("dvc.yaml", ".dvcignore", "studies/README.md"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, repo / name)
    copy_companion(repo)
    # the tiny config is the project's conf/ with the tiny values; params.yaml is composed from it, and every
    # `dvc exp run -S` below composes again (DVC's Hydra composition, as in the project)
    write_params_like_dvc(
        repo / "conf" / "config.yaml",
        merge(merge(TINY_OVERRIDES, ONE_PROCESS), overrides or {}),
        template=ROOT / "conf" / "config.yaml",
    )
    sh([sys.executable, "-m", "pipeline.compose"], repo)
    sh(["git", "init", "-q"], repo)
    sh(["git", "config", "user.email", "test@example.com"], repo)
    sh(["git", "config", "user.name", "test"], repo)
    sh(DVC + ["init", "-q"], repo)
    sh(DVC + ["config", "core.analytics", "false"], repo)
    sh(DVC + ["config", "hydra.enabled", "true"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", "tiny project"], repo)
    return repo


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return tiny_project(tmp_path_factory.mktemp("project"))


# what a new ccp.lambda reruns: code checks params.yaml whole on every change (and writes the same fingerprints);
# not Loss-Proxy, which has no lambda
LAMBDA_RERUNS = {
    "code",
    "values",
    "train@c2_ccp",
    "ablation@paper-ccp",
    "poc@paper",
    "evaluate",
    "pictures",
    "export",
    "report@paper",
}
RUNS = ("ms", "proxy_anchor", "c2_loss_proxy", "c2_ccp", "ms_plain", "ms_profs_hncm")


def test_repro_builds_every_output(repo):
    out = sh(DVC + ["repro"], repo)
    expected = {
        "code",
        "prepare",
        "embed",
        "values",
        "poc@paper",
        "report@paper",
        "lanml@paper-iris",
        "lanml_timing@paper",
        "evaluate",
        "pictures",
        "export",
        "train@ms",
        "train@proxy_anchor",
        "train@c2_loss_proxy",
        "train@c2_ccp",
        "train@ms_plain",
        "train@ms_profs_hncm",
        "ablation@paper-ccp",
        "ablation@paper-profs",
    }
    assert stages_run(out) == expected
    # the console: one bar per batch of jobs, no line per epoch, no faiss loader noise; the epochs in the stage's log
    assert " epoch 3 loss " not in out and "AVX512" not in out and "log: " in out
    log = (repo / "data" / "logs" / "train-ms.log").read_text()
    assert all(f"ms-{fold}: epoch 3 loss " in log for fold in (0, 1))  # workers log here too: test_numerics.py
    reports = repo / "reports"
    results = (reports / "results.md").read_text()
    assert "c2_ccp, fold 0, seed 0" in (reports / "ccp_subproblems.md").read_text()
    for method in RUNS:
        assert f"| {label(method)} | separated-8D |" in results and f"| {label(method)} | concatenated-16D |" in results
        for fold, seed in ((0, 0), (1, 0), (0, 1), (1, 1)):  # folds x seeds
            assert (reports / "train_logs" / method / f"fold-{fold}-seed-{seed}.csv").read_text().startswith("epoch,")
    assert "pixels (raw grey intensities" in results
    for name in figure_names():  # the report's page records (pipeline/reporting/pages) and the poc stage's figure
        assert (reports / "figures" / f"{name}.png").stat().st_size > 10_000, name
    assert all((reports / f).exists() for f in report_files())
    dvc = yaml.safe_load((repo / "dvc.yaml").read_text())
    declared = {repo / o for s in dvc["stages"].values() for o in dvc_outs(s) if o.startswith("reports/")}
    written = [p for p in reports.rglob("*") if p.is_file() and "emoji" not in p.parts]  # emoji: the companion's
    assert [p for p in written if not {p, *p.parents} & declared] == []  # no page writes what dvc.yaml misses
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
    for pair in (
        "C2-Loss-Proxy (`c2_loss_proxy`) → C2-CCP (`c2_ccp`)",
        "MS (plain) (`ms_plain`) → MS-PROFS (`ms_profs`)",
        "ccp → sample_ccp (2-D proof of concept; seeds are the unit)",
    ):
        assert pair in claims, pair
    assert "**not run**" in claims  # the tiny config trains no batch run, no ANML pair: listed, not dropped
    assert "cluster bootstrap over folds, then test classes" in claims and "| Holm |" in claims
    assert (reports / "figures" / "claims_forest.png").stat().st_size > 10_000
    budgets = (reports / "budgets.md").read_text()
    assert all(f"| {run} | 2 / 3 |" in budgets for run in RUNS)
    assert "No run was tuned (`tune.trials` is 0" in (reports / "tuning.md").read_text()
    assert "not tuned (`tune.trials` 0)" in claims  # the tiny config's patience / max epochs
    first = (reports / "results.md").read_text().split("| method | protocol |")[1].splitlines()[2]
    assert first.startswith("| Backbone features, no training (`backbone`) | features-") and " ± " not in first
    assert (reports / "per_class" / "c2_ccp.csv").read_text().startswith("class,queries,fold_0_seed_0:map_at_r,")
    assert all(f"figures/{name}.png" in index for name in figure_names())
    for method in RUNS:  # what each run retrieves and its map, published and linked from the index
        for kind in ("retrieval", "maps"):
            assert (reports / "pictures" / kind / f"{method}.png").stat().st_size > 3_000, (kind, method)
            assert f"(pictures/{kind}/{method}.png)" in index
    assert len((reports / "ablations" / "ccp.csv").read_text().splitlines()) == 1 + 4 + 2
    lanml = (reports / "lanml.md").read_text()
    assert (
        "## iris (150 samples, 4 features, 3 classes)" in lanml
        and "| LANML- (`lanml_minus`) |" in lanml
        and "| Euclidean (`euclidean`) |" in lanml
    )
    timing = (reports / "lanml_timing.md").read_text()
    assert "| iris (105 x 4) | LANML- |" in timing and "| iris (105 x 4) | LMNN-7 |" in timing
    shown = sh(DVC + ["metrics", "show", "--json"], repo)
    assert "map_at_r" in shown and "c2_ccp" in shown
    plots = json.loads(sh(DVC + ["plots", "show", "--json"], repo))["data"]
    assert {
        f"reports/figures/{name}.png" for name in ("claims_forest", "validation_curves", "ccp_proxies_pool")
    } <= set(plots)
    assert all(p[0]["type"] == "image" for p in plots.values())  # the figures a reader compares, side by side
    metrics = sh(DVC + ["metrics", "show", "--json"], repo)
    assert "headline_metrics.json" in metrics and "ccp_poc" not in metrics and "lanml" not in metrics
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-qm", "results"], repo)


def test_second_repro_is_a_no_op(repo):
    out = sh(DVC + ["repro"], repo)
    assert stages_run(out) == set()
    assert "up to date" in out.lower() or "didn't change" in out


def _snapshot(repo):
    reports = repo / "reports"
    rows = (reports / "results.csv").read_text().splitlines()
    return {
        "rows": {r.split(",")[0] + r.split(",")[1]: r for r in rows[1:]},
        "figures": {p.name: p.read_bytes() for p in (reports / "figures").glob("*.png")},
        "lanml": (reports / "lanml.md").read_text(),
    }


def test_ccp_lambda_changes_only_ccp_rows_and_figures(repo):
    before = _snapshot(repo)
    out = sh(DVC + ["exp", "run", "-S", "ccp.lambda=3e-2"], repo)
    ran = stages_run(out)
    # not Loss-Proxy: no lambda there; the values stage reads every run's section and rewrites the others' records
    # byte for byte
    assert ran == LAMBDA_RERUNS
    diff = sh(["git", "diff", "--unified=0", "params.yaml"], repo)
    changed = [
        line.split("#")[0].rstrip() for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert changed == ["-  lambda: study", "+  lambda: 0.03"]  # the one key, nothing else rewritten
    after = _snapshot(repo)
    changed_rows = {k for k in before["rows"] if before["rows"][k] != after["rows"][k]}
    assert changed_rows and all(k.startswith("c2_ccp") for k in changed_rows)  # loss_proxy has no lambda
    changed_figures = {k for k in before["figures"] if before["figures"][k] != after["figures"][k]}
    assert changed_figures and all(
        k.startswith(("ccp_", "spectrum", "validation_curves", "claims_forest")) for k in changed_figures
    ), changed_figures
    assert not {"profs_lambda.png", "profs_m.png"} & changed_figures
    assert before["lanml"] == after["lanml"]
    assert "lambda: 0.03" in (repo / "params.yaml").read_text()


def test_exp_run_reruns_only_the_changed_method(repo):
    """Every `-S` composes from conf/: the lambda of the experiment before is back at conf/'s value, so C2-CCP
    comes back from the run cache (not retrained) and only the uncached poc reruns beside train@ms."""
    out = sh(DVC + ["exp", "run", "-S", "baselines.ms.loss.alpha=3.0"], repo)
    ran = {"code", "values", "train@ms", "evaluate", "pictures", "export", "report@paper", "poc@paper"}
    assert stages_run(out) == ran
    assert "Stage 'train@c2_ccp' is cached" in out
    params = yaml.safe_load((repo / "params.yaml").read_text())
    assert params["baselines"]["ms"]["loss"]["alpha"] == 3.0 and params["ccp"]["lambda"] == "study"
    shown = sh(DVC + ["exp", "show", "--csv"], repo)
    assert "baselines.ms.loss.alpha" in shown and "map_at_r" in shown and "val_map_at_r" in shown
    view = sh([str(Path(sys.executable).parent / "dml"), "experiments"], repo).splitlines()  # the README's view
    assert view[0].split()[0] == "workspace", view
    rows = {line.split()[0] for line in view[1:] if line.strip()}
    assert {"baselines.ms.loss.alpha", "ccp.lambda", "ms", "c2_ccp"} <= rows, view
    assert max(map(len, view)) <= 100 and not any("data/" in line for line in view)


def test_a_searched_key_set_with_S_trains_its_runs_at_it_and_starts_no_study(tmp_path_factory):
    """Tuning is `dml tune`'s, never `dvc repro`'s: without a study the values stage stops with one line naming the
    runs and the command; with the studies made and committed, `-S ccp.lambda=0.03` (c2_ccp's searched key) runs no
    trial, trains c2_ccp at 0.03 with its study's other values, leaves every other run's values byte for byte, and
    the claim on it reads "user values"."""
    tuning = {"tune": {"trials": 2, "startup_trials": 1}, "profs": {"variants": ["plain"]}}  # HNCM: 2 classes a batch
    repo = tiny_project(tmp_path_factory.mktemp("tuned"), tuning)
    dml = [str(Path(sys.executable).parent / "dml")]
    err = sh(DVC + ["repro"], repo, fails=True)
    runs = "ms, c2_loss_proxy, c2_ccp, ms_plain"
    assert f"error: no finished study in studies/digit_pairs/ for {runs}: run `dml tune " in err, err
    tuned = sh(dml + ["tune"], repo)
    assert tuned.count("validation MAP@R") == 8, tuned  # 4 studies x 2 trials
    sh(DVC + ["repro"], repo)
    sh(["git", "add", "studies", "dvc.lock", "reports", "params.yaml"], repo)  # what a user commits
    sh(["git", "commit", "-qm", "studies"], repo)
    before = _tree(repo / "data" / "tuned")
    out = sh(DVC + ["exp", "run", "-S", "ccp.lambda=0.03"], repo)
    assert "validation MAP@R" not in out and "trials over" not in out
    assert stages_run(out) == LAMBDA_RERUNS
    after = _tree(repo / "data" / "tuned")
    assert {name for name in before if before[name] != after[name]} == {"c2_ccp.json"}
    trained = json.loads(after["c2_ccp.json"])
    record = json.loads((repo / "data" / "tuning" / "c2_ccp.json").read_text())
    assert trained["settings"]["lambda"] == 0.03 and "ccp.lambda" not in trained["values"]
    assert record["user_set"] == {"ccp.lambda": 0.03} and trained["values"] == {
        k: v for k, v in record["values"].items() if k != "ccp.lambda"
    }
    assert trained["values"]["ccp.c2.alpha"] == json.loads(before["c2_ccp.json"])["values"]["ccp.c2.alpha"]
    claims = (repo / "reports" / "claims.csv").read_text()
    assert "user values" in claims and "ccp.lambda = 0.03 set in params.yaml" in claims


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _fails(cmd, cwd):
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=_env())
    assert done.returncode != 0, f"{cmd} should have failed:\n{done.stdout}\n{done.stderr}"
    return done.stderr


def test_a_fan_out_over_two_local_jobs_assembles_the_plain_reports(repo, tmp_path_factory):
    """pipeline/orchestration/fanout.py with submitit's local executor, on a commit whose params changed since dvc.lock (as
    `dvc exp run -S baselines.ms.loss.alpha=3.0` changed the workspace above): one job for prepare / embed /
    tune, two sharing the train, ablation and LANML stages. The jobs restore from each other's runs instead of
    recomputing, the workspace that assembles trains nothing, and it ends with the plain `dvc exp run`'s bytes."""
    from pipeline.orchestration.fanout import FANNED, fan_out, fanned_stages, make_executor

    root = tmp_path_factory.mktemp("cluster")
    (root / "remote").mkdir()
    here = root / "here"
    sh(["git", "clone", "-q", str(repo), str(here)], root)
    sh(DVC + ["remote", "add", "--local", "-d", "shared", str(root / "remote")], here)
    shutil.copy(repo / "params.yaml", here / "params.yaml")  # alpha 3.0; dvc.lock still says 1.0 ...
    sh(["git", "commit", "-qam", "ms alpha 3"], here)  # ... so no stage can be pulled by its lock entry
    with pytest.MonkeyPatch.context() as patch:  # the jobs' dvc runs the stages' `python`
        patch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        executor = make_executor("local", root, timeout_min=60, cpus_per_task=1, gpus_per_node=0, partition="x")
        ran = fan_out(here, executor, 2, root / "jobs")
    assert set(ran["upstream"]) == {"code", "prepare", "embed", "values"}
    fanned = ran["job-0"] + ran["job-1"]
    assert sorted(fanned) == sorted(fanned_stages(here)) and ran["job-0"] and ran["job-1"]  # each once, split
    # here: only what is not fanned out (poc too when the params it reads changed: a persist output, never cached)
    assert (
        {"evaluate", "pictures", "export", "report@paper"}
        <= set(ran["here"])
        <= {
            "evaluate",
            "pictures",
            "export",
            "report@paper",
            "poc@paper",
        }
    ), ran["here"]
    assert not any(FANNED.match(s) for s in ran["here"])
    assert _tree(here / "reports") == _tree(repo / "reports")
    assert (here / "dvc.lock").read_text() == (repo / "dvc.lock").read_text()


def _queue_workers(repo: Path) -> list[int]:
    """The DVC queue worker processes of `repo` still alive (their pid files: .dvc/tmp/exps/celery)."""
    alive = []
    for pid_file in (repo / ".dvc" / "tmp" / "exps" / "celery").glob("dvc-exp-worker-*.pid"):
        cmdline = Path(f"/proc/{pid_file.read_text().strip()}/cmdline")
        if cmdline.is_file() and b"queue-worker" in cmdline.read_bytes():
            alive.append(int(pid_file.read_text()))
    return alive


def _stop_queue_workers(repo: Path) -> None:
    """`dvc queue stop`, then wait until no worker process is left, so that none holds the repository while the
    tests after this one run. A worker that outlives the wait is killed: DVC's temporary worker can hang after its
    monitor has shut it down (dvc-task; seen here under load, its experiment already collected)."""
    import signal
    import time

    subprocess.run(DVC + ["queue", "stop"], cwd=repo, env=_env(), capture_output=True)
    deadline = time.monotonic() + 120
    while _queue_workers(repo) and time.monotonic() < deadline:
        time.sleep(2)
    for pid in _queue_workers(repo):
        os.kill(pid, signal.SIGKILL)


def test_queued_experiments_run_two_at_a_time(repo):
    """`dvc exp run --queue` twice, `dvc queue start -j 2`: both succeed in DVC's temporary workspaces, which
    restore the unchanged stages from the shared cache rather than recompute them. Each experiment stops at the
    changed run's train stage (what follows it, evaluate to report, is the exp run tests' above)."""
    import time

    for alpha in ("2.5", "3.5"):
        queue = ["exp", "run", "--queue", "-n", f"alpha-{alpha}", "-S", f"baselines.ms.loss.alpha={alpha}", "train@ms"]
        sh(DVC + queue, repo)
    # the workers are daemons that inherit `queue start`'s output: a pipe there would wait for the last of them
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    assert subprocess.run(DVC + ["queue", "start", "-j", "2"], cwd=repo, env=_env(), **quiet).returncode == 0
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            status = sh(DVC + ["queue", "status"], repo)
            if "Queued" not in status and "Running" not in status:
                break
            time.sleep(3)
    finally:
        _stop_queue_workers(repo)
    assert status.count("Success") == 2, status
    for alpha in ("2.5", "3.5"):
        ran = stages_run(sh(DVC + ["queue", "logs", f"alpha-{alpha}"], repo))
        assert "train@ms" in ran and not {"prepare", "embed", "train@proxy_anchor", "ablation@paper-ccp"} & ran, ran
    shown = sh(DVC + ["exp", "show", "--csv"], repo)
    assert "alpha-2.5" in shown and "alpha-3.5" in shown and "val_map_at_r" in shown


def test_a_failed_stage_loses_nothing(repo):
    """A misspelled key after a successful run, and evaluate with a model missing: DVC removes the failing
    stage's outputs before its command runs, so they are cached ones (`dvc checkout` brings them back) and
    nothing under reports/ is touched."""
    reports, lock, params = _tree(repo / "reports"), (repo / "dvc.lock").read_text(), (repo / "params.yaml").read_text()
    at = params.index("      alpha:", params.index("\n  ms:", params.index("\nbaselines:")))  # baselines.ms.loss
    misspelled = params[:at] + "      alpah:" + params[at + len("      alpha:") :]
    (repo / "params.yaml").write_text(misspelled)
    err = _fails(DVC + ["repro", "-s", "values"], repo)  # the stage that reads every run's section
    assert "alpah" in err, err
    assert not (repo / "data" / "tuned").exists()  # what DVC removed ...
    (repo / "params.yaml").write_text(params)
    sh(DVC + ["checkout"], repo)  # ... comes back from the cache
    assert "up to date" in sh(DVC + ["status"], repo).lower()
    shutil.rmtree(repo / "data" / "models" / "ms")
    err = _fails(DVC + ["repro", "-s", "evaluate"], repo)
    assert "test embeddings not found (run the train stage of ms)" in err
    sh(DVC + ["checkout"], repo)
    assert "up to date" in sh(DVC + ["status"], repo).lower()
    assert _tree(repo / "reports") == reports and (repo / "dvc.lock").read_text() == lock
    # a failed experiment: params.yaml rewritten by -S, the stage's outputs removed; the printed command restores
    sh(["git", "stash", "-q"], repo)  # the workspace at its last commit (the experiments above left theirs applied)
    committed = _tree(repo / "reports"), (repo / "params.yaml").read_text(), (repo / "dvc.lock").read_text()
    err = _fails(DVC + ["exp", "run", "-S", "train.lr=-1", "train@ms"], repo)
    assert "train.lr" in err and (repo / "params.yaml").read_text() != committed[1], err
    restore = next(line.split(": ", 1)[1] for line in err.splitlines() if line.startswith("back to the last commit"))
    sh(["bash", "-c", restore], repo)
    restored = _tree(repo / "reports"), (repo / "params.yaml").read_text(), (repo / "dvc.lock").read_text()
    changed = sorted(
        name for name in restored[0].keys() | committed[0].keys() if restored[0].get(name) != committed[0].get(name)
    )
    assert restored == committed, (changed, restored[1] == committed[1], restored[2] == committed[2], err)
    assert "up to date" in sh(DVC + ["status"], repo).lower()
    sh(["git", "stash", "pop", "-q"], repo)  # the workspace as the tests before left it
    sh(DVC + ["checkout"], repo)
    assert "up to date" in sh(DVC + ["status"], repo).lower()


def test_a_killed_stages_temporary_folder_changes_nothing(repo):
    """What a SIGKILLed stage leaves (its atomic_path folder; its workers die with it: tests/test_parallel.py)
    is ignored by DVC's hashing (.dvcignore), so no stage reruns."""
    leftover = repo / "data" / "models" / ".ms.k1ll3d.tmp" / "ms" / "fold-0-seed-0"
    leftover.mkdir(parents=True)
    (leftover / "model.pt").write_bytes(b"half written")
    assert "up to date" in sh(DVC + ["status"], repo).lower()
    assert stages_run(sh(DVC + ["repro"], repo)) == set()
