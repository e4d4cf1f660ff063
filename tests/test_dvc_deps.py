"""Each stage's code as one dependency (pipeline/orchestration/dvc_deps.py): data/code/<stage module>.json hashes
every project file the stage's command can import, so an edit reruns what it affects and dvc.yaml lists no code."""

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from pipeline.orchestration.dvc_deps import (
    ROOT,
    closure,
    fingerprint_file,
    stage_module,
    stage_modules,
    write_fingerprints,
)


def test_every_stage_depends_on_its_code_file_and_lists_no_code():
    """The one code dep of each stage is its module's fingerprint (written by the code stage, which depends on
    the code folders); no stage lists a code file of its own, which could drift from what it imports."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert stages["code"]["deps"] == ["pipeline", "stages"] and stages["code"]["outs"] == ["data/code"]
    for name, stage in stages.items():
        if name == "code":
            continue
        deps = [d if isinstance(d, str) else next(iter(d)) for d in stage["deps"]]
        assert deps[0] == fingerprint_file(stage_module(name, " ".join(stage["cmd"].split()))), name
        assert not [d for d in deps if d.startswith(("pipeline/", "stages/"))], name


def test_dvc_lock_holds_only_the_stages_dvc_yaml_defines():
    """DVC keeps a removed stage's entry in dvc.lock forever: a renamed stage would leave its old record beside the
    new one. Each entry must be a stage of today's dvc.yaml (its matrix and foreach expanded)."""
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
        assert not any(p.as_posix().startswith("pipeline/linear") for p in closure(f"stages.{stage}")), stage


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
                deps: [data/code/run.json, data/in]
                outs: [out]
              code:
                cmd: python -m stages.code --out data/code
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


def test_a_registry_package_brings_every_module_beside_its_init_and_a_plain_package_does_not(tmp_path):
    """A registry: its __init__ calls import_modules(__name__) or makes a Registry(__name__, ...)."""
    _project(tmp_path)
    (tmp_path / "stages/reg.py").write_text("import pipeline.reg\nimport pipeline.records\nimport pipeline.plain\n")
    for package, init in [
        ("reg", "from pipeline.infra.registry import import_modules\n\nimport_modules(__name__)\n"),
        ("records", "from pipeline.infra.registry import Registry\n\n_R = Registry(__name__, 'thing', id)\n"),
        ("plain", "import importlib\n\nimportlib.import_module(__name__)\n"),
    ]:
        (tmp_path / f"pipeline/{package}").mkdir()
        (tmp_path / f"pipeline/{package}/__init__.py").write_text(init)
        (tmp_path / f"pipeline/{package}/one.py").write_text("")
        (tmp_path / f"pipeline/{package}/two.py").write_text("")
    got = {p.as_posix() for p in closure("stages.reg", tmp_path)}
    assert {"pipeline/reg/one.py", "pipeline/reg/two.py", "pipeline/records/one.py", "pipeline/records/two.py"} <= got
    assert not {"pipeline/plain/one.py", "pipeline/plain/two.py"} & got


def test_a_module_that_loads_templates_brings_them_and_no_other_module_does(tmp_path):
    """pipeline/reporting/render.py reads pipeline/reporting/templates: its `PackageLoader` names them, so a template
    is code of the stages that import render.py, not of every stage that imports the package."""
    _project(tmp_path)
    (tmp_path / "pipeline/sub/templates").mkdir()
    (tmp_path / "pipeline/sub/templates/page.md.j2").write_text("{{ x }}\n")
    assert "pipeline/sub/templates/page.md.j2" not in {p.as_posix() for p in closure("stages.run", tmp_path)}
    (tmp_path / "pipeline/sub/c.py").write_text('from ..b import x\nT = PackageLoader("pipeline.sub", "templates")\n')
    closure.cache_clear()
    assert "pipeline/sub/templates/page.md.j2" in {p.as_posix() for p in closure("stages.run", tmp_path)}
    (tmp_path / "pipeline/sub/c.py").write_text("T = PackageLoader(NAME, 'templates')\n")
    closure.cache_clear()
    with pytest.raises(ValueError, match="c.py: PackageLoader needs a project package and a folder"):
        closure("stages.run", tmp_path)


def test_a_stages_fingerprint_changes_with_a_file_it_imports_and_only_then(tmp_path):
    dvc_yaml = _project(tmp_path)
    assert stage_modules(dvc_yaml) == ["stages.run"]  # the code stage's own command is not a stage module

    def written():
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        write_fingerprints(out, tmp_path)
        return (out / "run.json").read_text()

    first = written()
    assert json.loads(first) == {
        p.as_posix(): hashlib.sha256((tmp_path / p).read_bytes()).hexdigest()
        for p in sorted(closure("stages.run", tmp_path))
    }
    (tmp_path / "pipeline/never.py").write_text("x = 1\n")  # not imported by the stage
    assert written() == first
    (tmp_path / "pipeline/sub/c.py").write_text("from ..b import x  # edited\n")
    assert written() != first


def test_the_command_writes_one_file_per_stage_module(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "stages.code", "--out", str(tmp_path / "code")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    modules = stage_modules(ROOT / "dvc.yaml")
    assert sorted(p.name for p in (tmp_path / "code").iterdir()) == sorted(f"{m.split('.')[-1]}.json" for m in modules)
    assert f"the code of {len(modules)} stage modules" in done.stdout
    train = json.loads((tmp_path / "code" / "train.json").read_text())
    assert "pipeline/training/loop.py" in train and "pipeline/linear/lanml.py" not in train


REGISTRIES = ("pipeline/losses/", "pipeline/miners/", "pipeline/families/", "pipeline/datasets/", "pipeline/methods/")


@pytest.mark.parametrize(
    "module,registries",
    [
        ("stages.prepare", {"pipeline/datasets/"}),  # it prepares the data set data.name names
        ("stages.embed", {"pipeline/datasets/"}),  # the data section's keys come from the data sets' records
        ("stages.lanml", set()),
        ("stages.lanml_timing", set()),
    ],
)
def test_a_stage_that_reads_no_loss_imports_no_loss(module, registries):
    """Loading params imports only the sections a stage reads (pipeline/config/loader.py params_type), so adding a
    loss, a miner or a family reruns none of these stages."""
    code = {p.as_posix() for p in closure(module)}
    assert {r for r in REGISTRIES if any(f.startswith(r) for f in code)} == registries


def test_each_stage_loads_the_sections_its_dvc_params_name():
    """A stage's params root holds at least the top-level sections of its dvc.yaml params (a stage reading a key
    that DVC does not track would not rerun when it changes); a partial root holds exactly those."""
    import importlib

    from pipeline.params.root import Params

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        module = importlib.import_module(stage_module(name, " ".join(stage["cmd"].split())))
        root = getattr(module, "PARAMS", Params)
        loaded = {s.name for s in root.sections}
        keys = [k if isinstance(k, str) else next(iter(k)) for k in stage.get("params", [])]
        tracked = {k.split(".")[0] for k in keys if k != "params.yaml" and "${" not in k.split(".")[0]}
        assert tracked <= loaded, name
        if root is not Params:
            assert tracked == loaded, name


def test_a_stage_without_a_module_command_is_a_one_line_error(tmp_path):
    (tmp_path / "dvc.yaml").write_text("stages:\n  x:\n    cmd: echo hi\n    deps: [pipeline/a.py]\n")
    with pytest.raises(ValueError, match="dvc.yaml: stage x: no `-m stages.<name>` in its cmd"):
        stage_modules(tmp_path / "dvc.yaml")
