"""evaluate: MLRC Separated and Concatenated metrics of every trained run on the test classes, the
singular value spectrum of each fold's test embeddings (Revisiting section 5), every model's MAP@R and
P@1 per test class (the claims' bootstrap over test classes), the same metrics of the backbone's features with
no head trained (pipeline/evaluation/backbone.py: what training has to beat), and the headline metrics that
`dvc metrics show` and `dvc exp show` list, the project's only DVC metrics: per run the validation MAP@R (mean
over the models of the kept epoch's; sort and select experiments by this one) and the test classes' separated
MAP@R and P@1. Written to reports/ (git-tracked, replaced atomically) by this stage, not the report's, so that
every scope lists them.

One stage for all runs (a process per run would cost more in start-up than the evaluation itself);
runs are evaluated in ``eval.workers`` processes, and every output folder appears complete or not at all.
"""

from pathlib import Path

from pipeline.evaluation.backbone import NAME as BACKBONE
from pipeline.evaluation.backbone import evaluate_backbone
from pipeline.evaluation.runs import HEADLINE, embeddings_file, evaluate_run
from pipeline.infra.io import atomic_path, write_json
from pipeline.infra.parallel import run_jobs
from pipeline.params.root import Params
from pipeline.runs import all_runs, model_ids
from stages._common import run


def main(params, args):
    runs = all_runs(params)
    jobs = [(str(Path(args.models) / r), r, model_ids(params), params.eval, params.seed) for r in runs]
    for path, name, models, _, _ in jobs:  # fail before any work if a model is missing
        for fold, seed in models:
            if not embeddings_file(path, fold, seed).is_file():
                raise FileNotFoundError(
                    f"{embeddings_file(path, fold, seed)}: test embeddings not found (run the train stage of {name})"
                )
    results = run_jobs(evaluate_run, jobs, params.eval.workers, threads=1, desc="evaluate")
    folds = sorted({fold for fold, _ in model_ids(params)})
    backbone = evaluate_backbone((args.data, Path(args.features) / "features.npz", folds, params.eval, params.seed))
    with (
        atomic_path(args.out) as metrics,
        atomic_path(args.spectra) as spectra,
        atomic_path(args.per_class) as per_class,
    ):
        for folder in (metrics, spectra, per_class):
            folder.mkdir()
        for name, (result, spectrum, scores) in zip(runs, results):
            write_json(metrics / f"{name}.json", result)
            spectrum.to_csv(spectra / f"{name}.csv", index=False, float_format="%.6g")
            scores.to_csv(per_class / f"{name}.csv", float_format="%.5g")
    write_json(args.backbone, backbone)
    # validation MAP@R first: the column to sort `dvc exp show` by (the test columns are for reading only)
    reference = {"val_map_at_r": backbone["validation"]["map_at_r"], **{k: backbone["test"][k] for k in HEADLINE}}
    write_json(
        args.headline,
        {
            name: {
                "val_map_at_r": result["validation"]["map_at_r"],
                **{k: result["separated"]["mean"][k] for k in HEADLINE},
            }
            for name, (result, _, _) in zip(runs, results)
        }
        | {BACKBONE: reference},
    )


def configure(p):
    p.add_argument("--models", default="data/models", help="folder with <run>/fold-<k>-seed-<s>/test_embeddings.npz")
    p.add_argument("--data", default="data/prepared", help="the prepared data set (its manifest)")
    p.add_argument("--features", default="data/features", help="the embed stage's feature cache (features.npz)")
    p.add_argument("--out", default="data/evaluation/metrics", help="folder of metrics JSON files, one per run")
    p.add_argument("--spectra", default="data/evaluation/spectra", help="folder of singular value CSVs, one per run")
    p.add_argument(
        "--per-class",
        default="data/evaluation/per_class",
        help="folder of CSVs of every model's MAP@R and P@1 per test class, one per run",
    )
    p.add_argument("--backbone", default="data/evaluation/backbone.json", help="the backbone features' metrics")
    p.add_argument("--headline", default="reports/headline_metrics.json", help="the DVC metrics file (git-tracked)")


if __name__ == "__main__":
    run(__doc__, configure, main, Params)
