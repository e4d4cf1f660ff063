"""The embedded default data set: "digit pairs" from scikit-learn's bundled digits.

docs/defaults.md. Each image puts two real 8x8 handwritten digit images
(UCI optdigits, shipped with scikit-learn) side by side, giving an 8x16
grey image; a class is an ordered digit pair (a, b), so there are up to 100
classes. The digit instances of every digit are split into two disjoint pools:
training-class images draw only from the first, test-class images only from
the second, so no handwritten instance is shared between the two halves.

Class ids are a seeded permutation of the pairs (choice documented here):
sorting pairs as 10a+b would put every pair with a >= 5 in the test half, so
the left digit of a test class would never have been seen on the left in
training. With the permutation both halves mix all digits while the classes
themselves stay disjoint, which is the DML setting (unseen classes, seen
"parts"). The MLRC split (sorted ids, first half train) then applies unchanged.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from PIL import Image
from pydantic import Field
from tqdm import tqdm

from pipeline.data.manifest import MANIFEST_NAME, DataError, build_manifest
from pipeline.datasets import Dataset, register_dataset
from pipeline.infra.schema import section

log = logging.getLogger(__name__)


def _instance_pools(targets: np.ndarray, train_fraction: float, rng: np.random.Generator):
    """Per digit, a disjoint (train-class pool, test-class pool) of instance indices."""
    pools = {}
    for digit in range(10):
        idx = rng.permutation(np.flatnonzero(targets == digit))
        cut = int(round(train_fraction * len(idx)))
        pools[digit] = (idx[:cut], idx[cut:])
    return pools


def make_digit_pairs(num_classes: int, images_per_class: int, train_fraction: float, seed: int):
    """Images (N, 8, 16) uint8, labels (N,), and the pair (a, b) of every class id."""
    from sklearn.datasets import load_digits  # here: every stage imports this record, few need scikit-learn

    digits = load_digits()
    rng = np.random.default_rng(seed)
    pools = _instance_pools(digits.target, train_fraction, rng)
    all_pairs = [(a, b) for a in range(10) for b in range(10)]
    pairs = [all_pairs[i] for i in rng.permutation(len(all_pairs))[:num_classes]]
    half = num_classes // 2  # class ids < half are training classes (class_disjoint_split)
    scale = 255.0 / digits.images.max()
    images, labels = [], []
    for label, (a, b) in enumerate(pairs):
        side = 0 if label < half else 1
        left, right = pools[a][side], pools[b][side]
        if len(left) * len(right) < images_per_class:
            raise DataError(
                f"params.yaml: data.images_per_class={images_per_class} exceeds the {len(left) * len(right)} "
                f"distinct images of class {label}"
            )
        combos = rng.choice(len(left) * len(right), size=images_per_class, replace=False)
        for c in combos:
            img = np.hstack([digits.images[left[c // len(right)]], digits.images[right[c % len(right)]]])
            images.append(np.round(img * scale).astype(np.uint8))
            labels.append(label)
    return np.stack(images), np.asarray(labels), pairs


def write_digit_pairs(
    out: Path, num_classes: int, images_per_class: int, train_fraction: float, num_folds: int, seed: int
) -> None:
    """Write PNG images and the manifest under `out` (a fresh folder)."""
    images, labels, pairs = make_digit_pairs(num_classes, images_per_class, train_fraction, seed)
    paths = [f"images/{y:03d}/{i:05d}.png" for i, y in enumerate(labels)]
    manifest = build_manifest(paths, labels, num_folds)
    for rel, img in tqdm(zip(paths, images), total=len(paths), desc="digit pairs", unit="img", disable=None):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img, mode="L").save(target)
    manifest.to_csv(out / MANIFEST_NAME, index=False)
    (out / "classes.csv").write_text(
        "label,left_digit,right_digit\n" + "".join(f"{i},{a},{b}\n" for i, (a, b) in enumerate(pairs))
    )
    log.info(
        "digit pairs: %d images, %d classes (%d train / %d test)",
        len(labels),
        num_classes,
        (manifest.split == "train").sum(),
        (manifest.split == "test").sum(),
    )


@section(kw_only=True)
class DigitPairsKeys:
    """The ``data`` keys of the digit pairs."""

    # images drawn per class (each image = two real digit images side by side)
    images_per_class: int = Field(40, ge=2)
    # fraction of each digit's instances reserved for training-class images (rest: test classes)
    train_instance_fraction: float = Field(0.5, gt=0.0, lt=1.0)
    # number of classes of the digit-pair set (at most 100 ordered pairs)
    num_classes: int = Field(100, ge=4, le=100)


def prepare(out: Path, data, folds: int, seed: int) -> None:
    write_digit_pairs(out, data.num_classes, data.images_per_class, data.train_instance_fraction, folds, seed)


register_dataset(
    Dataset(
        "digit_pairs",
        prepare,
        "the embedded default, made from scikit-learn's bundled digits; these numbers are not a reproduction of "
        "CUB / Cars196 / SOP / In-shop results",
        schema=DigitPairsKeys,
    )
)
