"""params.yaml's sections that need no registry, and the loader; the sections made from the registries and the
whole root are pipeline/params.

- :mod:`.base`: ParamsError, YAML key names (the validated dataclass: pipeline/infra/schema.py)
- :mod:`.loader`: a params root of the sections a caller reads (``params_type``), ``load_params``, the one-line
  errors
- :mod:`.run`: seed, experiment, the keys every data set has, backbone, train, eval, scope
- :mod:`.lanml`, :mod:`.report` (and the papers' claims), :mod:`.tune`

Each section module holds its section's cross-field rules. Nothing here imports a registry, so every layer may
import it and a stage that reads no loss does not depend on pipeline/losses (pipeline/orchestration/dvc_deps.py).
"""

from pipeline.config.base import ParamsError, dotted, field_name, rename_keywords, to_dict, yaml_key
from pipeline.config.loader import apply_values
from pipeline.config.run import BackboneConfig, EvalConfig, TrainConfig

__all__ = [
    "BackboneConfig",
    "EvalConfig",
    "ParamsError",
    "TrainConfig",
    "apply_values",
    "dotted",
    "field_name",
    "rename_keywords",
    "to_dict",
    "yaml_key",
]
