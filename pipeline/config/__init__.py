"""params.yaml: its schema, one module per part of the pipeline, and the loader every stage uses.

- :mod:`.base`: ParamsError, YAML key names (the validated dataclass: pipeline/infra/schema.py)
- :mod:`.run`: experiment, data (the keys every data set has; each data set's own: pipeline/datasets), backbone,
  train, eval
- :mod:`.methods`: the baseline runs (their losses and miners: pipeline/losses, pipeline/miners; the families'
  sections, ccp and profs: pipeline/families)
- :mod:`.studies`: poc, lanml, ablation, tune, report
- :mod:`.checks`: the cross-field rules
- :mod:`.loader`: the ``data`` section and the root ``Params``, ``load_params``, the one-line errors
"""

from pipeline.config.base import ParamsError, dotted, field_name, rename_keywords, to_dict, yaml_key
from pipeline.config.loader import DataConfig, Params, apply_values, load_params, params_from_dict
from pipeline.config.methods import BaselineConfig
from pipeline.config.run import BackboneConfig, EvalConfig, TrainConfig
from pipeline.config.studies import LanmlConfig, SearchDim

__all__ = [
    "BackboneConfig",
    "BaselineConfig",
    "DataConfig",
    "EvalConfig",
    "LanmlConfig",
    "Params",
    "ParamsError",
    "SearchDim",
    "TrainConfig",
    "apply_values",
    "dotted",
    "field_name",
    "load_params",
    "params_from_dict",
    "rename_keywords",
    "to_dict",
    "yaml_key",
]
