"""Backbones, the embedding head and embedding normalisation."""
