"""Class-balanced batch sampling with its own seeded generator, whose classes a method may choose.

A batch holds ``classes_per_batch`` distinct classes with ``images_per_class``
images each (drawn without replacement, with replacement only for a class
smaller than that), class after class. Which classes is up to
``choose_classes(rng, n)`` (PROFS HNCM); the default draws them uniformly without
replacement. With ``representatives`` (PROFS, the authors' sampler) each class's
first image is its current representative and only ``images_per_class - 1`` are
drawn, so the batch keeps its size. Batches are drawn lazily, one at a time, so
a chooser or representative set that changes with training is seen at the next
batch; with DataLoader workers it is at most ``num_workers x prefetch_factor``
batches old.

The training loop uses this sampler for every method, seeded per (seed, fold,
replicate seed) and not per method: the runs a claim compares see the same
batches until their methods make them differ (common random numbers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from torch.utils.data import Sampler

ClassChooser = Callable[[np.random.Generator, int], np.ndarray]
Representatives = Callable[[], np.ndarray]  # the dataset row of every class's representative


def rows_per_class(labels: np.ndarray) -> list[np.ndarray]:
    """The dataset rows of each class 0..C-1 (labels are remapped to that range)."""
    labels = np.asarray(labels)
    return [np.flatnonzero(labels == c) for c in range(int(labels.max()) + 1)]


def random_classes(num_classes: int) -> ClassChooser:
    """`n` classes uniformly at random, without replacement."""
    return lambda rng, n: rng.choice(num_classes, size=n, replace=False)


class ClassBatchSampler(Sampler[list[int]]):
    """`steps` batches of `classes_per_batch` x `images_per_class` dataset indices, class-major."""

    def __init__(
        self,
        labels: np.ndarray,
        classes_per_batch: int,
        images_per_class: int,
        steps: int,
        seed: int,
        choose_classes: ClassChooser | None = None,
        representatives: Representatives | None = None,
    ):
        self.rows = rows_per_class(labels)
        self.sizes = np.array([len(r) for r in self.rows])
        self.table = np.zeros((len(self.rows), self.sizes.max()), dtype=np.int64)  # class -> its rows, padded
        for c, r in enumerate(self.rows):
            self.table[c, : len(r)] = r
        if classes_per_batch > len(self.rows):
            raise ValueError(f"classes_per_batch={classes_per_batch} exceeds the {len(self.rows)} classes")
        self.classes_per_batch, self.images_per_class, self.steps = classes_per_batch, images_per_class, steps
        if representatives is not None and images_per_class < 2:
            raise ValueError("a batch with representatives needs images_per_class >= 2")
        self.rng = np.random.default_rng(seed)
        self.choose_classes = choose_classes or random_classes(len(self.rows))
        self.representatives = representatives

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[list[int]]:
        for _ in range(self.steps):
            classes = np.asarray(self.choose_classes(self.rng, self.classes_per_batch))
            if len(classes) != self.classes_per_batch or len(np.unique(classes)) != len(classes):
                raise ValueError(
                    f"the class chooser returned {classes.tolist()}, not {self.classes_per_batch} distinct classes"
                )
            if self.representatives is None:
                yield self._images(classes, self.images_per_class).ravel().tolist()
                continue
            # PROFS: the representative replaces one example of its class (the authors' sampler)
            reps = np.asarray(self.representatives())[classes]
            yield np.column_stack([reps, self._images(classes, self.images_per_class - 1)]).ravel().tolist()

    def _images(self, classes: np.ndarray, k: int) -> np.ndarray:
        """k rows of each class, all classes in one draw: the positions with the smallest random keys
        (without replacement); uniform positions (with replacement) for a smaller class."""
        sizes = self.sizes[classes]
        keys = self.rng.random((len(classes), self.table.shape[1]))
        keys[np.arange(self.table.shape[1]) >= sizes[:, None]] = np.inf
        picks = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < keys.shape[1] else np.argsort(keys, axis=1)[:, :k]
        small = sizes < k
        if small.any():
            picks[small] = (self.rng.random((int(small.sum()), k)) * sizes[small, None]).astype(np.int64)
        return self.table[classes[:, None], picks]


class RandomClassBatchSampler(Sampler[list[int]]):
    """`steps` batches of `batch_size` images, each from a class drawn uniformly at random (with
    replacement), so a batch holds a random number of images per class (Revisiting's random-class
    batches: images of a class drawn without replacement within a batch where the class has enough)."""

    def __init__(self, labels: np.ndarray, batch_size: int, steps: int, seed: int):
        self.rows = rows_per_class(labels)
        self.batch_size, self.steps = batch_size, steps
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[list[int]]:
        for _ in range(self.steps):
            classes, counts = np.unique(self.rng.integers(len(self.rows), size=self.batch_size), return_counts=True)
            yield [
                int(i)
                for c, k in zip(classes, counts)
                for i in self.rng.choice(self.rows[c], size=k, replace=len(self.rows[c]) < k)
            ]
