"""The tuple miners pytorch-metric-learning lacks, as its BaseMiner subclasses; the records in
:mod:`pipeline.miners` import them when they build a miner, and PROFS (pipeline/methods/profs.py) uses one directly."""
