"""Thin stage CLIs. ``pipeline`` is imported first: it pins the CPU numerics before any numeric library loads."""

import pipeline  # noqa: F401
