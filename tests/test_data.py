"""Data sets, the train/test split and the batch iterator."""

import subprocess
import sys

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops import data


def test_digits_are_the_bundled_scikit_learn_images():
    features, labels = data.load_digits()
    assert features.shape == (1797, 64)
    assert features.dtype == np.float32
    assert labels.dtype == np.int64
    assert features.min() == 0.0
    assert features.max() == 1.0
    assert sorted(set(labels.tolist())) == list(range(10))


def test_digits_read_from_the_file_are_scikit_learns_load_digits(monkeypatch):
    """Read without importing scikit-learn, the same arrays as through its loader."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    features, labels = data.load_digits()
    np.testing.assert_array_equal(features, (digits.data / 16.0).astype(np.float32))
    np.testing.assert_array_equal(labels, digits.target)
    monkeypatch.setattr(data, "bundled_digits_file", lambda: None)  # scikit-learn's loader
    through_sklearn = data.load_digits()
    np.testing.assert_array_equal(through_sklearn[0], features)
    np.testing.assert_array_equal(through_sklearn[1], labels)
    assert through_sklearn[1].dtype == np.int64


def test_loading_the_digits_does_not_import_scikit_learn():
    code = (
        "import sys; from tinygrad_ops import data; data.load_digits(); "
        "print('sklearn' in sys.modules, 'scipy' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "False"]


def test_moons_are_seeded():
    first = data.make_moons(200, noise=0.1, seed=3)
    second = data.make_moons(200, noise=0.1, seed=3)
    other = data.make_moons(200, noise=0.1, seed=4)
    np.testing.assert_array_equal(first[0], second[0])
    assert not np.array_equal(first[0], other[0])
    assert first[0].shape == (200, 2)
    assert set(first[1].tolist()) == {0, 1}


def test_unknown_data_set_names_the_choices():
    with pytest.raises(ValueError, match="digits, moons"):
        data.load_dataset("mnist")


def test_split_is_disjoint_complete_stratified_and_seeded():
    features = np.arange(200, dtype=np.float32).reshape(100, 2)
    labels = np.repeat([0, 1, 2, 3], 25)
    train_x, test_x, train_y, test_y = data.train_test_split(features, labels, 0.2, seed=1)
    assert len(train_x) == 80
    assert len(test_x) == 20
    rows = np.concatenate([train_x[:, 0], test_x[:, 0]])
    assert sorted(rows.tolist()) == features[:, 0].tolist()
    np.testing.assert_array_equal(np.bincount(test_y), [5, 5, 5, 5])
    np.testing.assert_array_equal(labels[(train_x[:, 0] / 2).astype(int)], train_y)
    again = data.train_test_split(features, labels, 0.2, seed=1)
    np.testing.assert_array_equal(again[1], test_x)
    other = data.train_test_split(features, labels, 0.2, seed=2)
    assert not np.array_equal(other[1], test_x)


def test_split_rejects_bad_arguments():
    with pytest.raises(ValueError, match="between 0 and 1"):
        data.train_test_split(np.zeros((4, 1)), np.zeros(4), 1.0)
    with pytest.raises(ValueError, match="3 feature rows but 4 labels"):
        data.train_test_split(np.zeros((3, 1)), np.zeros(4))


def _epoch(loader):
    return [labels.numpy().tolist() for _, labels in loader]


def test_loader_visits_every_example_once_per_epoch_in_a_new_order():
    features = np.arange(10, dtype=np.float32)[:, None]
    loader = data.DataLoader(features, np.arange(10), batch_size=4, seed=0)
    assert len(loader) == 3
    first, second = _epoch(loader), _epoch(loader)
    assert [len(batch) for batch in first] == [4, 4, 2]
    assert sorted(np.concatenate(first).tolist()) == list(range(10))
    assert sorted(np.concatenate(second).tolist()) == list(range(10))
    assert first != second
    for inputs, labels in loader:
        assert isinstance(inputs, tg.Tensor)
        np.testing.assert_array_equal(inputs.numpy()[:, 0], labels.numpy())


def test_loader_is_reproducible_and_its_state_resumes_the_sequence():
    x, y = np.zeros((9, 1), dtype=np.float32), np.arange(9)
    loader = data.DataLoader(x, y, batch_size=3, seed=5)
    _epoch(loader)
    state = loader.state_dict()
    expected = _epoch(loader)
    restored = data.DataLoader(x, y, batch_size=3, seed=123)
    restored.load_state_dict(state)
    assert _epoch(restored) == expected
    fresh = data.DataLoader(x, y, batch_size=3, seed=5)
    _epoch(fresh)
    assert _epoch(fresh) == expected


def test_loader_options_and_errors():
    x, y = np.zeros((5, 1), dtype=np.float32), np.arange(5)
    assert _epoch(data.DataLoader(x, y, 2, shuffle=False)) == [[0, 1], [2, 3], [4]]
    assert _epoch(data.DataLoader(x, y, 2, shuffle=False, drop_last=True)) == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        data.DataLoader(x, y, 0)
    with pytest.raises(ValueError, match="5 feature rows but 4 labels"):
        data.DataLoader(x, y[:4])
