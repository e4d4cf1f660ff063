"""The library. Importing it pins the CPU numerics first (pipeline/numerics.py), before numpy or torch load."""

from pipeline import numerics

numerics.pin()
