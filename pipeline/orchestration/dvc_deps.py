"""Each stage's code as one file: `data/code/<stage module>.json` maps every project file the stage's command can
import to the SHA-256 of its content, written by dvc.yaml's first stage, `code` (stages/code.py). Each stage depends
on its own file, so an edit reruns exactly the stages whose command can import the edited file, and dvc.yaml lists
no code file.

A stage's command runs `-m stages.<name>`; its code is every project module that command can import, at module or
function level, transitively, with the `__init__.py` of each package on the way (Python runs them); a registry
package, whose `__init__.py` imports each module beside it at run time (`import_modules(__name__)` or a
`Registry(__name__, ...)`, pipeline/infra/registry.py: pipeline/losses, miners, families, datasets, methods),
brings all of them, and a module that loads templates with jinja2's `PackageLoader("<package>", "<folder>")`
(pipeline/reporting/render.py) brings that folder's files, so that editing a template reruns only the stages that
render it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "stages")  # the project's code; everything else is an installed package
COMMAND = re.compile(r"-m\s+(stages\.\w+)")
SELF = "stages.code"  # the code stage's own module: it depends on every file of pipeline/ and stages/


def module_file(name: str, root: Path = ROOT) -> Path | None:
    """`pipeline.a.b` -> pipeline/a/b.py or pipeline/a/b/__init__.py under `root`, if it is the project's."""
    if name.split(".")[0] not in PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of `path`'s syntax tree; parsed once per content (the code stage reads each file for up to a dozen
    stages' closures: parsing it each time was most of the stage's run)."""
    return _parsed_nodes(path.read_text(), str(path))


@cache
def _parsed_nodes(source: str, filename: str) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(ast.parse(source, filename=filename)))


def _imported_names(path: Path, package: str) -> set[str]:
    """Every module name `path` imports anywhere (functions included), with the names `from x import y` may mean."""
    names: set[str] = set()
    for node in _nodes(path):
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
    `import_modules(__name__)` or makes a `Registry(__name__, ...)`, pipeline/infra/registry.py)."""
    for node in _nodes(init):
        call = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None
        if call in ("import_modules", "Registry") and node.args:
            first = node.args[0]
            if isinstance(first, ast.Name) and first.id == "__name__":
                return True
    return False


def _loaded_templates(path: Path, root: Path) -> list[Path]:
    """The files of every folder `path` names in a `PackageLoader("<package>", "<folder>")` call."""
    found: list[Path] = []
    for node in _nodes(path):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "PackageLoader" and len(node.args) == 2:
            package, folder = (a.value if isinstance(a, ast.Constant) else None for a in node.args)
            init = module_file(package, root) if isinstance(package, str) else None
            if init is None or init.name != "__init__.py" or not isinstance(folder, str):
                raise ValueError(f"{path}: PackageLoader needs a project package and a folder, as string literals")
            found += [p for p in (init.parent / folder).rglob("*") if p.is_file()]
    return found


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
            seen.update(_loaded_templates(path, root))
            if path.name == "__init__.py" and _discovers_modules(path):
                todo.extend(f"{package}.{p.stem}" for p in path.parent.glob("*.py") if p.name != "__init__.py")
    return frozenset(p.relative_to(root) for p in seen)


def stage_module(stage: str, cmd: str) -> str:
    found = COMMAND.search(cmd)
    if found is None:
        raise ValueError(f"dvc.yaml: stage {stage}: no `-m stages.<name>` in its cmd, so no import closure")
    return found.group(1)


def stage_modules(dvc_yaml: Path) -> list[str]:
    """The `stages.<name>` module of every stage command in dvc.yaml (a matrix's stages share one), in order."""
    from ruamel.yaml import YAML

    stages = YAML(typ="safe").load(dvc_yaml)["stages"]
    commands = {name: " ".join(str(stage["cmd"]).split()) for name, stage in stages.items()}
    return [m for m in dict.fromkeys(stage_module(n, c) for n, c in commands.items()) if m != SELF]


def fingerprint(module: str, root: Path = ROOT) -> dict[str, str]:
    """Each project file `python -m <module>` can import (`closure`) -> the SHA-256 of its content."""
    return {p.as_posix(): hashlib.sha256((root / p).read_bytes()).hexdigest() for p in sorted(closure(module, root))}


def fingerprint_file(module: str) -> str:
    """Where the code stage writes a stage module's fingerprint, the one code dep of the stages that run it."""
    return f"data/code/{module.split('.')[-1]}.json"


def write_fingerprints(out: Path, root: Path = ROOT) -> list[str]:
    """One `<stage module>.json` per stage command of root/dvc.yaml in the new folder `out`; the modules written."""
    modules = stage_modules(root / "dvc.yaml")
    out.mkdir()
    for module in modules:
        text = json.dumps(fingerprint(module, root), indent=1, sort_keys=True) + "\n"
        (out / Path(fingerprint_file(module)).name).write_text(text)
    return modules
