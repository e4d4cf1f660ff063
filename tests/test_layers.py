"""The package drawing of docs/pipeline.md ("Layers"): every import between two of pipeline's packages points down
the list, module level or inside a function, so a reader who follows a value into the code never climbs back, and
a module can be read knowing only the layers below it."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# bottom first; a top-level module (pipeline/runs.py) is a layer of its own
LAYERS = [
    "infra",
    "numerics",
    "config",
    "data",
    "datasets",
    "models",
    "losses",
    "miners",
    "families",
    "runs",
    "params",
    "evaluation",
    "batching",
    "methods",
    "training",
    "linear",
    "studies",
    "reporting",
    "orchestration",
    "compose",
    "cli",
]


def imports_between_layers(root: Path) -> list[tuple[str, str, str]]:
    """(file, its layer, the layer it imports) for every import of another layer of pipeline/."""
    found = []
    for path in sorted((root / "pipeline").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if len(parts) < 2 or parts[1] == "__init__":
            continue  # pipeline/__init__.py: it pins the numerics before anything else runs
        layer = parts[1]
        package = parts[:-1]  # a module's package, or an __init__'s own
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(filter(None, [*package[: len(package) - node.level + 1], base]))
                names = [base]
            else:
                continue
            for name in names:
                target = name.split(".")
                if target[0] == "pipeline" and len(target) > 1 and target[1] != layer:
                    found.append((path.relative_to(root).as_posix(), layer, target[1]))
    return found


def test_every_package_is_drawn():
    packages = {p.name for p in (ROOT / "pipeline").iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    modules = {p.stem for p in (ROOT / "pipeline").glob("*.py") if p.name != "__init__.py"}
    assert packages | modules == set(LAYERS)


def test_imports_only_point_down():
    climbs = [
        f"{file} ({layer}) imports {target}"
        for file, layer, target in imports_between_layers(ROOT)
        if LAYERS.index(target) > LAYERS.index(layer)
    ]
    assert climbs == []


def test_a_climb_back_is_found(tmp_path):
    (tmp_path / "pipeline/infra").mkdir(parents=True)
    (tmp_path / "pipeline/infra/io.py").write_text("def f():\n    from ..training import loop\n")
    assert imports_between_layers(tmp_path) == [("pipeline/infra/io.py", "infra", "training")]
