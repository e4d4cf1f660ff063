"""dvc.yaml's code deps equal each stage's import closure (pipeline/orchestration/dvc_deps.py), so an edit reruns what it affects."""

import textwrap
from pathlib import Path

import pytest

from pipeline.orchestration import dvc_deps
from pipeline.orchestration.dvc_deps import ROOT, closure, differences, expand, main, wanted_deps, write


def test_every_stage_depends_on_exactly_the_code_its_command_imports():
    found = differences(ROOT / "dvc.yaml")
    assert not found, "run `python -m pipeline.orchestration.dvc_deps --write`: " + ", ".join(found)


def test_dvc_lock_holds_only_the_stages_dvc_yaml_defines():
    """DVC keeps a removed stage's entry in dvc.lock forever: a renamed stage would leave its old record beside the
    new one (issue 63). Each entry must be a stage of today's dvc.yaml (its matrix and foreach expanded)."""
    import yaml
    from dvc.repo import Repo

    live = {stage.addressing for stage in Repo(str(ROOT)).index.stages}
    locked = set(yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"])
    assert not locked - live, f"stale dvc.lock entries: {sorted(locked - live)}"


def test_only_the_stages_that_run_a_solver_or_model_depend_on_it():
    """Loading params (pipeline/config, which every stage does) imports no LANML solver and no training code, so an
    edit to them reruns only the stages that run them."""
    config = {p.as_posix() for p in closure("pipeline.config")}
    assert not any(p.startswith(("pipeline/linear/", "pipeline/methods/", "pipeline/training")) for p in config)
    for stage in ("prepare", "embed", "evaluate", "export", "pictures", "report"):
        assert not any(d.startswith("pipeline/linear") for d in wanted_deps(f"stages.{stage}")), stage


def _project(root: Path) -> Path:
    """A tiny project: a stage importing at module level, in a function, relatively and through a package."""
    files = {
        "stages/__init__.py": "",
        "stages/run.py": "import pipeline.a\n\ndef main():\n    from pipeline.sub import c\n",
        "pipeline/__init__.py": "",
        "pipeline/a.py": "from . import b\nimport numpy\n",
        "pipeline/b.py": "",
        "pipeline/never.py": "",
        "pipeline/sub/__init__.py": "",
        "pipeline/sub/c.py": "from ..b import x\n",
        "dvc.yaml": textwrap.dedent(
            """\
            stages:
              run:
                cmd: python -m stages.run --out out  # the command
                deps:
                  - data/in       # data: kept as written
                  - pipeline/a.py
                  - pipeline/never.py
                outs:
                  - out
            """
        ),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "dvc.yaml"


def test_the_closure_follows_function_level_relative_and_package_imports_and_nothing_else(tmp_path):
    _project(tmp_path)
    got = {p.as_posix() for p in closure("stages.run", tmp_path)}
    assert got == {
        "stages/__init__.py",
        "stages/run.py",
        "pipeline/__init__.py",
        "pipeline/a.py",
        "pipeline/b.py",
        "pipeline/sub/__init__.py",
        "pipeline/sub/c.py",
    }
    # a folder stands for its files only when every one of them is imported
    assert wanted_deps("stages.run", tmp_path) == [
        "pipeline/__init__.py",
        "pipeline/a.py",
        "pipeline/b.py",
        "pipeline/sub",
        "stages",
    ]
    assert expand(["pipeline/sub", "stages/run.py"], tmp_path) == {
        Path("pipeline/sub/__init__.py"),
        Path("pipeline/sub/c.py"),
        Path("stages/run.py"),
    }


def test_a_registry_package_brings_every_module_beside_its_init_and_a_plain_package_does_not(tmp_path):
    _project(tmp_path)
    (tmp_path / "stages/reg.py").write_text("import pipeline.reg\nimport pipeline.plain\n")
    for package, init in [
        ("reg", "from pipeline.infra.registry import import_modules\n\nimport_modules(__name__)\n"),
        ("plain", "import importlib\n\nimportlib.import_module(__name__)\n"),
    ]:
        (tmp_path / f"pipeline/{package}").mkdir()
        (tmp_path / f"pipeline/{package}/__init__.py").write_text(init)
        (tmp_path / f"pipeline/{package}/one.py").write_text("")
        (tmp_path / f"pipeline/{package}/two.py").write_text("")
    got = {p.as_posix() for p in closure("stages.reg", tmp_path)}
    assert {"pipeline/reg/one.py", "pipeline/reg/two.py"} <= got
    assert not {"pipeline/plain/one.py", "pipeline/plain/two.py"} & got


def test_write_replaces_only_the_code_deps_and_keeps_the_comments(tmp_path):
    dvc_yaml = _project(tmp_path)
    assert set(differences(dvc_yaml)) == {"run"}
    assert write(dvc_yaml) == ["run"]
    text = dvc_yaml.read_text()
    assert "# the command" in text and "- data/in       # data: kept as written" in text
    assert "pipeline/never.py" not in text and "      - pipeline/sub\n" in text
    assert differences(dvc_yaml) == {} and write(dvc_yaml) == []


def test_the_command_names_each_file_that_drifted_and_fails(tmp_path, capsys):
    dvc_yaml = _project(tmp_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dvc_deps, "ROOT", tmp_path)
        assert main(["--dvc-yaml", str(dvc_yaml)]) == 1
    out = capsys.readouterr().out
    assert "run: 6 imported file(s) missing from deps, 1 listed but never imported" in out
    assert "  + pipeline/sub/c.py" in out and "  - pipeline/never.py" in out


def test_a_stage_without_a_module_command_is_a_one_line_error(tmp_path):
    (tmp_path / "dvc.yaml").write_text("stages:\n  x:\n    cmd: echo hi\n    deps: [pipeline/a.py]\n")
    with pytest.raises(ValueError, match="dvc.yaml: stage x: no `-m stages.<name>` in its cmd"):
        differences(tmp_path / "dvc.yaml")
