"""The params root and the one loader every stage uses.

params.yaml is read through OmegaConf (YAML 1.2 numbers: ``2e-4`` is a float, unlike PyYAML's ``safe_load``) and
validated by pydantic against the sections' dataclasses; every problem becomes one :class:`ParamsError` whose
message names the key, e.g. ``params.yaml: ccp.lamda: unknown key``. params.yaml is composed from ``conf/`` by
Hydra (see conf/config.yaml): nothing is merged here, so what it says is what trains.
"""

from __future__ import annotations

from dataclasses import field, make_dataclass
from pathlib import Path
from typing import Literal

from omegaconf import DictConfig, OmegaConf
from pydantic import Field, TypeAdapter, ValidationError

from pipeline.config.base import ParamsError, dotted, rename_keywords, to_dict, yaml_key
from pipeline.config.checks import check_consistency
from pipeline.config.methods import BaselineConfig
from pipeline.config.run import BackboneConfig, DataKeys, EvalConfig, ExperimentConfig, TrainConfig
from pipeline.config.studies import AblationConfig, LanmlConfig, PocConfig, ReportConfig, ScopeConfig, TuneConfig
from pipeline.datasets import datasets
from pipeline.families import families
from pipeline.infra.schema import section


def _data_section() -> type:
    """``data``: the keys every data set has, ``name`` one of the registered data sets (pipeline/datasets), then each
    data set's own keys (its record's schema), so a new data set needs no edit here."""
    records = list(datasets().values())
    own = [r.schema for r in records if r.schema is not None]
    name = ("name", Literal[tuple(r.name for r in records)], Field("digit_pairs"))
    bases = (*reversed(own), DataKeys)  # a dataclass takes its bases' fields last base first: DataKeys' lead
    return section(make_dataclass("DataConfig", [name], bases=bases, kw_only=True, namespace={"__module__": __name__}))


DataConfig = _data_section()


def _root() -> type:
    """The params root: the fixed sections, and after ``baselines`` one section per method family
    (pipeline/families: ``ccp``, ``profs``), so a new family needs no edit here."""
    family_sections = [(f.section, f.schema, field(default_factory=f.schema)) for f in families().values()]
    fields = [
        ("seed", int, Field(0, ge=0)),
        ("experiment", ExperimentConfig, field(default_factory=ExperimentConfig)),
        ("data", DataConfig, field(default_factory=DataConfig)),
        ("backbone", BackboneConfig, field(default_factory=BackboneConfig)),
        ("train", TrainConfig, field(default_factory=TrainConfig)),
        ("eval", EvalConfig, field(default_factory=EvalConfig)),
        # every batch / proxy baseline by run name; experiment.methods picks the ones the pipeline trains
        ("baselines", dict[str, BaselineConfig], field(default_factory=dict)),
        *family_sections,
        ("poc", PocConfig, field(default_factory=PocConfig)),
        ("lanml", LanmlConfig, field(default_factory=LanmlConfig)),
        ("ablation", AblationConfig, field(default_factory=AblationConfig)),
        ("report", ReportConfig, field(default_factory=ReportConfig)),
        ("tune", TuneConfig, field(default_factory=TuneConfig)),
        ("scope", ScopeConfig, field(default_factory=ScopeConfig)),
    ]
    return section(make_dataclass("Params", fields, namespace={"__module__": __name__}))


Params = _root()
_PARAMS = TypeAdapter(Params)


def load_params(path: str | Path = "params.yaml") -> Params:
    """Load and validate params.yaml; raise ParamsError with a one-line message."""
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
    return params_from_dict(OmegaConf.to_container(raw), source)


def params_from_dict(data: dict, source: str = "params.yaml") -> Params:
    """Validate a plain dict against the schema and the cross-field rules (used by load_params and tests)."""
    data = rename_keywords(data)
    try:
        params = _PARAMS.validate_python(data)
    except ValidationError as err:
        raise ParamsError(_one_line(err.errors()[0], data, source)) from err
    check_consistency(params, source)
    return params


def apply_values(params: Params, values: dict[str, float], source: str = "tuned values") -> Params:
    """`params` with each dotted key set to its value, validated again."""
    raw = to_dict(params)
    for key, value in values.items():
        node = dotted(raw, key, parent=True)
        if node is None:
            raise ParamsError(f"{source}: {key}: not a params key")
        node[key.rsplit(".", 1)[-1]] = value
    return params_from_dict(raw, source)


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
