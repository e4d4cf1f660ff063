"""params.yaml: its schema, one module per part of the pipeline, and the loader every stage uses.

- :mod:`.base`: ParamsError, YAML key names (the validated dataclass: pipeline/infra/schema.py)
- :mod:`.run`: experiment, data, backbone, train, eval
- :mod:`.miners`: the miners a baseline run combines with its loss (the losses: pipeline/losses)
- :mod:`.methods`: the baseline runs (the families' sections, ccp and profs: pipeline/families)
- :mod:`.studies`: poc, lanml, ablation, tune, report
- :mod:`.checks`: the cross-field rules
- :mod:`.loader`: the root ``Params``, ``load_params``, the one-line errors
"""

from pipeline.config.base import ParamsError, dotted, field_name, rename_keywords, to_dict, yaml_key
from pipeline.config.loader import Params, load_params, params_from_dict
from pipeline.config.methods import BaselineConfig
from pipeline.config.run import BENCHMARK_NAMES, BackboneConfig, DataConfig, EvalConfig, TrainConfig
from pipeline.config.studies import LanmlConfig, SearchDim

__all__ = [
    "BENCHMARK_NAMES",
    "BackboneConfig",
    "BaselineConfig",
    "DataConfig",
    "EvalConfig",
    "LanmlConfig",
    "Params",
    "ParamsError",
    "SearchDim",
    "TrainConfig",
    "dotted",
    "field_name",
    "load_params",
    "params_from_dict",
    "rename_keywords",
    "to_dict",
    "yaml_key",
]
