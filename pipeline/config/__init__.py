"""params.yaml: its schema, one module per part of the pipeline, and the loader every stage uses.

- :mod:`.base`: the validated dataclass (pydantic), ParamsError, YAML key names
- :mod:`.run`: experiment, data, backbone, train, eval
- :mod:`.losses`: the losses and miners a baseline run combines
- :mod:`.methods`: baselines, ccp, profs
- :mod:`.studies`: poc, lanml, ablation, tune, report
- :mod:`.checks`: the cross-field rules
- :mod:`.loader`: the root ``Params``, ``load_params``, the one-line errors
"""

from pipeline.config.base import ParamsError, dotted, field_name, rename_keywords, to_dict, yaml_key
from pipeline.config.loader import Params, load_params, params_from_dict
from pipeline.config.methods import BaselineConfig, CCPConfig, PROFSConfig
from pipeline.config.run import BENCHMARK_NAMES, BackboneConfig, DataConfig, EvalConfig, TrainConfig
from pipeline.config.studies import LanmlConfig, SearchDim

__all__ = [
    "BENCHMARK_NAMES",
    "BackboneConfig",
    "BaselineConfig",
    "CCPConfig",
    "DataConfig",
    "EvalConfig",
    "LanmlConfig",
    "PROFSConfig",
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
