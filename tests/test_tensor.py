"""`Tensor` construction, its attributes and the dtype rules of construction
(tinygrad_ops/tensor.py)."""

import numpy as np
import pytest

import tinygrad_ops as tg

# -- construction and dtype rules ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "dtype"),
    [
        pytest.param(2.0, np.float32, id="python-float"),
        pytest.param(3, np.float32, id="python-int"),
        pytest.param(True, np.float32, id="python-bool"),
        pytest.param([1, 2, 3], np.float32, id="int-list"),
        pytest.param([True, False], np.float32, id="bool-list"),
        pytest.param([[1.5, 2.0], [3.0, 4.0]], np.float32, id="float-list"),
        pytest.param((1, 2.5), np.float32, id="tuple"),
        pytest.param(np.zeros(2, dtype=np.float16), np.float16, id="float16-array"),
        pytest.param(np.zeros(2, dtype=np.float32), np.float32, id="float32-array"),
        pytest.param(np.zeros(2, dtype=np.float64), np.float64, id="float64-array"),
        pytest.param(np.array([1, 2]), np.int64, id="int-array"),
        pytest.param(np.array([1, 2], dtype=np.int32), np.int32, id="int32-array"),
        pytest.param(np.array([True]), np.bool_, id="bool-array"),
        pytest.param(np.float64(2.0), np.float64, id="numpy-float64-scalar"),
    ],
)
def test_constructor_dtype(data, dtype):
    assert tg.Tensor(data).dtype == dtype


def test_explicit_dtype_wins():
    assert tg.Tensor([1, 2], dtype=np.float64).dtype == np.float64
    assert tg.Tensor([1, 2], dtype="float16").dtype == np.float16
    assert tg.Tensor(np.zeros(2, np.float32), dtype=np.float64).dtype == np.float64
    assert tg.Tensor(2, dtype=np.int64).dtype == np.int64


def test_constructor_from_tensor_copies():
    source = tg.Tensor(np.array([1.0, 2.0]))
    copy = tg.Tensor(source)
    assert copy.dtype == np.float64
    copy.data[0] = 5.0
    assert source.data[0] == 1.0


@pytest.mark.parametrize(
    "data",
    [
        pytest.param([[1.0, 2.0], [3.0]], id="ragged"),
        pytest.param([[1.0], 2.0], id="ragged-depth"),
    ],
)
def test_ragged_list_is_a_value_error(data):
    with pytest.raises(ValueError, match="ragged"):
        tg.Tensor(data)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param("abc", id="string"),
        pytest.param(["a", "b"], id="string-list"),
        pytest.param(None, id="none"),
        pytest.param({"a": 1}, id="dict"),
        pytest.param(np.array([1j]), id="complex-array"),
        pytest.param(np.array([1, "a"], dtype=object), id="object-array"),
    ],
)
def test_non_numeric_data_is_a_type_error(data):
    with pytest.raises(TypeError, match=r"Tensor\(\)"):
        tg.Tensor(data)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(np.array([1, 2]), id="int64"),
        pytest.param(np.array([1, 2], dtype=np.int8), id="int8"),
        pytest.param(np.array([True, False]), id="bool"),
    ],
)
def test_integer_tensors_cannot_require_grad(data):
    with pytest.raises(TypeError, match="floating-point") as error:
        tg.Tensor(data, requires_grad=True)
    assert str(data.dtype) in str(error.value)
    tensor = tg.Tensor(data)
    with pytest.raises(TypeError, match="floating-point"):
        tensor.requires_grad = True
    assert not tensor.requires_grad


def test_int_list_with_requires_grad_becomes_float32():
    assert tg.Tensor([1, 2], requires_grad=True).dtype == np.float32


def test_requires_grad_cannot_be_turned_off_on_a_non_leaf():
    y = tg.Tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="detach"):
        y.requires_grad = False


# -- attributes ---------------------------------------------------------------------------------


def test_attributes():
    x = tg.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert x.shape == (2, 3)
    assert x.ndim == 2
    assert x.size == 6
    assert x.is_leaf
    assert x.grad is None
    assert x.requires_grad
    assert x.T.shape == (3, 2)
    assert isinstance(x.numpy(), np.ndarray)
    y = x * 2
    assert not y.is_leaf
    assert y.requires_grad
    assert y.grad_fn is not None
    assert tg.Tensor(3.5).item() == 3.5
    assert isinstance(tg.Tensor(3.5).item(), float)
    assert len(x) == 2
    assert "requires_grad=True" in repr(x)
    assert "grad_fn=Mul" in repr(y)


# -- PyTorch's autograd idioms: requires_grad_, retain_grad ---------------------------------------


def test_requires_grad_sets_the_flag_in_place_and_returns_the_tensor():
    x = tg.Tensor([1.0, 2.0])
    assert x.requires_grad_() is x
    assert x.requires_grad
    assert x.requires_grad_(False) is x
    assert not x.requires_grad
    with pytest.raises(TypeError, match="only floating-point tensors can require grad"):
        tg.Tensor(np.array([1, 2])).requires_grad_()


def test_retain_grad_keeps_a_non_leafs_gradient_and_accumulates_as_pytorch():
    import torch

    values = np.array([1.0, -2.0, 3.0])
    x, xt = tg.Tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    y, yt = x * x, xt * xt
    y.retain_grad()
    y.retain_grad()  # twice is once
    yt.retain_grad()
    for _ in range(2):  # a second backward adds to the retained gradient
        (y * 3).sum().backward(retain_graph=True)
        (yt * 3).sum().backward(retain_graph=True)
    np.testing.assert_allclose(y.grad.numpy(), yt.grad.numpy())
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
    leaf = tg.Tensor([1.0], requires_grad=True)
    leaf.retain_grad()  # a leaf keeps its gradient anyway: nothing to add
    assert not leaf._hooks
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        tg.Tensor([1.0]).retain_grad()
