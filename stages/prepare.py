"""prepare: write the data set (images + manifest with split and MLRC folds).

digit_pairs: the embedded default, made from scikit-learn's bundled digits. folder: your own images (data.source:
a folder of class folders or a CSV manifest, pipeline/data/folder.py). emoji: the real-image default,
emoji drawn by eleven artists' sets fetched from the npm registry and rendered (pipeline/data/emoji.py). cub, cars196,
sop, inshop: the real benchmarks, downloaded (or taken from data.source) and extracted into the output folder.
"""

from pipeline.infra.download import download_folder
from pipeline.infra.io import atomic_path
from stages._common import run


def main(params, args):
    d = params.data
    folds = len(params.experiment.folds)
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        if d.name == "digit_pairs":
            from pipeline.data.digit_pairs import write_digit_pairs

            write_digit_pairs(tmp, d.num_classes, d.images_per_class, d.train_instance_fraction, folds, params.seed)
        elif d.name == "folder":
            from pipeline.data.folder import write_folder

            write_folder(tmp, d.source, folds)
        elif d.name == "emoji":
            from pipeline.data.emoji import write_emoji

            write_emoji(
                tmp,
                d.emoji_sets,
                d.emoji_min_sets,
                d.render_size,
                folds,
                params.seed,
                download_folder(d.download_dir) / "npm",
                d.source,
            )
        else:
            from pipeline.data.benchmarks import prepare_benchmark

            prepare_benchmark(d.name, tmp, d.source, download_folder(d.download_dir), d.mirror, folds)


if __name__ == "__main__":
    run(__doc__, lambda p: p.add_argument("--out", default="data/prepared"), main)
