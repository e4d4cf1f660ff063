"""prepare: write the data set (images + manifest with split and MLRC folds).

The data set is `data.name`'s record (pipeline/datasets): digit_pairs, the embedded default, made from scikit-learn's
bundled digits; folder, your own images (data.source: a folder of class folders or a CSV manifest); emoji, the
real-image default, emoji drawn by eleven artists' sets fetched from the npm registry and rendered; cub, cars196,
sop, inshop, the real benchmarks, downloaded (or taken from data.source) and extracted into the output folder.
"""

from pipeline.config.loader import params_type
from pipeline.config.run import EXPERIMENT, SEED
from pipeline.datasets import datasets
from pipeline.infra.io import atomic_path
from pipeline.params.data import DATA
from stages._common import run

PARAMS = params_type(SEED, DATA, EXPERIMENT)  # the sections this stage reads


def main(params, args):
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        datasets()[params.data.name].prepare(tmp, params.data, len(params.experiment.folds), params.seed)


if __name__ == "__main__":
    run(__doc__, lambda p: p.add_argument("--out", default="data/prepared"), main, PARAMS)
