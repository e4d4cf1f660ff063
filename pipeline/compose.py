"""Write params.yaml from conf/ the way `dvc exp run -S` does (DVC's Hydra composition), for `dvc repro`.

    python -m pipeline.compose                       # the embedded default (conf/config.yaml)
    python -m pipeline.compose dataset=emoji         # the real-image default
    python -m pipeline.compose dataset=cub protocol=conventional train.lr=3e-5

params.yaml is generated: the stages read it, `dvc exp show` lists it, and DVC rewrites it from conf/ at every
`dvc exp run -S ...` (a hand edit of params.yaml lasts until then; lasting changes belong in conf/).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from omegaconf import OmegaConf

from pipeline.config import ParamsError
from pipeline.params.root import load_params

ROOT = Path(__file__).resolve().parents[1]


def compose(overrides: list[str], output: Path, root: Path = ROOT) -> None:
    """conf/ at `root` with Hydra `overrides`, written to `output` by DVC's own function (same bytes as
    `dvc exp run -S`); the result is validated before it replaces `output`."""
    from dvc.utils.hydra import compose_and_dump

    output = Path(output)
    with tempfile.TemporaryDirectory(dir=output.parent) as tmp:
        partial = Path(tmp) / output.name
        compose_and_dump(partial, str(root / "conf"), None, "config", str(root), overrides)
        load_params(partial)
        partial.replace(output)


def composed(overrides: list[str], root: Path = ROOT) -> dict:
    """The composed params as a plain dict (benchmarks, tests)."""
    with tempfile.TemporaryDirectory() as tmp:
        compose(overrides, Path(tmp) / "params.yaml", root)
        return OmegaConf.to_container(OmegaConf.load(Path(tmp) / "params.yaml"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, as dvc exp run -S takes them")
    parser.add_argument("--output", type=Path, default=Path("params.yaml"))
    args = parser.parse_args(argv)
    try:
        compose(args.overrides, args.output, Path.cwd())
    except ParamsError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except Exception as err:  # Hydra: an unknown group, option or key
        print(f"error: {type(err).__name__}: {str(err).splitlines()[0]}", file=sys.stderr)
        sys.exit(2)
    print(f"wrote {args.output} from conf/ {' '.join(args.overrides)}".rstrip())


if __name__ == "__main__":
    main()
