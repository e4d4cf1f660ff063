"""ClassBatchSampler: classes x images per batch, seeded, chooser contract."""

import numpy as np
import pytest

from pipeline.batching.samplers import ClassBatchSampler

LABELS = np.repeat(np.arange(6), [5, 5, 5, 5, 5, 2])  # class 5 is smaller than images_per_class


def test_every_batch_has_the_classes_and_images_asked_for():
    sampler = ClassBatchSampler(LABELS, classes_per_batch=3, images_per_class=4, steps=50, seed=0)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 50
    for batch in batches:
        classes, counts = np.unique(LABELS[batch], return_counts=True)
        assert len(classes) == 3 and (counts == 4).all()
    seen = np.unique(LABELS[np.concatenate(batches)])
    assert seen.tolist() == list(range(6))  # class 5 drawn with replacement, not skipped


def test_same_seed_same_batches():
    def draw(seed):
        return list(ClassBatchSampler(LABELS, 2, 2, 5, seed=seed))

    assert draw(1) == draw(1)
    assert draw(1) != draw(2)


def test_chooser_decides_the_classes_and_is_checked():
    sampler = ClassBatchSampler(LABELS, 2, 2, 3, seed=0, choose_classes=lambda rng, n: np.array([4, 1]))
    for batch in sampler:
        assert LABELS[batch].tolist()[:2] == [4, 4] and set(LABELS[batch]) == {1, 4}
    bad = ClassBatchSampler(LABELS, 2, 2, 1, seed=0, choose_classes=lambda rng, n: np.array([3, 3]))
    with pytest.raises(ValueError, match="not 2 distinct classes"):
        list(bad)
    with pytest.raises(ValueError, match="classes_per_batch=7 exceeds the 6 classes"):
        ClassBatchSampler(LABELS, 7, 2, 1, seed=0)
