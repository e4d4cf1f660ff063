"""params.yaml: its schema, one module per part of the pipeline, and the loader.

- :mod:`.base`: ParamsError, YAML key names (the validated dataclass: pipeline/infra/schema.py)
- :mod:`.loader`: a params root of the sections a caller reads (``params_type``), ``load_params``, the one-line
  errors; no registry
- :mod:`.run`: seed, experiment, the keys every data set has, backbone, train, eval, scope
- :mod:`.data`: the ``data`` section (each data set's own keys: pipeline/datasets)
- :mod:`.methods`: the baseline runs (their losses and miners: pipeline/losses, pipeline/miners; the families'
  sections, ccp and profs: pipeline/families)
- :mod:`.studies`: poc, ablation; :mod:`.lanml`; :mod:`.report` (and the claims); :mod:`.tune`
- :mod:`.params`: the whole root ``Params`` (every section, every registry) and its ``load_params``

Each section module holds its section's cross-field rules. This package's own names import no registry, so a stage
that reads no loss does not depend on pipeline/losses (pipeline/orchestration/dvc_deps.py).
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
