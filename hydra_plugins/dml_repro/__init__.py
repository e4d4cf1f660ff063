"""Hydra plugin module of this project: DVC's Hydra composition (`dvc exp run -S`, pipeline/compose.py) imports
every module under hydra_plugins/ at the project root before it composes conf/, which registers the resolver
conf/config.yaml's ``experiment.runs: ${dml_runs:}`` uses (pipeline/families all_runs)."""

from pipeline.runs import register_runs_resolver

register_runs_resolver()
