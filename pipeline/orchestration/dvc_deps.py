"""dvc.yaml's code deps from the import closure of each stage's command, so they cannot drift from the code.

A stage's command runs `-m stages.<name>`; its code deps are every project module that command can import,
at module or function level, transitively, with the `__init__.py` of each package on the way (Python runs
them); a registry package, whose `__init__.py` imports each module beside it at run time
(`import_modules(__name__)`, pipeline/infra/registry.py: pipeline/losses, families, methods), brings all of
them. A folder stands for its .py files when all of them are in the closure. `python -m pipeline.orchestration.dvc_deps`
prints the stages whose deps differ; `--write` rewrites those lists in dvc.yaml (comments kept);
tests/test_dvc_deps.py fails while any differs.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "stages")  # the project's code; everything else is an installed package
COMMAND = re.compile(r"-m\s+(stages\.\w+)")


def module_file(name: str, root: Path = ROOT) -> Path | None:
    """`pipeline.a.b` -> pipeline/a/b.py or pipeline/a/b/__init__.py under `root`, if it is the project's."""
    if name.split(".")[0] not in PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imported_names(path: Path, package: str) -> set[str]:
    """Every module name `path` imports anywhere (functions included), with the names `from x import y` may mean."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x, from ..a import b
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(filter(None, [*parts, base]))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # a submodule, if it is one
    return names


def _discovers_modules(init: Path) -> bool:
    """Whether a package's `__init__.py` imports the modules beside it (a registry: it calls
    `import_modules(__name__)`, pipeline/infra/registry.py)."""
    for node in ast.walk(ast.parse(init.read_text(), filename=str(init))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "import_modules":
            return any(isinstance(arg, ast.Name) and arg.id == "__name__" for arg in node.args)
    return False


@cache
def closure(module: str, root: Path = ROOT) -> frozenset[Path]:
    """The project files (relative to `root`) that running `python -m <module>` can import."""
    seen: set[Path] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__.py and a/b/__init__.py first
            path = module_file(".".join(parts[:i]), root)
            if path is None or path in seen:
                continue
            seen.add(path)
            package = ".".join(parts[:i]) if path.name == "__init__.py" else ".".join(parts[: i - 1])
            todo.extend(_imported_names(path, package))
            if path.name == "__init__.py" and _discovers_modules(path):
                todo.extend(f"{package}.{p.stem}" for p in path.parent.glob("*.py") if p.name != "__init__.py")
    return frozenset(p.relative_to(root) for p in seen)


def code_files(root: Path = ROOT) -> set[Path]:
    """Every .py file of the project's packages, relative to `root`."""
    return {p.relative_to(root) for package in PACKAGES for p in (root / package).rglob("*.py")}


def wanted_deps(module: str, root: Path = ROOT) -> list[str]:
    """The stage's code deps: its closure, a folder where every .py file under it is included."""
    files = closure(module, root)
    everything = code_files(root)
    folders = {parent for p in files for parent in p.parents if parent != Path(".")}
    whole = {d for d in folders if all(f in files for f in everything if d in f.parents)}
    top = {d for d in whole if not any(parent in whole for parent in d.parents)}
    loose = {f for f in files if not any(d in f.parents for d in top)}
    return sorted(p.as_posix() for p in top | loose)


def expand(deps: list[str], root: Path = ROOT) -> set[Path]:
    """The .py files a list of code deps covers (a folder: every .py file under it)."""
    files: set[Path] = set()
    for dep in deps:
        path = root / dep
        files.update(p.relative_to(root) for p in path.rglob("*.py")) if path.is_dir() else files.add(Path(dep))
    return files


def is_code(dep: str) -> bool:
    return dep.split("/")[0] in PACKAGES


def stage_module(stage: str, cmd: str) -> str:
    found = COMMAND.search(cmd)
    if found is None:
        raise ValueError(f"dvc.yaml: stage {stage}: no `-m stages.<name>` in its cmd, so no import closure")
    return found.group(1)


def _yaml():
    from ruamel.yaml import YAML

    yaml = YAML()  # round trip: comments and order kept
    yaml.width = 4096  # long lines stay as written
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def differences(dvc_yaml: Path) -> dict[str, tuple[list[str], list[str]]]:
    """stage -> (its code deps, the closure's), for each stage where they differ."""
    stages = _yaml().load(dvc_yaml)["stages"]
    found = {}
    for name, stage in stages.items():
        have = [d for d in stage.get("deps", []) if is_code(str(d))]
        want = wanted_deps(stage_module(name, " ".join(str(stage["cmd"]).split())), dvc_yaml.parent)
        if have != want:
            found[name] = (have, want)
    return found


def write(dvc_yaml: Path) -> list[str]:
    """Rewrite the code deps of each stage that differs (data deps first, as written); the stages rewritten."""
    yaml = _yaml()
    document = yaml.load(dvc_yaml)
    changed = differences(dvc_yaml)
    for name, (_, want) in changed.items():
        deps = document["stages"][name]["deps"]
        for i in reversed(range(len(deps))):  # item by item: the data deps keep their comments
            if is_code(str(deps[i])):
                del deps[i]
        deps.extend(want)
    if changed:
        from pipeline.infra.io import atomic_path

        with atomic_path(dvc_yaml) as tmp:
            yaml.dump(document, tmp)
    return sorted(changed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dvc-yaml", type=Path, default=ROOT / "dvc.yaml")
    parser.add_argument("--write", action="store_true", help="rewrite the deps that differ")
    args = parser.parse_args(argv)
    if args.write:
        rewritten = write(args.dvc_yaml)
        print(f"{args.dvc_yaml}: code deps rewritten for {', '.join(rewritten) or 'no stage'}")
        return 0
    found = differences(args.dvc_yaml)
    root = args.dvc_yaml.parent
    for name, (have, want) in found.items():
        have, want = expand(have, root), expand(want, root)
        missing, extra = sorted(want - have), sorted(have - want)
        print(f"{name}: {len(missing)} imported file(s) missing from deps, {len(extra)} listed but never imported")
        for path in missing:
            print(f"  + {path.as_posix()}")
        for path in extra:
            print(f"  - {path.as_posix()}")
    print(f"{args.dvc_yaml}: {len(found)} stage(s) whose code deps differ from their import closure")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
