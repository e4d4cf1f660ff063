"""Loading params.yaml into the sections a caller reads: the generic part, which imports no registry.

A params root is a dataclass of :class:`Section` fields built by :func:`params_type`; each stage loads the root of
the sections it reads (stages/<name>.py), so a stage that reads no loss imports no loss (the code stage,
pipeline/orchestration/dvc_deps.py, fingerprints what a stage's command can import). The whole root, every
section and every registry, is pipeline/params/root.py's ``Params``.

params.yaml is read through OmegaConf (YAML 1.2 numbers: ``2e-4`` is a float, unlike PyYAML's ``safe_load``) and
validated by pydantic against the sections' dataclasses; every problem becomes one :class:`ParamsError` whose
message names the key, e.g. ``params.yaml: ccp.lamda: unknown key``. params.yaml is composed from ``conf/`` by
Hydra (see conf/config.yaml): nothing is merged here, so what it says is what trains.

A searched key (``tune.spaces``) may read ``study``: each run that searches it trains at its study's value
(pipeline/studies/values.py). Loading puts the key's starting value from ``tune.start`` in its place (what every
reader without a study sees: the proof of concept, the ablations, a run with no study) and lists the key in
``tune.studied``; a number written there instead is a value the user chose, which beats every study.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, make_dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from pydantic import TypeAdapter, ValidationError

from pipeline.config.base import ParamsError, dotted, rename_keywords, to_dict, yaml_key
from pipeline.infra.schema import section

Rule = Callable[[Any, str], None]  # (params, source) -> None; raises a one-line ParamsError naming the key


def rule(*needs: str) -> Callable[[Rule], Rule]:
    """A cross-field rule that reads the sections `needs` besides its own: it runs only on a root that holds them
    all (a stage that loads fewer sections leaves it to the stages that read them)."""

    def mark(check: Rule) -> Rule:
        check.needs = needs
        return check

    return mark


@dataclass(frozen=True)
class Section:
    """One top-level key of params.yaml: its schema, its default and the rules that one field's type and bounds
    cannot express."""

    name: str
    schema: Any
    default: Any
    rules: tuple[Rule, ...] = ()


def params_type(*sections: Section, rules: tuple[Rule, ...] = (), module: str = __name__, whole: bool = False) -> type:
    """The params root holding `sections`, in order, checked by their rules and by `rules` (those of the root, which
    read several sections); built once per stage: each call makes a new type. A root assigned to ``Params`` in
    `module` pickles. The `whole` root (pipeline/params/root.py) refuses a top-level key it does not hold; any other
    leaves the file's other sections to the stages that read them."""
    fields = [(s.name, s.schema, s.default) for s in sections]
    root = section(make_dataclass("Params", fields, namespace={"__module__": module}))
    root.sections = sections  # what load_params keeps of the file
    root.whole = whole
    root.rules = tuple(r for s in sections for r in s.rules) + rules
    root.adapter = TypeAdapter(root)
    return root


def load_params(path: str | Path, root: type) -> Any:
    """Load and validate the sections of `root` from a params file; raise ParamsError with a one-line message."""
    path = Path(path)
    source = path.name
    if not path.is_file():
        raise ParamsError(f"{path}: file not found")
    try:
        raw = OmegaConf.load(path)
    except Exception as err:  # YAML syntax errors
        raise ParamsError(f"{source}: cannot parse YAML: {str(err).splitlines()[0]}") from err
    if not isinstance(raw, DictConfig):
        raise ParamsError(f"{source}: top level must be a mapping")
    if not raw:
        raise ParamsError(
            f"{path}: empty (the project's params.yaml holds every section; restore it with "
            f"`git checkout -- {path.name}`)"
        )
    data = with_starting_values(OmegaConf.to_container(raw), source)
    if not root.whole:  # the other sections are validated by the stages that read them (and the code stage)
        data = {key: value for key, value in data.items() if key in {s.name for s in root.sections}}
    return validate(data, root, source)


STUDY = "study"  # a searched key's value: its run's study decides it (module docstring)


def with_starting_values(data: dict, source: str = "params.yaml") -> dict:
    """`data` with every value that reads STUDY replaced by the same dotted key's value under ``tune.start``, and
    those keys, sorted, as ``tune.studied`` (module docstring); `data` itself when none reads STUDY."""
    found: list[str] = []

    def walk(node: dict, prefix: str) -> dict:
        out = {}
        for key, value in node.items():
            name = f"{prefix}{key}"
            if isinstance(value, dict) and name != "tune.start":
                out[key] = walk(value, f"{name}.")
            elif value == STUDY:
                found.append(name)
                start = dotted(tune.get("start") or {}, name)
                if start is None:
                    raise ParamsError(f"{source}: {name}: reads {STUDY!r} but tune.start.{name} is not set")
                out[key] = start
            else:
                out[key] = value
        return out

    tune = data.get("tune") if isinstance(data.get("tune"), dict) else {}
    if "studied" in tune:
        raise ParamsError(f"{source}: tune.studied: made on loading (the keys that read {STUDY!r}), not a setting")
    resolved = walk(data, "")
    if found:
        resolved["tune"] = {**resolved.get("tune", {}), "studied": sorted(found)}
    return resolved


def validate(data: dict, root: type, source: str = "params.yaml") -> Any:
    """A plain dict validated as `root`: the schema, then every rule whose sections `root` holds."""
    data = rename_keywords(data)
    try:
        params = root.adapter.validate_python(data)
    except ValidationError as err:
        raise ParamsError(_one_line(err.errors()[0], data, source)) from err
    loaded = {s.name for s in root.sections}
    for check in root.rules:
        if loaded.issuperset(getattr(check, "needs", ())):
            check(params, source)
    return params


def apply_values(params: Any, values: dict[str, float], source: str = "tuned values") -> Any:
    """`params` with each dotted key set to its value, validated again."""
    raw = to_dict(params)
    for key, value in values.items():
        node = dotted(raw, key, parent=True)
        if node is None:
            raise ParamsError(f"{source}: {key}: not a params key")
        node[key.rsplit(".", 1)[-1]] = value
    return validate(raw, type(params), source)


_UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")  # pydantic's kinds: model, dataclass
_MISSING = ("missing", "missing_keyword_argument", "missing_argument")


def _one_line(error: dict, data: dict, source: str) -> str:
    """pydantic's first error as ``<source>: <dotted key>: <problem>``. The key follows the input: list
    positions and the tag pydantic adds for a loss or miner chosen by its name are left out."""
    parts, node = [], data
    for i, part in enumerate(error["loc"]):
        if isinstance(node, dict) and part in node:
            parts.append(yaml_key(str(part)))
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        elif error["type"] in (*_UNKNOWN, *_MISSING) and i == len(error["loc"]) - 1:
            parts.append(yaml_key(part))
    key = ".".join(parts) or "(top level)"
    kind, ctx, value = error["type"], error.get("ctx", {}), error.get("input")
    bounds = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
    if kind in _UNKNOWN:
        problem = "unknown key"
    elif kind in _MISSING:
        problem = "required"
    elif kind in bounds:
        bound = next(iter(ctx.values()))
        problem = f"must be {bounds[kind]} {bound}, got {value}"
    elif kind == "finite_number":
        problem = f"must be finite, got {value}"
    elif kind == "literal_error":
        problem = f"{value!r} is not one of {ctx['expected']}"
    elif kind == "union_tag_invalid":
        key += ".name"
        problem = f"{ctx['tag']!r} is not one of {ctx['expected_tags']}"
    elif kind == "union_tag_not_found":
        problem = "needs a name (the loss or miner it selects)"
    elif kind == "too_short":
        problem = "needs one or more values"
    else:
        problem = f"{error['msg'].replace('Input should be', 'must be').split(',')[0]}, got {value!r}"
    return f"{source}: {key}: {problem}"
