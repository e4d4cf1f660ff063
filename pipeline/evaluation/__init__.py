"""Evaluation: kNN retrieval metrics, clustering metrics, and the MLRC Separated/Concatenated protocol."""
