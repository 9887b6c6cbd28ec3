"""x[index] and x[index] = value against PyTorch (float64) over random mixes of ints,
slices, None, Ellipsis, bools, boolean masks and index tensors: the result's shape and values
(where the index-array dims go is PyTorch's rule, not numpy's), the gradient, and the
assignment with its gradients. An index PyTorch refuses is refused here too (IndexError)."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg

SHAPE = (3, 4, 5, 2)


def _random_item(rng, size):
    """One index item for a dim of `size`, and how many dims it consumes."""
    kind = rng.choice(
        ["int", "slice", "none", "array", "mask", "bool"], p=[0.25, 0.25, 0.1, 0.25, 0.1, 0.05]
    )
    if kind == "int":
        return int(rng.integers(-size, size)), 1
    if kind == "slice":
        start, stop = sorted(rng.integers(-size, size + 1, size=2))
        return slice(int(start), int(stop), int(rng.choice([1, 1, 2]))), 1  # torch: no step < 0
    if kind == "none":
        return None, 0
    if kind == "bool":
        return bool(rng.integers(2)), 0
    if kind == "mask":
        return rng.random(size) > 0.4, 1
    shape = [(), (2,), (1, 2), (2, 1), (3,)][rng.integers(5)]
    return rng.integers(-size, size, size=shape), 1


def random_index(seed):
    rng = np.random.default_rng(seed)
    items, dim = [], 0
    for _ in range(rng.integers(1, 5)):
        if dim >= len(SHAPE):
            break
        item, consumed = _random_item(rng, SHAPE[dim])
        items.append(item)
        dim += consumed
    if rng.random() < 0.3:
        items.insert(int(rng.integers(len(items) + 1)), Ellipsis)
    return tuple(items)


def as_torch(index):
    return tuple(torch.tensor(i) if isinstance(i, np.ndarray) else i for i in index)


def as_ours(index):
    return tuple(tg.Tensor(i, dtype=i.dtype) if isinstance(i, np.ndarray) else i for i in index)


FIXED = [
    (0, slice(None), np.array([0, 2])),  # an int and an array separated by a slice
    (np.array([0, 2]), slice(None), 0),
    (slice(None), 1, slice(None), np.array([1, 0])),
    (1, np.array([[0, 1]]), slice(None), np.array([1])),
    (Ellipsis, 0, np.array([1, 0])),
    (np.array([True, False, True]), slice(None), 2),
    (True, 0, slice(None), np.array([1, 2])),
    (0, slice(None), False, np.array([1])),
    (0, None, slice(None), np.array([1, 2])),
    (np.array([2, 0]), None, np.array([1, 3])),
]
CASES = [pytest.param(index, id=f"fixed{i}") for i, index in enumerate(FIXED)] + [
    pytest.param(random_index(seed), id=f"random{seed}") for seed in range(150)
]


def _torch_result(function):
    try:
        return function(), None
    except (IndexError, RuntimeError) as error:
        return None, error


@pytest.mark.parametrize("index", CASES)
def test_getitem_and_its_gradient_match_torch(index):
    data = np.random.default_rng(0).standard_normal(SHAPE)
    theirs_x = torch.tensor(data, requires_grad=True)
    expected, error = _torch_result(lambda: theirs_x[as_torch(index)])
    ours_x = tg.Tensor(data, requires_grad=True)
    if error is not None:
        with pytest.raises(IndexError):
            ours_x[as_ours(index)]
        return
    out = ours_x[as_ours(index)]
    assert out.shape == tuple(expected.shape), index
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    weight = np.random.default_rng(1).standard_normal(tuple(expected.shape))
    (expected * torch.tensor(weight)).sum().backward()
    (out * tg.Tensor(weight)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("index", CASES)
def test_setitem_and_its_gradients_match_torch(index):
    data = np.random.default_rng(0).standard_normal(SHAPE)
    selected, error = _torch_result(lambda: torch.tensor(data)[as_torch(index)])
    if error is not None:
        return  # refused by getitem above
    value = np.random.default_rng(2).standard_normal(tuple(selected.shape))
    base, value_t = torch.tensor(data, requires_grad=True), torch.tensor(value, requires_grad=True)
    theirs = base * 1.0
    theirs[as_torch(index)] = value_t
    ours_base, ours_value = (
        tg.Tensor(data, requires_grad=True),
        tg.Tensor(value, requires_grad=True),
    )
    ours = ours_base * 1.0
    ours[as_ours(index)] = ours_value
    np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
    weight = np.random.default_rng(3).standard_normal(SHAPE)
    (theirs * torch.tensor(weight)).sum().backward()
    (ours * tg.Tensor(weight)).sum().backward()
    np.testing.assert_allclose(ours_base.grad.numpy(), base.grad.numpy(), rtol=1e-12)
    if not _repeats(index):  # a repeated element keeps one value: which one is unspecified
        np.testing.assert_allclose(ours_value.grad.numpy(), value_t.grad.numpy(), rtol=1e-12)
    plain = tg.Tensor(data)  # the unrecorded path (no grad) writes the same elements
    plain[as_ours(index)] = tg.Tensor(value)
    np.testing.assert_array_equal(plain.numpy(), theirs.detach().numpy())


def _repeats(index):
    ids = torch.arange(int(np.prod(SHAPE))).reshape(SHAPE)[as_torch(index)].flatten()
    return len(set(ids.tolist())) != len(ids)


def test_the_int_and_array_example_of_pytorch():
    x = tg.arange(24).reshape(2, 3, 4)
    out = x[0, :, tg.Tensor(np.array([0, 2]))]
    assert out.shape == (3, 2)
    assert out.tolist() == [[0, 2], [4, 6], [8, 10]]
