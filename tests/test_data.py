import numpy as np
import pytest
from sklearn.datasets import load_digits

from pipeline.data.manifest import DataError, build_manifest, fold_of_class, read_manifest
from pipeline.datasets.digit_pairs import make_digit_pairs


def test_folds_are_contiguous_class_blocks_in_label_order():
    folds = fold_of_class(np.arange(10, 20), 4)  # np.linspace(0, 10, 5) -> 0, 2, 5, 7, 10
    assert [folds[c] for c in range(10, 20)] == [0, 0, 1, 1, 1, 2, 2, 3, 3, 3]


def test_manifest_split_and_folds():
    labels = np.repeat(np.arange(8), 3)[::-1]  # order of rows must not matter
    m = build_manifest([f"{i}.png" for i in range(len(labels))], labels, num_folds=2)
    train = m[m.split == "train"]
    assert set(train.label) == {0, 1, 2, 3} and set(m[m.split == "test"].label) == {4, 5, 6, 7}
    assert (m[m.split == "test"].fold == -1).all()
    assert train.groupby("label").fold.nunique().eq(1).all()  # a class lives in one fold
    assert dict(train.groupby("label").fold.first()) == {0: 0, 1: 0, 2: 1, 3: 1}


def test_a_folds_training_and_validation_classes_part_the_training_classes(tiny_data):
    """Manifest.num_classes: L of each fold's training part (PROFS's p(y), pipeline/studies/values.py) and of its validation
    part add up to the training split's classes, a class in one part only."""
    manifest, _ = tiny_data
    folds = sorted(set(manifest.table.fold) - {-1})
    total = manifest.num_classes("train")
    assert total == len(set(manifest.labels[manifest.rows("train")])) and len(folds) > 1
    for fold in folds:
        assert manifest.num_classes("train", fold) + manifest.num_classes("train", fold, validation=True) == total
        assert 0 < manifest.num_classes("train", fold) < total


def test_class_with_one_image_is_refused():
    with pytest.raises(DataError, match="class 5 has 1 image"):
        build_manifest(["a", "b", "c", "d", "e"], np.array([1, 1, 2, 2, 5]), num_folds=1)


def test_digit_pairs_deterministic_and_made_of_real_digits():
    a = make_digit_pairs(10, 5, 0.5, seed=3)
    b = make_digit_pairs(10, 5, 0.5, seed=3)
    c = make_digit_pairs(10, 5, 0.5, seed=4)
    assert np.array_equal(a[0], b[0]) and a[2] == b[2]
    assert not np.array_equal(a[0], c[0])
    images, labels, pairs = a
    assert images.shape == (50, 8, 16) and np.bincount(labels).tolist() == [5] * 10
    digits = load_digits()
    scaled = np.round(digits.images * 255.0 / 16).astype(np.uint8)
    for img, y in zip(images, labels):
        left_digit, right_digit = pairs[y]
        assert any(np.array_equal(img[:, :8], s) for s in scaled[digits.target == left_digit])
        assert any(np.array_equal(img[:, 8:], s) for s in scaled[digits.target == right_digit])


def test_digit_instances_not_shared_between_train_and_test_classes():
    images, labels, _ = make_digit_pairs(20, 30, 0.5, seed=0)
    halves = [set(), set()]
    for img, y in zip(images, labels):
        side = 0 if y < 10 else 1
        halves[side].update({img[:, :8].tobytes(), img[:, 8:].tobytes()})
    assert not halves[0] & halves[1]


def test_prepared_tree_matches_manifest(tiny_data):
    manifest, features = tiny_data
    assert all(manifest.image_path(i).is_file() for i in range(len(manifest.table)))
    assert np.array_equal(features.labels, manifest.labels)
    assert features.features.shape == (len(manifest.table), 8 * 16)
    again = read_manifest(manifest.root)
    assert again.table.equals(manifest.table)


def test_missing_manifest_is_clear(tmp_path):
    with pytest.raises(DataError, match="manifest not found"):
        read_manifest(tmp_path)
