"""The params sections made from the registries, and the whole root: above the data sets, losses, miners, families
and run names whose records make them, below the code that trains and reports. The sections that need no registry
and the loader are pipeline/config.

- :mod:`.data`: ``data`` (each data set's own keys: pipeline/datasets)
- :mod:`.baselines`: ``baselines`` (their losses and miners: pipeline/losses, pipeline/miners)
- :mod:`.studies`: ``poc`` and ``ablation`` (the families' losses)
- :mod:`.root`: the whole root ``Params`` (every section, one section per family, every rule) and its
  ``load_params``; what `python -m pipeline.compose`, the stages that train or report every run, and the tests load

Imports nothing itself, so that a stage that reads the ``data`` section imports no loss.
"""
