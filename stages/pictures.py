"""pictures: per run, what its model retrieves for fixed test queries (top-k, wrong ones marked) and a t-SNE map
of its test embeddings (pipeline/reporting/pictures.py), from the first fold and seed's model. The report links
them from reports/README.md."""

from pathlib import Path

from pipeline.data.manifest import read_manifest
from pipeline.evaluation.runs import embeddings_file
from pipeline.infra.io import atomic_path
from pipeline.infra.parallel import run_jobs
from pipeline.params.root import Params
from pipeline.reporting.names import label
from pipeline.reporting.pictures import class_names, run_pictures
from pipeline.runs import all_runs
from stages._common import run


def main(params, args):
    manifest = read_manifest(args.data)
    images = [manifest.image_path(row) for row in manifest.rows("test")]
    names = class_names(Path(args.data))
    fold, seed = params.experiment.folds[0], params.experiment.seeds[0]
    cfg = params.report
    with atomic_path(args.out) as out:
        (out / "retrieval").mkdir(parents=True)
        (out / "maps").mkdir()
        jobs = []
        for name in all_runs(params):
            file = embeddings_file(Path(args.models) / name, fold, seed)
            if not file.is_file():
                raise FileNotFoundError(f"{file}: test embeddings not found (run the train stage of {name})")
            title = f"{label(name).replace('`', '')}, fold {fold}, seed {seed}"
            jobs.append(
                (
                    name,
                    title,
                    file,
                    images,
                    names,
                    str(out),
                    cfg.retrieval_queries,
                    cfg.retrieval_k,
                    cfg.map_classes,
                    params.seed,
                    params.data.background,
                )
            )
        run_jobs(run_pictures, jobs, params.eval.workers, threads=1, desc="pictures")


def configure(p):
    p.add_argument("--data", default="data/prepared", help="the prepared data set (manifest and images)")
    p.add_argument("--models", default="data/models", help="folder with <run>/fold-<k>-seed-<s>/test_embeddings.npz")
    p.add_argument("--out", default="data/pictures", help="folder for retrieval/<run>.png and maps/<run>.png")


if __name__ == "__main__":
    run(__doc__, configure, main, Params)
