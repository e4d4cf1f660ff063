"""The cached results a reader needs, copied byte for byte into reports/ (git-tracked) by the report stage.

The computing stages write only DVC-cached outputs under data/ (dvc.yaml's header says why); this is how
their small text results (training logs, metrics, spectra ...) still reach reports/. Each destination is
replaced atomically, and only once every source is known to exist, so a failed report leaves the previous
copies in place.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline.infra.io import atomic_path


def check_sources(copies: dict[str, list[Path]]) -> None:
    """A FileNotFoundError naming the first missing source."""
    for name, sources in copies.items():
        for source in sources:
            if not source.exists():
                raise FileNotFoundError(
                    f"{source}: not found (needed for reports/{name}; run the stage that writes it)"
                )


def publish(copies: dict[str, list[Path]], out: Path) -> None:
    """`copies`: destination name under `out` -> its sources. A name ending in a suffix (``x.json``) is a
    file copied from its single source; any other is a folder holding a copy of each source (a file or a
    folder) under the source's own name, and nothing else."""
    check_sources(copies)
    for name, sources in copies.items():
        with atomic_path(out / name) as tmp:
            if Path(name).suffix:
                (source,) = sources
                shutil.copyfile(source, tmp)
                continue
            tmp.mkdir()
            for source in sources:
                if source.is_dir():
                    shutil.copytree(source, tmp / source.name, copy_function=shutil.copyfile)
                else:
                    shutil.copyfile(source, tmp / source.name)
