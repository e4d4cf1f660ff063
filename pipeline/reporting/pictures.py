"""What a model retrieves, as pictures: a query / top-k grid and a 2-D map of the test embeddings, per run.

Both use one model per run, the first fold and the first seed (``fold-0-seed-<experiment.seeds[0]>``), and the
same test images for every run, so the pictures of two runs compare like with like:
- the queries are the first test image (manifest order) of each of `queries` test classes drawn with the
  params' seed; their neighbours come from the same exact kNN as the metrics (pipeline/evaluation/knn.py);
- the map is t-SNE (scikit-learn, seeded, one thread: the same points on every machine with the pinned
  numerics) of every test image of `map_classes` classes drawn with the seed, each class one colour.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from pipeline.data.decode import without_alpha  # noqa: E402
from pipeline.evaluation.knn import nearest_neighbours  # noqa: E402
from pipeline.reporting.figures import save  # noqa: E402

RIGHT, WRONG = "#1a9850", "#d73027"
PICTURE_DPI, PICTURE_COLORS = 100, 96  # palette PNGs: small in git, the same bytes everywhere
LABEL_WIDTH = 20  # characters of a 6-point label line that fit a grid cell's width (1.15 inch)


def drawn_classes(labels: np.ndarray, count: int, seed: int) -> np.ndarray:
    """`count` of the test classes (all when fewer), drawn with `seed`, in sorted order."""
    classes = np.unique(labels)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(classes, size=min(count, len(classes)), replace=False))


def query_rows(labels: np.ndarray, count: int, seed: int, candidates: np.ndarray | None = None) -> np.ndarray:
    """The fixed queries: the first row of each drawn class, among the `candidates` rows (a mask; all by default)."""
    pool = np.arange(len(labels)) if candidates is None else np.flatnonzero(candidates)
    return np.array([int(pool[labels[pool] == c][0]) for c in drawn_classes(labels[pool], count, seed)])


def retrieved(
    embeddings: np.ndarray, labels: np.ndarray, queries: np.ndarray, k: int, gallery: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The top-k neighbours of each query and whether each shares the query's class: among the other test rows,
    or, with a `gallery` mask (In-shop's query / gallery split, as the metrics rank it), among the gallery rows."""
    if gallery is None:
        neighbours, _ = nearest_neighbours(embeddings, min(k, len(labels) - 1))
        top = neighbours[queries]
    else:
        rows = np.flatnonzero(gallery)
        found, _ = nearest_neighbours(embeddings[rows], min(k, len(rows)), queries=embeddings[queries])
        top = rows[found]
    return top, labels[top] == labels[queries][:, None]


def _thumbnail(path: Path, background: str, side: int = 64) -> np.ndarray:
    with Image.open(path) as image:
        rgb = without_alpha(image, background).convert("RGB")
        if max(rgb.size) > side:  # shrink large images; small ones (digit pairs) keep their pixels
            rgb = rgb.resize((side, side), Image.Resampling.LANCZOS)
        return np.asarray(rgb)


def cell_label(text: str, width: int = LABEL_WIDTH, lines: int = 2) -> str:
    """`text` in lines of `width` characters, at most `lines` of them; a longer text keeps its start and end
    around an ellipsis (class names often differ at the end: ``missed_video_call``, ``missed_video_chat``)."""
    room = width * lines
    if len(text) > room:
        head = (room - 1) // 2
        text = text[:head] + "…" + text[len(text) - (room - 1 - head) :]
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def retrieval_figure(
    title: str,
    images: list[Path],
    labels: np.ndarray,
    names: dict[int, str],
    queries: np.ndarray,
    top: np.ndarray,
    right: np.ndarray | None,
    path: Path,
    background: str,
    heading: str | None = None,
) -> None:
    """One row per query: the query, then its neighbours framed green (same class) or red (another class); grey
    when `right` is None (no classes known). `heading`: the title's second line (default: how many of the
    fixed test queries' top-k neighbours are right). Transparent images are shown over `background`, as the
    model saw them."""
    rows, k = top.shape
    fig, axes = plt.subplots(rows, k + 1, figsize=(1.15 * (k + 1), 1.3 * rows), squeeze=False)
    for r, q in enumerate(queries):
        marks = [None] * k if right is None else [bool(ok) for ok in right[r]]
        cells = [(q, None)] + [(int(n), ok) for n, ok in zip(top[r], marks)]
        for c, (row, ok) in enumerate(cells):
            ax = axes[r, c]
            ax.imshow(_thumbnail(images[row], background), interpolation="nearest", aspect="auto")
            ax.set_xticks([])
            ax.set_yticks([])
            colour = "black" if c == 0 else "grey" if ok is None else (RIGHT if ok else WRONG)
            for spine in ax.spines.values():
                spine.set_edgecolor(colour)
                spine.set_linewidth(1.5 if ok is None else 4)
            mark = "query: " if c == 0 else ("✗ " if ok is False else "")
            ax.set_title(cell_label(mark + names.get(int(labels[row]), str(labels[row]))), fontsize=6, color=colour)
    if right is None:
        heading = f"{title}: top-{k} of {rows} queries (no classes known)"
    elif heading is None:
        heading = (
            f"{title}: top-{k} of {rows} fixed test queries\n(green: same class, red: another class; "
            f"{int(right.sum())} of {right.size} right)"
        )
    else:
        heading = f"{title}: top-{k} (green: same class, red: another class)\n{heading}"
    fig.suptitle(heading, fontsize=9)
    save(fig, path, rect=(0, 0, 1, 0.96), dpi=PICTURE_DPI, colors=PICTURE_COLORS)


def embedding_map(
    embeddings: np.ndarray, labels: np.ndarray, classes: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """2-D t-SNE coordinates of every test image of `classes`, and their labels."""
    from sklearn.manifold import TSNE

    rows = np.flatnonzero(np.isin(labels, classes))
    x = embeddings[rows].astype(np.float64)
    perplexity = float(min(30.0, (len(rows) - 1) / 3))
    tsne = TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed, n_jobs=1)
    return tsne.fit_transform(x), labels[rows]


def map_figure(title: str, points: np.ndarray, labels: np.ndarray, names: dict[int, str], path: Path) -> None:
    """The t-SNE map, one colour and one legend entry per class."""
    classes = np.unique(labels)
    cmap = plt.get_cmap("tab20" if len(classes) > 10 else "tab10")
    fig, ax = plt.subplots(figsize=(7, 5))
    for i, c in enumerate(classes):
        at = labels == c
        ax.scatter(points[at, 0], points[at, 1], s=18, color=cmap(i % cmap.N), label=names.get(int(c), str(c))[:22])
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7, frameon=False)
    ax.set_title(f"{title}: t-SNE of the test embeddings of {len(classes)} classes ({len(labels)} images)", fontsize=9)
    save(fig, path, dpi=PICTURE_DPI, colors=PICTURE_COLORS)


def class_names(prepared: Path) -> dict[int, str]:
    """Readable class names from the prepared data's classes.csv (emoji names, digit pairs), else none."""
    import pandas as pd

    path = Path(prepared) / "classes.csv"
    if not path.is_file():
        return {}
    table = pd.read_csv(path)
    if "name" in table:
        return dict(zip(table["label"], table["name"].astype(str)))
    if {"left_digit", "right_digit"} <= set(table.columns):
        return {int(r.label): f"digits {r.left_digit}{r.right_digit}" for r in table.itertuples()}
    return {}


def run_pictures(job: tuple) -> None:
    """Both pictures of one run: job = (name, title, embeddings file, test image paths, class names, out folder,
    queries, neighbours k, map classes, seed, background)."""
    from pipeline.infra.io import read_npz

    name, title, file, images, names, out, queries, k, map_classes, seed, background = job
    z = read_npz(file, ("embeddings", "labels"), f"run the train stage of {name} again")
    x, labels = z["embeddings"], z["labels"]
    if len(images) != len(labels):
        raise ValueError(f"{file}: {len(labels)} test embeddings for {len(images)} test images of the manifest")
    query = z.get("query")
    split = query is not None and bool(query.any())  # In-shop: queries ranked against the gallery
    rows = query_rows(labels, queries, seed, query if split else None)
    top, right = retrieved(x, labels, rows, k, ~query if split else None)
    picture = Path(out) / "retrieval" / f"{name}.png"
    retrieval_figure(title, images, labels, names, rows, top, right, picture, background)
    points, point_labels = embedding_map(x, labels, drawn_classes(labels, map_classes, seed + 1), seed)
    map_figure(title, points, point_labels, names, Path(out) / "maps" / f"{name}.png")
