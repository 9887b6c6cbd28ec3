"""PyTorch's small Tensor names: logical_and/or/xor/not, type(dtype), element_size,
sum(dtype=), against torch."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg

A = np.array([[0.0, 1.5, -2.0], [3.0, 0.0, np.nan]])
B = np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 1.0]])


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_binary_as_torch(name):
    for other in (tg.Tensor(B), tg.Tensor(B[0])):  # a tensor, and one that broadcasts
        ours = getattr(tg.Tensor(A), name)(other)
        theirs = getattr(torch.tensor(A), name)(torch.tensor(other.numpy()))
        assert ours.dtype == np.bool_
        assert ours.tolist() == theirs.tolist()
        assert getattr(tg, name)(tg.Tensor(A), other).tolist() == theirs.tolist()
    assert not getattr(tg.Tensor(A, requires_grad=True), name)(tg.Tensor(B)).requires_grad


def test_logical_not_as_torch():
    for values in (A, np.array([0, 2, -1]), np.array([True, False])):
        ours = tg.logical_not(tg.Tensor(values))
        assert ours.tolist() == torch.logical_not(torch.tensor(values)).tolist()


@pytest.mark.parametrize(
    ("dtype", "name", "size"),
    [
        (np.float32, "torch.FloatTensor", 4),
        (np.float64, "torch.DoubleTensor", 8),
        (np.float16, "torch.HalfTensor", 2),
        (np.int64, "torch.LongTensor", 8),
        (np.int32, "torch.IntTensor", 4),
        (np.uint8, "torch.ByteTensor", 1),
        (np.bool_, "torch.BoolTensor", 1),
    ],
)
def test_type_and_element_size_as_torch(dtype, name, size):
    ours = tg.Tensor(np.zeros(3, dtype=dtype))
    theirs = torch.tensor(np.zeros(3, dtype=dtype))
    assert ours.type() == theirs.type() == name
    assert ours.element_size() == theirs.element_size() == size
    assert tg.ones(2).type(dtype).dtype == dtype
    assert tg.ones(2).type(name).dtype == dtype


def test_type_keeps_the_gradient_between_floats():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    x.type(np.float64).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    assert x.type(np.float32) is x


@pytest.mark.parametrize(
    ("values", "dtype", "torch_dtype"),
    [
        (np.arange(6, dtype=np.float32).reshape(2, 3) / 7, np.float64, torch.float64),
        (np.arange(6, dtype=np.int32).reshape(2, 3), np.float32, torch.float32),
        (np.array([True, False, True]), np.int64, torch.int64),
    ],
)
def test_sum_with_dtype_as_torch(values, dtype, torch_dtype):
    ours = tg.Tensor(values).sum(dtype=dtype)
    theirs = torch.tensor(values).sum(dtype=torch_dtype)
    assert ours.dtype == dtype
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15)
    if values.ndim == 2:
        ours = tg.Tensor(values).sum(1, dtype=dtype)
        np.testing.assert_allclose(ours.numpy(), torch.tensor(values).sum(1, dtype=torch_dtype))


def test_sum_with_dtype_differentiates():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    total = x.sum(dtype=np.float64)
    total.backward()
    assert x.grad.dtype == np.float32
    assert x.grad.tolist() == [1.0, 1.0]
