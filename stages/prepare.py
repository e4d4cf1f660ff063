"""prepare: write the data set (images + manifest with split and MLRC folds).

The data set is `data.name`'s record (pipeline/datasets): digit_pairs, the embedded default, made from scikit-learn's
bundled digits; folder, your own images (data.source: a folder of class folders or a CSV manifest); emoji, the
real-image default, emoji drawn by eleven artists' sets fetched from the npm registry and rendered; cub, cars196,
sop, inshop, the real benchmarks, downloaded (or taken from data.source) and extracted into the output folder.
Beside the manifest it records the `data` section it was made from (data.json): a run that replaces another data
set (a `dvc exp run -S` composed without `-S dataset=folder` after a folder experiment) says so in one line.
"""

import logging
from pathlib import Path

from pipeline.config import to_dict
from pipeline.config.loader import params_type
from pipeline.config.run import EXPERIMENT, SEED
from pipeline.datasets import datasets
from pipeline.infra.io import atomic_path, read_json, write_json
from pipeline.params.data import DATA
from stages._common import run

PARAMS = params_type(SEED, DATA, EXPERIMENT)  # the sections this stage reads
RECORD = "data.json"  # the `data` section the folder was made from
log = logging.getLogger("prepare")


def _described(data: dict) -> str:
    return data["name"] + (f" from {data['source']}" if data.get("source") else "")


def main(params, args):
    data = to_dict(params.data)
    held = Path(args.out) / RECORD
    if held.is_file():
        old = read_json(held)
        if (old.get("name"), old.get("source")) != (data["name"], data["source"]):
            log.warning(
                "%s held %s; params.yaml asks for %s, which replaces it (each `dvc exp run -S` composes from conf/: "
                "repeat -S dataset=folder -S data.source=... in every experiment on your data, docs/your-data.md)",
                args.out,
                _described(old),
                _described(data),
            )
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        datasets()[params.data.name].prepare(tmp, params.data, len(params.experiment.folds), params.seed)
        write_json(tmp / RECORD, data)


if __name__ == "__main__":
    run(__doc__, lambda p: p.add_argument("--out", default="data/prepared"), main, PARAMS)
