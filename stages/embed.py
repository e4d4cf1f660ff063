"""embed: the backbone embedding cache (features of every manifest row)."""

from pipeline.config import to_dict
from pipeline.data.manifest import read_manifest
from pipeline.features import extract_features
from pipeline.io import atomic_path, write_json
from pipeline.models.backbones import describe_backbone
from pipeline.runtime import choose_device, seed_everything
from stages._common import run


def main(params, args):
    seed_everything(params.seed)
    cache = extract_features(read_manifest(args.data), params.backbone, choose_device(params.train.device))
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        cache.save(tmp / "features.npz")
        write_json(tmp / "info.json", {"backbone": to_dict(params.backbone), "description": describe_backbone(params.backbone),
                                       "feature_dim": int(cache.features.shape[1]), "num_images": len(cache.labels)})


def configure(p):
    p.add_argument("--data", default="data/prepared")
    p.add_argument("--out", default="data/features")


if __name__ == "__main__":
    run(__doc__, configure, main)
