"""The pictures stage's pieces: fixed queries, their neighbours marked right or wrong, and seeded figures."""

from pathlib import Path

import numpy as np
from PIL import Image

from pipeline.reporting import pictures


def _images(tmp_path, n):
    paths = []
    for i in range(n):
        path = tmp_path / f"{i}.png"
        Image.new("RGBA", (20, 12), (10 * i % 255, 0, 0, 128)).save(path)
        paths.append(path)
    return paths


def test_queries_are_the_first_image_of_classes_drawn_by_seed():
    labels = np.array([3, 1, 3, 2, 1, 2, 0, 0])
    rows = pictures.query_rows(labels, 2, seed=0)
    assert list(rows) == list(pictures.query_rows(labels, 2, seed=0))  # fixed: the same for every run
    drawn = pictures.drawn_classes(labels, 2, seed=0)
    assert list(labels[rows]) == list(drawn) and all(r == np.flatnonzero(labels == labels[r])[0] for r in rows)
    assert list(pictures.drawn_classes(labels, 10, seed=0)) == [0, 1, 2, 3]  # all when fewer


def test_neighbours_exclude_the_query_and_are_marked_by_class():
    # two tight classes far apart, and one item of class 1 placed inside class 0
    x = np.array([[0, 0], [0, 0.1], [0.1, 0], [10, 10], [10, 10.1], [0.05, 0.05]], dtype=np.float32)
    labels = np.array([0, 0, 0, 1, 1, 1])
    top, right = pictures.retrieved(x, labels, np.array([0, 3]), k=3)
    assert 0 not in top[0] and 3 not in top[1]
    assert set(top[0]) == {1, 2, 5} and list(right[0][top[0] == 5]) == [False]
    assert right[0].sum() == 2 and top[1][0] == 4 and right[1][0]


def test_a_query_gallery_split_retrieves_from_the_gallery_only():
    """In-shop's split: queries come from the query rows and their neighbours from the gallery, as the metrics rank."""
    x = np.array([[0, 0], [0, 0.01], [0, 0.2], [5, 5], [5, 5.01], [5, 5.3]], dtype=np.float32)
    labels = np.array([0, 0, 0, 1, 1, 1])
    query = np.array([True, True, False, True, False, False])
    rows = pictures.query_rows(labels, 2, seed=0, candidates=query)
    assert list(rows) == [0, 3]
    top, right = pictures.retrieved(x, labels, rows, k=2, gallery=~query)
    assert [list(t) for t in top] == [[2, 4], [4, 5]]  # row 1, the nearest to row 0, is a query: not in the gallery
    assert [list(r) for r in right] == [[True, False], [True, True]]


def test_figures_are_written_and_the_same_bytes_twice(tmp_path):
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(6), 8)
    x = (rng.normal(size=(48, 8)) + 4 * np.eye(8)[labels % 8]).astype(np.float32)
    file = tmp_path / "test_embeddings.npz"
    np.savez(file, embeddings=x, labels=labels)
    images = _images(tmp_path, 48)
    names = {i: f"class {i}" for i in range(6)}
    for out in ("a", "b"):
        pictures.run_pictures(("ms", "MS (ms)", file, images, names, str(tmp_path / out), 3, 4, 4, 0, "white"))
    for kind in ("retrieval", "maps"):
        a, b = (tmp_path / out / kind / "ms.png" for out in ("a", "b"))
        assert a.stat().st_size > 2_000 and a.read_bytes() == b.read_bytes()


def test_class_names_from_the_prepared_data(tmp_path):
    (tmp_path / "classes.csv").write_text("label,left_digit,right_digit\n0,6,8\n1,2,9\n")
    assert pictures.class_names(tmp_path) == {0: "digits 68", 1: "digits 29"}
    (tmp_path / "classes.csv").write_text("label,name,sets\n0,card-index,noto\n")
    assert pictures.class_names(tmp_path) == {0: "card-index"}
    assert pictures.class_names(tmp_path / "none") == {}


def test_the_search_picture_shows_the_misses_first_and_counts_as_the_console_does(monkeypatch, tmp_path):
    """`dml search --picture`: queries whose first match lies in another folder come first (command-line order
    within each group), and the heading counts first matches as the console line does."""
    from pipeline.cli import search_picture

    drawn = {}
    monkeypatch.setattr(pictures, "retrieval_figure", lambda *args, **kw: drawn.update(args=args, kw=kw))
    queries = ([Path(f"q{i}.png") for i in range(5)], ["a", "b", "c", "d", "e"])
    gallery = ([Path(f"g{i}.png") for i in range(5)], ["a", "b", "c", "d", "e"])
    found = np.array([[0, 1], [2, 1], [2, 0], [0, 3], [4, 0]])
    same = np.array([[g == q for g in (gallery[1][j] for j in row)] for q, row in zip(queries[1], found)])
    what = search_picture(
        queries, gallery, found, same, {"run": "ms", "model": "m", "preprocessing": {}}, tmp_path / "p.png", rows=3
    )
    assert what == "3 queries, the 2 misses first; 3 of 5 first matches in a folder of the query's name"
    images = drawn["args"][1]
    assert [p.name for p in images[:3]] == ["q1.png", "q3.png", "q0.png"]  # the misses q1, q3, then q0
    assert drawn["args"][5].tolist() == [[5, 4], [3, 6], [3, 4]]  # their gallery rows after the 3 queries
    assert drawn["kw"]["heading"] == what and drawn["args"][8] == "white"  # a recipe without one: white


def test_long_class_names_are_drawn_whole_or_shortened_in_the_middle(monkeypatch, tmp_path):
    """`dml search --picture` drew "missed_video_cal" for "missed_video_call"."""
    drawn = {}
    monkeypatch.setattr(pictures, "save", lambda fig, *a, **k: drawn.update(fig=fig))
    names = {0: "missed_video_call_from_a_friend", 1: "x" * 30 + "_the_end_of_a_very_long_class_name"}
    pictures.retrieval_figure(
        "ms",
        _images(tmp_path, 2),
        np.array([0, 1]),
        names,
        np.array([0]),
        np.array([[1]]),
        None,
        tmp_path / "p.png",
        "white",
    )
    query, neighbour = (ax.get_title().replace("\n", "") for ax in drawn["fig"].axes)
    assert query == "query: missed_video_call_from_a_friend"
    assert neighbour == "x" * 19 + "…" + "of_a_very_long_class_name"[-20:] and len(neighbour) == 40
    assert pictures.cell_label("missed_video_call") == "missed_video_call"
    assert pictures.cell_label("query: missed_video_call") == "query: missed_video_\ncall"
