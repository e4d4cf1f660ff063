"""embed: the backbone embedding cache (features of every manifest row) for frozen mode.

In finetune mode the backbone trains on the images and no feature is needed (no GPU time spent on features nobody
reads): with train.augment_on=device the stage decodes every image once into the pixel store training crops from
(pipeline/data/pixels.py); with loader it writes only info.json.
"""

from pipeline.config import to_dict
from pipeline.config.loader import params_type
from pipeline.config.run import BACKBONE, SEED, TRAIN
from pipeline.infra.download import download_folder
from pipeline.infra.io import atomic_path, write_json
from pipeline.params.data import DATA
from stages._common import run

PARAMS = params_type(SEED, DATA, BACKBONE, TRAIN)  # the sections this stage reads


def main(params, args):
    from pipeline.data.manifest import read_manifest
    from pipeline.infra.runtime import choose_device, seed_everything, worker_count
    from pipeline.models.backbones import describe_backbone
    from pipeline.models.features import extract_features
    from pipeline.models.transforms import pixel_mode

    info = {
        "backbone": to_dict(params.backbone),
        "description": describe_backbone(params.backbone),
        "mode": params.train.mode,
    }
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        if params.train.mode == "frozen":
            # a backbone pass (auto: the GPU where there is one); raw pixels need no device
            device = choose_device(params.train.device, "frozen" if params.backbone.name == "pixels" else "embed")
            seed_everything(params.seed, device)
            cache = extract_features(
                read_manifest(args.data),
                params.backbone,
                params.data.background,
                device,
                params.train.num_workers,
                download_folder(params.data.download_dir),
                workers=worker_count(params.train.workers),
            )
            cache.save(tmp / "features.npz")
            info.update(feature_dim=int(cache.features.shape[1]), num_images=len(cache.labels))
        elif params.train.augment_on == "device":
            from pipeline.data.pixels import write_pixel_store

            manifest = read_manifest(args.data)
            write_pixel_store(manifest, pixel_mode(params.backbone), params.data.background, tmp)
            info.update(pixel_store=True, num_images=len(manifest.table))
        write_json(tmp / "info.json", info)


def configure(p):
    p.add_argument("--data", default="data/prepared")
    p.add_argument("--out", default="data/features")


if __name__ == "__main__":
    run(__doc__, configure, main, PARAMS)
