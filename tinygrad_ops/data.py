"""Small real data sets from installed packages (no downloads), a train/test split, and a
seeded, shuffling batch iterator.

The data sets come from scikit-learn, so the engine itself depends on numpy alone
(`pip install tinygrad_ops[train]` brings scikit-learn). The digits are read straight
from the file scikit-learn ships, without importing it (importing scikit-learn, which
imports scipy, takes about a second: longer than training on the digits); the moons are
made by scikit-learn, imported when they are asked for.
"""

from __future__ import annotations

import gzip
import importlib.util
import os

import numpy as np

from .tensor import Tensor

DATASETS = ("digits", "moons")


def _sklearn_datasets():
    try:
        from sklearn import datasets
    except ImportError:
        raise ImportError(
            "the data sets come from scikit-learn, which is not installed: "
            "pip install 'tinygrad_ops[train]' (or pip install scikit-learn)"
        ) from None
    return datasets


def load_digits():
    """The 8x8 handwritten digits bundled with scikit-learn (1,797 images, 10 classes):
    features (1797, 64) float32 scaled to [0, 1], labels (1797,) int64.

    >>> features, labels = load_digits()
    >>> features.shape, labels.shape, int(labels.max())
    ((1797, 64), (1797,), 9)
    """
    path = bundled_digits_file()
    if path is None:  # (a scikit-learn laid out otherwise, or none: its own loader says)
        digits = _sklearn_datasets().load_digits()
        pixels, labels = digits.data, digits.target
    else:
        # What scikit-learn's load_digits does with the file: np.loadtxt, the last column
        # the label.
        with gzip.open(path, "rt", encoding="utf-8") as file:
            table = np.loadtxt(file, delimiter=",")
        pixels, labels = table[:, :-1], table[:, -1].astype(int)
    features = (pixels / 16.0).astype(np.float32)  # pixel intensities are 0..16
    return features, labels.astype(np.int64)


def bundled_digits_file():
    """The path of the digits file scikit-learn installs (datasets/data/digits.csv.gz),
    found without importing scikit-learn; None when it is not there."""
    try:
        spec = importlib.util.find_spec("sklearn")  # (locates the package, runs nothing)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, "datasets", "data", "digits.csv.gz")
        if os.path.isfile(path):
            return path
    return None


def make_moons(n_samples=500, noise=0.2, seed=0):
    """Two interleaving half circles in 2-D (scikit-learn's make_moons), a classic toy
    problem that a linear model cannot solve: features (n, 2) float32, labels (n,) int64.

    >>> features, labels = make_moons(100, seed=0)
    >>> features.shape, sorted(set(labels.tolist()))
    ((100, 2), [0, 1])
    """
    features, labels = _sklearn_datasets().make_moons(
        n_samples=n_samples, noise=noise, random_state=seed
    )
    return features.astype(np.float32), labels.astype(np.int64)


def load_dataset(name, seed=0):
    """(features, labels) of a data set by name: "digits" or "moons".

    >>> load_dataset("moons")[0].shape
    (500, 2)
    """
    if name == "digits":
        return load_digits()
    if name == "moons":
        return make_moons(seed=seed)
    raise ValueError(f"unknown data set {name!r}; choose one of {', '.join(DATASETS)}")


def train_test_split(features, labels, test_fraction=0.2, seed=0):
    """Shuffle with `seed` and split into (train_x, test_x, train_y, test_y), keeping each
    class's share the same in both parts (a stratified split).

    >>> x = np.arange(20, dtype=np.float32).reshape(10, 2)
    >>> y = np.array([0, 1] * 5)
    >>> train_x, test_x, train_y, test_y = train_test_split(x, y, 0.2, seed=0)
    >>> train_x.shape, test_x.shape, sorted(test_y.tolist())
    ((8, 2), (2, 2), [0, 1])
    """
    if len(features) != len(labels):
        raise ValueError(f"train_test_split: {len(features)} feature rows but {len(labels)} labels")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    generator = np.random.default_rng(seed)
    test_indices = []
    for label in np.unique(labels):
        members = generator.permutation(np.flatnonzero(labels == label))
        count = max(1, round(len(members) * test_fraction))
        test_indices.append(members[:count])
    test_indices = generator.permutation(np.concatenate(test_indices))
    is_test = np.zeros(len(labels), dtype=bool)
    is_test[test_indices] = True
    train_indices = generator.permutation(np.flatnonzero(~is_test))
    return (
        features[train_indices],
        features[test_indices],
        labels[train_indices],
        labels[test_indices],
    )


class DataLoader:
    """Iterate over (features, labels) in batches of Tensors, reshuffled every pass when
    `shuffle=True`, from its own seeded generator (so a run is reproducible, and
    `state_dict()` lets a resumed run continue the same sequence of batches).

    >>> x = np.arange(10, dtype=np.float32).reshape(5, 2)
    >>> y = np.arange(5)
    >>> loader = DataLoader(x, y, batch_size=2, shuffle=False)
    >>> [labels.numpy().tolist() for _, labels in loader]
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, features, labels, batch_size=32, shuffle=True, seed=0, drop_last=False):
        if len(features) != len(labels):
            raise ValueError(f"DataLoader: {len(features)} feature rows but {len(labels)} labels")
        self.features = np.asarray(features)
        self.labels = np.asarray(labels)
        self._batching(len(self.labels), batch_size, shuffle, drop_last)
        self.generator = np.random.default_rng(seed)

    def _batching(self, count, batch_size, shuffle, drop_last):
        if batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be >= 1, got {batch_size}")
        self.count, self.batch_size, self.shuffle, self.drop_last = (
            count,
            batch_size,
            shuffle,
            drop_last,
        )

    def __len__(self):
        full, remainder = divmod(self.count, self.batch_size)
        return full if self.drop_last or remainder == 0 else full + 1

    def __iter__(self):
        for indices in self.index_batches():
            yield self.batch(indices)

    def index_batches(self):
        """The index arrays of one pass: 0..count-1, permuted when shuffling, cut into batches."""
        order = self.generator.permutation(self.count) if self.shuffle else np.arange(self.count)
        for batch in range(len(self)):
            yield order[batch * self.batch_size : (batch + 1) * self.batch_size]

    def batch(self, indices):
        """The (features, labels) Tensors of the rows `indices`."""
        return Tensor(self.features[indices]), Tensor(self.labels[indices])

    def state_dict(self):
        """The shuffling generator's state (a dict of numbers)."""
        return {"generator": self.generator.bit_generator.state}

    def load_state_dict(self, state):
        self.generator.bit_generator.state = state["generator"]
