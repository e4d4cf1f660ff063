"""dml: a trained model on new images, from the command line (the export stage's data/export/<run>.pt2).

    dml embed MODEL IMAGES... --out embeddings.npz
    dml search MODEL --gallery IMAGES... --queries IMAGES... [-k 5] [--out results.csv] [--picture results.png]
    dml experiments [--last 7]     (in the project: `dvc exp show` made readable; pipeline/reporting/experiments.py)
    dml tune [RUN ...] [--trials N] (in the project: run or extend studies; pipeline/studies/tune_command.py)
    dml studies                     (in the project: studies/<data.name>/README.md; pipeline/studies/catalogue.py)

IMAGES: image files or folders (searched recursively); for `search` also an .npz that `dml embed` wrote. Each
image goes through the model's own preprocessing (the recipe inside the file: pipeline/models/export.py), so its
embedding is the one the pipeline's evaluation would give it. `search` ranks the gallery for every query with the
exact nearest-neighbour search of the evaluation (pipeline/evaluation/knn.py: Euclidean, ties by gallery order)
and writes one row per (query, rank): the files, the squared distance and whether both lie in class folders of the
same name (an image's class folder: a folder named on the command line that holds images, else the first folder
under it, as in the folder data set; a file named alone: its folder); `--picture` draws each query with its
top-k, framed green / red by that folder match when the queries sit in class folders. Bad input (a missing model,
no image, an unreadable one, k larger than the gallery) stops with one line and exit code 2.
"""

from __future__ import annotations

import pipeline  # noqa: F401  (first: it pins the CPU numerics before numpy and torch load)

# isort: split
import argparse
import sys
from pathlib import Path

import numpy as np

from pipeline.datasets.folder import IMAGE_SUFFIXES
from pipeline.infra.errors import PipelineError


class UsageError(PipelineError, ValueError):
    """Bad command-line input (one line)."""


def image_files(items: list[str]) -> tuple[list[Path], list[str]]:
    """The image files named or found (recursively, in path order) under the folders named, and each one's class
    folder: a folder named that holds images itself is one class (its name); otherwise each folder under it is one
    (nested folders belong to it); a file named alone: its own folder's name."""
    files, classes = [], []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
            one_class = any(p.parent == path for p in found)  # images in it: a class folder, else a root of them
            files += found
            classes += [path.name if one_class else p.relative_to(path).parts[0] for p in found]
        elif path.is_file():
            files.append(path)
            classes.append(path.parent.name)
        else:
            raise UsageError(f"{path}: not found")
    if not files:
        raise UsageError(f"no image files in {' '.join(items)}")
    return files, classes


def embed_images(model, about: dict, files: list[Path], batch: int = 64) -> np.ndarray:
    """Embeddings of `files` through the recipe's preprocessing and the model, `batch` at a time."""
    import torch
    from tqdm import tqdm

    from pipeline.data.decode import opened_image
    from pipeline.models.export import preprocess

    transform, out = preprocess(about), []
    for s in tqdm(range(0, len(files), batch), desc="embed", unit="batch", disable=None):  # no bar when piped
        inputs = []
        for f in files[s : s + batch]:
            with opened_image(f) as image:
                inputs.append(transform(image))
        with torch.inference_mode():
            out.append(model(torch.stack(inputs)).float().numpy())
    return np.concatenate(out)


def listed(items: list[str]) -> tuple[list[Path], list[str], np.ndarray | None]:
    """Files, class folders and, from one .npz of `dml embed`, their embeddings (None: images still to embed)."""
    if len(items) == 1 and items[0].endswith(".npz"):
        with np.load(items[0]) as saved:
            return [Path(p) for p in saved["paths"]], [str(c) for c in saved["classes"]], saved["embeddings"]
    return *image_files(items), None


def misses_first(misses: int) -> str:
    """How the search picture orders its queries, in words."""
    return "no miss" if misses == 0 else "the miss first" if misses == 1 else f"the {misses} misses first"


def cmd_embed(args) -> None:
    from pipeline.infra.io import atomic_path, write_npz
    from pipeline.models.export import load_model

    model, about = load_model(args.model)
    files, classes = image_files(args.images)
    embeddings = embed_images(model, about, files, args.batch)
    with atomic_path(args.out) as tmp:
        write_npz(tmp, embeddings=embeddings, paths=np.array([str(f) for f in files]), classes=np.array(classes))
    print(f"{args.out}: {len(files)} embeddings of {embeddings.shape[1]} dimensions ({about['run']}, {about['model']})")


def cmd_search(args) -> None:
    import pandas as pd

    from pipeline.evaluation.knn import nearest_neighbours
    from pipeline.infra.io import write_text
    from pipeline.models.export import load_model

    model, about = load_model(args.model)
    gallery, gallery_classes, g = listed(args.gallery)
    queries, query_classes, q = listed(args.queries)
    if not 1 <= args.k <= len(gallery):  # before any image is embedded
        raise UsageError(f"-k {args.k}: the gallery holds {len(gallery)} images")
    g = embed_images(model, about, gallery) if g is None else g
    q = embed_images(model, about, queries) if q is None else q
    found, distances = nearest_neighbours(g, args.k, queries=q)
    same = np.array([[gallery_classes[j] == query_classes[i] != "" for j in row] for i, row in enumerate(found)])
    table = pd.DataFrame(
        {
            "query": np.repeat([str(p) for p in queries], args.k),
            "rank": np.tile(np.arange(1, args.k + 1), len(queries)),
            "match": [str(gallery[j]) for j in found.ravel()],
            "squared_distance": distances.ravel(),
            "same_folder": same.ravel(),
        }
    )
    write_text(args.out, table.to_csv(index=False, float_format="%.6g"))
    counts = f"{int(same[:, 0].sum())} of {len(queries)} first matches in a folder of the query's name"
    print(f"{args.out}: top-{args.k} of {len(gallery)} gallery images for {len(queries)} queries; {counts}")
    if args.picture:
        shown = search_picture(
            (queries, query_classes), (gallery, gallery_classes), found, same, about, Path(args.picture), args.rows
        )
        print(f"{args.picture}: {shown}")


def search_picture(queries, gallery, found, same, about: dict, path: Path, rows: int) -> str:
    """`rows` queries with their top-k (pipeline/reporting/pictures.py's grid), labelled by class folder and framed
    by folder match when the queries' class folders are among the gallery's: the misses first (queries whose first
    match lies in another folder), then the others, each group in command-line order. `queries` and `gallery`:
    (files, class folders). Returns what the picture shows, in the console's words."""
    from pipeline.reporting.pictures import retrieval_figure

    (query_files, query_classes), (gallery_files, gallery_classes) = queries, gallery
    classes_known = bool(set(query_classes) & set(gallery_classes) - {""})
    order = np.argsort(same[:, 0], kind="stable") if classes_known else np.arange(len(query_files))
    chosen = order[: min(rows, len(query_files))]
    shown, misses = len(chosen), int((~same[chosen, 0]).sum())
    images = [*(query_files[i] for i in chosen), *gallery_files]
    top = found[chosen] + shown  # gallery rows after the queries in `images`
    names = dict(enumerate([*(query_classes[i] for i in chosen), *gallery_classes]))
    counts = f"{int(same[:, 0].sum())} of {len(query_files)} first matches in a folder of the query's name"
    what = f"{shown} queries, {misses_first(misses)}; {counts}" if classes_known else f"the first {shown} queries"
    retrieval_figure(
        f"{about['run']} ({about['model']})",
        images,
        np.arange(len(images)),
        names,
        np.arange(shown),
        top,
        same[chosen] if classes_known else None,
        path,
        about["preprocessing"].get("background", "white"),  # as the model saw them (pipeline/models/export.py)
        heading=what if classes_known else None,
    )
    return what


def cmd_experiments(args) -> None:
    from pipeline.reporting.experiments import experiments_table, shown_experiments

    print(experiments_table(shown_experiments(args.repo), args.last))


def cmd_tune(args) -> None:
    from pipeline.infra.console import configure_logging
    from pipeline.params.root import load_params
    from pipeline.studies.tune_command import stopped_by_sigterm, tune_runs

    configure_logging()
    params = load_params(args.params)
    studies = Path(args.studies or f"studies/{params.data.name}")
    with stopped_by_sigterm():
        records = tune_runs(
            params, args.runs, args.trials or params.tune.trials, args.data, args.features, Path(args.journals), studies
        )
    write_catalogue(params, studies)
    print(f"{len(records)} studies finished in {studies}/: `dvc repro` trains at them (commit the records)")


def write_catalogue(params, studies: Path) -> None:
    from pipeline.infra.io import write_text
    from pipeline.studies.catalogue import catalogue_markdown

    write_text(studies / "README.md", catalogue_markdown(params, studies))
    print(f"wrote {studies}/README.md")


def cmd_studies(args) -> None:
    from pipeline.params.root import load_params

    params = load_params(args.params)
    write_catalogue(params, Path(args.studies or f"studies/{params.data.name}"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="dml", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    embed = commands.add_parser("embed", help="embed images with an exported model")
    embed.add_argument("model", help="an exported model (data/export/<run>.pt2)")
    embed.add_argument("images", nargs="+", help="image files or folders")
    embed.add_argument("--out", required=True, help="the .npz to write (embeddings, paths, class folders)")
    embed.add_argument("--batch", type=int, default=64)
    search = commands.add_parser("search", help="rank gallery images for query images")
    search.add_argument("model", help="an exported model (data/export/<run>.pt2)")
    search.add_argument("--gallery", nargs="+", required=True, help="image files or folders, or an .npz of dml embed")
    search.add_argument("--queries", nargs="+", required=True, help="image files or folders, or an .npz of dml embed")
    search.add_argument("-k", type=int, default=5, help="neighbours per query")
    search.add_argument("--out", default="search.csv", help="the table to write (one row per query and rank)")
    search.add_argument("--picture", help="a PNG of the first --rows queries and their top-k")
    search.add_argument("--rows", type=int, default=8)
    experiments = commands.add_parser("experiments", help="the params that vary and the headline metrics")
    experiments.add_argument(
        "--last", type=int, default=6, help="columns: the workspace, the commit, the newest rest (at most 6 fit)"
    )
    experiments.add_argument("--repo", default=".", help="the project (default: here)")
    tune = commands.add_parser("tune", help="run, resume or extend studies (hours; dvc repro never tunes)")
    tune.add_argument("runs", nargs="*", help="runs to tune (default: every run with a search space)")
    tune.add_argument("--trials", type=int, help="trials per study (default: tune.trials; more extends a study)")
    tune.add_argument("--params", default="params.yaml")
    tune.add_argument("--data", default="data/prepared")
    tune.add_argument("--features", default="data/features")
    tune.add_argument("--journals", default="data/journals", help="Optuna journals (a working copy of the studies)")
    tune.add_argument("--studies", help="the studies' records (default: studies/<data.name>)")
    studies = commands.add_parser("studies", help="write studies/<data.name>/README.md, the table of its records")
    studies.add_argument("--params", default="params.yaml")
    studies.add_argument("--studies", help="the studies' records (default: studies/<data.name>)")
    args = parser.parse_args(argv)
    commands = {
        "embed": cmd_embed,
        "search": cmd_search,
        "experiments": cmd_experiments,
        "tune": cmd_tune,
        "studies": cmd_studies,
    }
    try:
        commands[args.command](args)
    except (PipelineError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
