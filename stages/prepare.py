"""prepare: write the data set (images + manifest with split and MLRC folds)."""

from pipeline.data.digit_pairs import write_digit_pairs
from pipeline.io import atomic_path
from stages._common import run


def main(params, args):
    d = params.data
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        write_digit_pairs(tmp, d.num_classes, d.images_per_class, d.train_instance_fraction,
                          len(params.experiment.folds), params.seed)


if __name__ == "__main__":
    run(__doc__, lambda p: p.add_argument("--out", default="data/prepared"), main)
