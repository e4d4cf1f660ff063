"""The real-image embedded default: the same emoji drawn by different artists (a stand-in for SOP / In-shop).

A class is one emoji (its CLDR short name, e.g. ``grinning-face``); its images are that emoji as drawn
in each emoji set that has it: many classes with a handful of instances each, the shape of Stanford
Online Products (22,634 classes, 5.3 images each) and In-shop, and like them the instances of a class
differ in style and detail while the classes share "parts" (faces, hands, animals, objects).

Source: the Iconify per-set packages on the npm registry (``@iconify-json/<set>``), fetched with
``npm pack NAME@VERSION`` (no other host) and checked against the SHA-256 recorded in ``EMOJI_SETS``
(also in docs/defaults.md); on a machine without npm put the .tgz files into
``data.source`` (a folder) or ``data.download_dir``/npm. Each package holds ``icons.json``: SVG bodies
by name, and aliases (another name for an icon; aliases that flip the image are left out).

Name matching (choice documented): the eleven sets below name their icons by the CLDR short name in
kebab case, so a class is a name that ``data.emoji_min_sets`` or more sets hold, directly or by a plain
alias. Streamline's numbered variants (``baby-1``, ``baby-2``) count as their base name, variant 1.
Skin-tone variants are left out (near copies of their base emoji). Firefox OS's ``fxemoji`` set (Apache
2.0) names icons by Unicode character names without separators (``aubergine`` for ``eggplant``), which
cannot be matched by name reliably, so it is not in the default. All eleven sets allow commercial use
(MIT, Apache 2.0, CC BY 4.0, CC BY-SA 4.0; see ``EMOJI_SETS``).

Rendering: resvg (``resvg_py``, the Rust renderer compiled into the wheel; no system library) draws
each SVG at ``data.render_size`` pixels square over a white background, saved as RGB PNG.

Split: class ids are a seeded permutation of the sorted class names (as for the digit pairs), so the
MLRC split (sorted ids, first half train) mixes all emoji categories into both halves while the
classes stay disjoint, as SOP's split by product does.
"""

from __future__ import annotations

import io
import json
import logging
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image
from pydantic import Field
from tqdm import tqdm

from pipeline.data.decode import without_alpha
from pipeline.data.manifest import MANIFEST_NAME, DataError, build_manifest
from pipeline.datasets import Dataset, register_dataset
from pipeline.infra.download import download_folder
from pipeline.infra.schema import section

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmojiSet:
    prefix: str  # Iconify prefix; the npm package is @iconify-json/<prefix>
    version: str
    sha256: str  # of the npm tarball
    licence: str  # SPDX id from the package's info.json
    numbered_variants: bool = False  # names carry -1, -2 ... suffixes for alternative drawings

    @property
    def package(self) -> str:
        return f"@iconify-json/{self.prefix}"

    @property
    def filename(self) -> str:  # what `npm pack` writes
        return f"iconify-json-{self.prefix}-{self.version}.tgz"


EMOJI_SETS = {
    s.prefix: s
    for s in (
        EmojiSet("noto", "1.2.9", "3e918d88fc945c0bb3d468dbace6f88caef67f01c9f0e7bcae0915a042e8f1ad", "Apache-2.0"),
        EmojiSet("noto-v1", "1.2.5", "2bf62c26c2c2884aa99e90aec942cdaee17a5921f05690694f4978ad4b017c37", "Apache-2.0"),
        EmojiSet("twemoji", "1.2.5", "19046dff7d8707ce96212ec86468b36ac5f8e60409629dd13f809265c6d0ebb7", "CC-BY-4.0"),
        EmojiSet(
            "openmoji", "1.2.29", "03181e2c156cab35cf4a62f1f7886bd971d59212e75ac3f189d5a4cae3930fc5", "CC-BY-SA-4.0"
        ),
        EmojiSet("fluent-emoji", "1.2.7", "8044210dbf11e016d4de85f15d01a243423bd832457e7e2491df1b751c0e272b", "MIT"),
        EmojiSet(
            "fluent-emoji-flat", "1.2.6", "7d064769dee690815f823bc5bcc511d957198caf9f5edd8dd9c1aa48a6aeb175", "MIT"
        ),
        EmojiSet(
            "fluent-emoji-high-contrast",
            "1.2.6",
            "0b92d48c90d2200bd499e3cdd09a127ca6a8c8ddefd34c35eb5a1e4994012ae0",
            "MIT",
        ),
        EmojiSet("emojione", "1.2.3", "26a14f44284407e8bcde91799388dca2bfd91dbcd55a97f425524a1c5b73610e", "CC-BY-4.0"),
        EmojiSet(
            "emojione-v1", "1.2.3", "6641d59d48a42823fdc2b84e7427e9f302944eb98d2c7d94d6e67c139e7b37b3", "CC-BY-SA-4.0"
        ),
        EmojiSet(
            "emojione-monotone",
            "1.2.1",
            "40b90004bafb406b59266155ef9b7e1dd67bf2947fc8db8d07388776f4d0d04e",
            "CC-BY-4.0",
        ),
        EmojiSet(
            "streamline-emojis",
            "1.2.4",
            "5dac87c876b322500989828c5823143e0100d78881627a2e4081a4b897cbfdbc",
            "CC-BY-4.0",
            numbered_variants=True,
        ),
    )
}
SKIN_TONE = re.compile(r"skin-tone|tone-?\d")
VARIANT = re.compile(r"^(.*)-(\d+)$")


def fetch_emoji_set(spec: EmojiSet, cache: Path, source: str = "") -> Path:
    """The set's npm tarball: from `source` (a folder) or `cache`, else `npm pack` into `cache`; SHA-256 checked."""
    from pipeline.infra.download import fetch_with_client, verify
    from pipeline.infra.userdirs import cache_dir

    expected = f"sha256:{spec.sha256}"
    if not source:  # npm's own cache in the project's cache folder: a missing or read-only $HOME does not matter
        command = ["npm", "pack", "--silent", "--cache", str(cache_dir("npm")), f"{spec.package}@{spec.version}"]
        return fetch_with_client(Path(cache) / spec.filename, command, expected)
    path = Path(source) / spec.filename
    if not path.exists():
        raise DataError(f"{path}: not found (data.source names a folder without {spec.package} {spec.version})")
    return verify(path, expected, remove=False)  # the user's file stays


def read_icon_set(tarball: Path) -> dict:
    """The package's icons.json (Iconify JSON: prefix, icons, aliases, default width/height)."""
    with tarfile.open(tarball) as archive:
        try:
            return json.load(archive.extractfile("package/icons.json"))
        except KeyError:
            raise DataError(f"{tarball}: has no package/icons.json") from None


def _variant_key(name: str) -> tuple[str, int]:
    """(base name, variant number): ``baby-2`` -> (``baby``, 2); a name without a number is variant 0."""
    match = VARIANT.match(name)
    return (match.group(1), int(match.group(2))) if match else (name, 0)


def named_icons(icon_set: dict, numbered_variants: bool = False) -> dict[str, str]:
    """Class name -> icon name within one set: icons and plain aliases (no flips), skin tones left out;
    with `numbered_variants`, ``x-1`` stands for ``x`` (the lowest number wins)."""
    icons, aliases = icon_set.get("icons", {}), icon_set.get("aliases", {})
    names = {name: name for name in icons}
    names.update(
        {
            alias: spec["parent"]
            for alias, spec in aliases.items()
            if set(spec) == {"parent"} and spec["parent"] in icons and alias not in icons
        }
    )
    if numbered_variants:
        numbered: dict[str, str] = {}
        for name in sorted(names, key=_variant_key):
            numbered.setdefault(_variant_key(name)[0], names[name])
        names = numbered
    return {name: icon for name, icon in names.items() if not SKIN_TONE.search(name)}


def select_classes(sets: dict[str, dict[str, str]], min_sets: int) -> list[str]:
    """Sorted class names that at least `min_sets` of the sets hold."""
    counts: dict[str, int] = {}
    for names in sets.values():
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    return sorted(name for name, c in counts.items() if c >= min_sets)


def icon_svg(icon_set: dict, icon: str, size: int) -> str:
    """A standalone SVG document of one icon drawn `size` pixels square (Iconify JSON's viewBox rules)."""
    spec = icon_set["icons"][icon]
    left, top = spec.get("left", icon_set.get("left", 0)), spec.get("top", icon_set.get("top", 0))
    width = spec.get("width", icon_set.get("width", 16))
    height = spec.get("height", icon_set.get("height", 16))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'viewBox="{left} {top} {width} {height}" width="{size}" height="{size}">{spec["body"]}</svg>'
    )


def render_svg(svg: str, size: int) -> Image.Image:
    """RGB image of `svg` at `size` x `size` over white (resvg)."""
    import resvg_py

    png = resvg_py.svg_to_bytes(svg_string=svg, width=size, height=size)
    with Image.open(io.BytesIO(bytes(png))) as im:
        return without_alpha(im, "white").convert("RGB")


def write_emoji(
    out: Path, set_names: list[str], min_sets: int, size: int, num_folds: int, seed: int, cache: Path, source: str = ""
) -> None:
    """Fetch the sets, pick the classes, render one image per (class, set) and write the manifest under `out`."""
    unknown = [s for s in set_names if s not in EMOJI_SETS]
    if unknown:
        raise DataError(f"params.yaml: data.emoji_sets: unknown set {unknown[0]!r} (valid: {', '.join(EMOJI_SETS)})")
    if min_sets > len(set_names):
        raise DataError(
            f"params.yaml: data.emoji_min_sets={min_sets} exceeds the {len(set_names)} sets in data.emoji_sets"
        )
    icon_sets = {s: read_icon_set(fetch_emoji_set(EMOJI_SETS[s], cache, source)) for s in set_names}
    names = {s: named_icons(icon_sets[s], EMOJI_SETS[s].numbered_variants) for s in set_names}
    classes = select_classes(names, min_sets)
    if len(classes) < 2 * num_folds:
        raise DataError(
            f"params.yaml: data.emoji_min_sets={min_sets} leaves {len(classes)} emoji classes, "
            f"too few for {num_folds} folds and a test half"
        )
    order = np.random.default_rng(seed).permutation(len(classes))  # class id of classes[order[k]] is k
    labelled = [classes[i] for i in order]
    paths, labels, rows = [], [], []
    for label, name in enumerate(labelled):
        for s in set_names:
            if name in names[s]:
                paths.append(f"images/{label:04d}/{s}.png")
                labels.append(label)
                rows.append((s, names[s][name]))
    manifest = build_manifest(paths, np.asarray(labels), num_folds)
    for rel, (s, icon) in tqdm(list(zip(paths, rows)), desc="rendering emoji", unit="img", disable=None):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        render_svg(icon_svg(icon_sets[s], icon, size), size).save(target)
    manifest.to_csv(out / MANIFEST_NAME, index=False)
    with open(out / "classes.csv", "w") as f:
        f.write("label,name,sets\n")
        for label, name in enumerate(labelled):
            f.write(f"{label},{name},{' '.join(s for s in set_names if name in names[s])}\n")
    log.info(
        "emoji: %d images, %d classes (%d train / %d test images) from %d sets",
        len(labels),
        len(classes),
        (manifest.split == "train").sum(),
        (manifest.split != "train").sum(),
        len(set_names),
    )


@section(kw_only=True)
class EmojiKeys:
    """The ``data`` keys of the emoji set."""

    # the Iconify emoji sets drawn (one image per set per class), the number of them that must hold an emoji for it
    # to be a class, and the rendered image side in pixels
    emoji_sets: list[Literal[tuple(EMOJI_SETS)]] = field(default_factory=lambda: list(EMOJI_SETS))
    emoji_min_sets: int = Field(8, ge=2)
    render_size: int = Field(224, ge=16)


def prepare(out: Path, data, folds: int, seed: int) -> None:
    cache = download_folder(data.download_dir) / "npm"
    write_emoji(out, data.emoji_sets, data.emoji_min_sets, data.render_size, folds, seed, cache, data.source)


register_dataset(
    Dataset(
        "emoji",
        prepare,
        "the real-image default: emoji drawn by different artists' sets, an SOP-shaped stand-in; these numbers are "
        "not a reproduction of CUB / Cars196 / SOP / In-shop results",
        schema=EmojiKeys,
    )
)
