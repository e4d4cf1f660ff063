"""The library. Importing it pins the CPU numerics first (pipeline/numerics.py), before numpy or torch load,
and points matplotlib's cache at the project's cache folder (pipeline/infra/userdirs.py)."""

import os

from pipeline import numerics
from pipeline.infra import userdirs

os.environ.setdefault("MPLCONFIGDIR", str(userdirs.cache_dir("matplotlib")))
numerics.pin()
