"""export: every run's best fold x seed model (by validation MAP@R) as one self-contained file a user loads with torch
alone (pipeline/models/export.py): data/export/<run>.pt2, its preprocessing recipe inside. dvc.yaml declares the
folder as an artifact; `dml embed` / `dml search` (pipeline/cli.py) read the files."""

from pathlib import Path

from pipeline.infra.io import atomic_path
from pipeline.params.root import Params
from stages._common import run


def main(params, args):
    from PIL import Image

    from pipeline.data.manifest import read_manifest
    from pipeline.infra.download import download_folder
    from pipeline.models.backbones import describe_backbone
    from pipeline.models.export import best_model, export_model, preprocess, rebuild, recipe
    from pipeline.models.transforms import eval_transform
    from pipeline.runs import all_runs, model_ids, model_name, trained_setup

    names = [model_name(fold, seed) for fold, seed in model_ids(params)]
    with Image.open(read_manifest(args.data).image_path(0)) as image:  # the example input the export traces
        image.load()
    input_size = tuple(eval_transform(params.backbone, params.data.background)(image).shape[-2:])
    with atomic_path(args.out) as out:
        out.mkdir()
        for name in all_runs(params):
            best, summary = best_model(Path(args.models) / name, names)
            weights = Path(args.models) / name / best / "model.pt"
            setup = trained_setup(params, name, Path(args.tuned) / f"{name}.json")  # the run as trained
            model = rebuild(setup, weights, download_folder(params.data.download_dir))
            about = recipe(
                params.backbone,
                params.data.background,
                input_size,
                run=name,
                model=best,
                best_val_map_at_r=summary["best_val_map_at_r"],
                embedding_dim=setup.train.embedding_dim,
                backbone=describe_backbone(params.backbone),
                params=setup.record(),
            )
            example = preprocess(about)(image).unsqueeze(0).expand(2, -1, -1, -1).contiguous()
            export_model(model, example, about, out / f"{name}.pt2")


def configure(p):
    p.add_argument("--models", default="data/models")
    p.add_argument("--data", default="data/prepared")
    p.add_argument("--tuned", default="data/tuned", help="each run's settings as it trained (the values stage's files)")
    p.add_argument("--out", default="data/export")


if __name__ == "__main__":
    run(__doc__, configure, main, Params)
