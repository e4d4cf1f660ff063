"""The losses and reducers pytorch-metric-learning lacks, as torch modules; the records in :mod:`pipeline.losses`
import them when they build a loss."""
