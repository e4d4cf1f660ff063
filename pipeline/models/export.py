"""A trained model as one self-contained file: ``torch.export`` program (.pt2) with its preprocessing recipe inside.

The file holds the whole network that maps a preprocessed image to its embedding: the backbone (in frozen mode
rebuilt from params and its weights, as the embed stage ran it), the trained head and the normalisation the run
evaluates with. Loading it needs torch alone, no code or config of this package:

    program = torch.export.load("ms.pt2", extra_files=(extra := {"dml.json": ""}))
    recipe = json.loads(extra["dml.json"])          # how to turn an image into the input, and what trained
    embeddings = program.module()(batch)            # batch: (N, C, H, W) float32, preprocessed as the recipe says

Why ``torch.export`` and not TorchScript or safetensors: TorchScript (``torch.jit``) is deprecated in the pinned
torch, and safetensors holds weights only, so loading would need this package's model code and settings back.
An exported program runs the same aten operations as the model it came from, so on the CPU its embeddings are the
pipeline's own, bit for bit (tests/test_export.py); its batch dimension is dynamic.

The recipe (``dml.json``): the preprocessing of the evaluation transform (pipeline/models/transforms.py: colour
mode, resize of the shorter side, centre crop, scaling with mean / std or Caffe's BGR x 255), the embedding size
and normalisation, and what the model is: run, fold, replicate seed, its validation MAP@R and the run's params.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from pipeline.config import BackboneConfig, to_dict
from pipeline.infra.io import atomic_path
from pipeline.models.transforms import eval_transform

RECIPE = "dml.json"
RECIPE_KEYS = ("name", "channels", "input_size", "resize", "input_space", "mean", "std")  # of backbone


def recipe(cfg: BackboneConfig, background: str, input_size: tuple[int, int], **about) -> dict:
    """What `load` needs to preprocess images as the pipeline did, and what the model is (`about`).
    `background`: the colour transparent images go over; `input_size`: (height, width) of the inputs the model was
    exported with (its program takes that size only: `preprocess` resizes every image to it)."""
    preprocessing = {k: v for k, v in to_dict(cfg).items() if k in RECIPE_KEYS}
    preprocessing["background"] = background
    preprocessing["input_height_width"] = list(input_size)
    preprocessing["mode"] = "pixels: grey, [0, 1], flattened" if cfg.name == "pixels" else "image"
    return {"preprocessing": preprocessing, **about}


def export_model(model: nn.Module, example: torch.Tensor, about: dict, path: Path) -> None:
    """Write `model` (eval mode, CPU) as a torch.export program with the recipe `about`, atomically."""
    model = model.eval().cpu()
    batch = torch.export.Dim("batch", min=1)
    with torch.no_grad():
        program = torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
    for node in program.graph.nodes:  # source paths of this checkout: the same model gives the same bytes anywhere
        node.meta.pop("stack_trace", None)
    with atomic_path(path) as tmp:
        torch.export.save(program, tmp, extra_files={RECIPE: json.dumps(about, sort_keys=True, default=str)})


def load_model(path: str | Path) -> tuple[nn.Module, dict]:
    """The exported network (callable on preprocessed batches) and its recipe."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no exported model (the export stage writes data/export/<run>.pt2)")
    extra = {RECIPE: ""}
    program = torch.export.load(str(path), extra_files=extra)
    if not extra[RECIPE]:
        raise ValueError(f"{path}: an exported program without {RECIPE} (not written by this pipeline's export)")
    return program.module(), json.loads(extra[RECIPE])


def preprocess(about: dict):
    """The evaluation transform (PIL image -> input tensor) the recipe describes: pipeline/models/transforms.py's;
    images of any size and colour mode (files exported before the background was recorded: white)."""
    p = about["preprocessing"]
    cfg = BackboneConfig(**{k: p[k] for k in RECIPE_KEYS})
    return eval_transform(cfg, p.get("background", "white"), p.get("input_height_width"))


def best_model(folder: Path, names: list[str]) -> tuple[str, dict]:
    """Of a run's fold x seed models (folders `names` under `folder`), the one with the best validation MAP@R (the
    first of equals, in `names` order): its name and summary."""
    summaries = {}
    for name in names:
        path = Path(folder) / name / "summary.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: not found (run the run's train stage)")
        summaries[name] = json.loads(path.read_text())
    best = max(names, key=lambda n: summaries[n]["best_val_map_at_r"])
    return best, summaries[best]


def rebuild(setup, weights: Path, download_dir: str) -> nn.Module:
    """The network run `setup` (pipeline/runs.py RunSetup) trained, with `weights` (its model.pt): in frozen
    mode the backbone the embed stage ran, put in front of the trained head, so that the network maps images, not
    cached features, to embeddings."""
    from pipeline.models.backbones import build_backbone
    from pipeline.models.embedder import run_embedder

    state = torch.load(weights, map_location="cpu", weights_only=True)
    first = next(k for k in state if k.startswith("head.") and k.endswith("weight"))
    backbone = build_backbone(setup.backbone, download_dir)
    finetuned = setup.train.mode == "finetune"
    model = run_embedder(setup, backbone if finetuned else None, state[first].shape[1])
    model.load_state_dict(state)
    if not finetuned:
        model.backbone = None if backbone is None else backbone.eval()
    return model.eval()
