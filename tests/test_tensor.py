"""`Tensor` construction, attributes and the dtype rules (tinygrad_ops/tensor.py)."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg
from tinygrad_ops.ops import PRIMITIVES

FLOATS = [np.float16, np.float32, np.float64]


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


# -- dtypes through ops and gradients --------------------------------------------------------


def every_primitive_graph(x, w, b):
    """A graph that runs every primitive (and some Python-number operands) on x, w, b."""
    y = ((x @ w + b).tanh() * 2.5 + 1).sigmoid()
    parts = [
        y**2,
        y**3.5,
        y**0,
        y**b,
        2.0**y,
        tg.maximum(y, 0.5),
        tg.maximum(y, b),
        tg.where(y > 0.5, y, 0.0),
        tg.where(y > 0.5, 1.0, y),
        y.var(axis=0, ddof=1),
        y.max(axis=0),
        y.min(),
        x.abs().clip(0.3, 0.9),
        x.exp(),
        x.log(),
        x.sqrt(),
        x.relu(),
        -x,
        x / b.sum(),
        1 / x,
        3 - x,
        x[np.array([0, 0, 1])],
        x[x > 0.5],
        x[1:, None, ::-1],
        tg.stack([x, x]),
        tg.concatenate([x, x], axis=1),
        x.mean(axis=1),
        x.T,
        x.reshape(-1),
        x.broadcast_to((2, 3, 4)),
        x.swapaxes(0, 1),
        x[0] @ w,
        w.T @ x[0],
        x.astype(np.float64).astype(x.dtype),
    ]
    return y, parts


def make_inputs(dtype):
    generator = np.random.default_rng(0)
    x = tg.Tensor(generator.uniform(0.2, 1.0, (3, 4)).astype(dtype), requires_grad=True)
    w = tg.Tensor(generator.standard_normal((4, 2)).astype(dtype), requires_grad=True)
    b = tg.Tensor(generator.uniform(0.5, 1.5, (2,)).astype(dtype), requires_grad=True)
    return x, w, b


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
def test_dtype_is_kept_through_every_op_and_gradient(dtype):
    x, w, b = make_inputs(dtype)
    y, parts = every_primitive_graph(x, w, b)
    for part in [y, *parts]:
        assert part.dtype == dtype, type(part.grad_fn).__name__
    total = parts[0].sum()
    for part in parts[1:]:
        total = total + part.sum()
    assert total.dtype == dtype
    total.backward()
    for tensor in (x, w, b):
        assert tensor.grad.dtype == dtype
        assert tensor.grad.data.dtype == dtype


@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=lambda d: d.__name__)
def test_no_float64_array_inside_a_backward_rule(dtype, monkeypatch):
    """Every gradient every rule returns (before the engine's cast) keeps the graph's dtype."""
    seen = {}
    for op_class in PRIMITIVES:
        original = op_class.backward

        def recording(self, grad_output, original=original):
            grads = original(self, grad_output)
            for grad in grads:
                if grad is not None:
                    seen.setdefault(type(self).__name__, set()).add(np.asarray(grad).dtype)
            return grads

        monkeypatch.setattr(op_class, "backward", recording)
    x, w, b = make_inputs(dtype)
    _, parts = every_primitive_graph(x, w, b)
    total = parts[0].sum()
    for part in parts[1:]:
        total = total + part.sum()
    total.backward()
    # Cast is excluded: the graph asks for float64 there on purpose. A float16 mean or
    # variance is summed in float32, as PyTorch's: float32 rules may run in a float16 graph.
    allowed = {np.dtype(dtype)} | ({np.dtype(np.float32)} if dtype == np.float16 else set())
    wrong = {
        name: dtypes for name, dtypes in seen.items() if not dtypes <= allowed and name != "Cast"
    }
    assert len(seen) > 20
    assert not wrong


@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=lambda d: d.__name__)
def test_create_graph_gradients_keep_the_dtype(dtype):
    x, w, b = make_inputs(dtype)
    _, parts = every_primitive_graph(x, w, b)
    total = parts[0].sum()
    for part in parts[1:]:
        total = total + part.sum()
    grads = tg.grad(total, [x, w, b], create_graph=True)
    assert [grad.dtype for grad in grads] == [dtype] * 3
    second = tg.grad(sum((grad * grad).sum() for grad in grads), [x, w, b], allow_unused=True)
    assert all(grad is None or grad.dtype == dtype for grad in second)


@pytest.mark.parametrize(
    "scalar",
    [np.float64(2.0), np.float32(2.0), np.int64(2), np.float16(2.0)],
    ids=lambda s: type(s).__name__,
)
def test_numpy_scalars_do_not_upcast(scalar):
    x = tg.Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    results = [
        x + scalar,
        scalar + x,
        x - scalar,
        scalar - x,
        x * scalar,
        scalar * x,
        x / scalar,
        scalar / x,
        x**scalar,
        scalar**x,
        tg.maximum(x, scalar),
        tg.where(x > 1.5, x, scalar),
        x.clip(scalar * 0, scalar),
    ]
    assert [result.dtype for result in results] == [np.float32] * len(results)
    total = results[0].sum()
    for result in results[1:]:
        total = total + result.sum()
    total.backward()
    assert x.grad.dtype == np.float32


def test_python_numbers_keep_float16():
    x = tg.Tensor(np.array([1.0, 2.0], dtype=np.float16), requires_grad=True)
    y = (x * 3 + 1.5) / 2 - 0.25
    assert y.dtype == np.float16
    y.sum().backward()
    assert x.grad.dtype == np.float16


def test_mixed_float_dtypes_promote_and_gradients_come_back_in_each_input_dtype():
    a = tg.Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    b = tg.Tensor(np.array([3.0, 4.0], dtype=np.float64), requires_grad=True)
    out = a * b
    assert out.dtype == np.float64
    out.sum().backward()
    assert a.grad.dtype == np.float32
    assert b.grad.dtype == np.float64
    np.testing.assert_allclose(a.grad.numpy(), [3.0, 4.0])


def test_comparisons_do_not_require_grad():
    x = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    for result in (x < 2, x <= 2, x > 2, x >= 2, x == 2, x != 2, np.array(2.0) > x):
        assert not result.requires_grad
        assert result.dtype == np.bool_
    np.testing.assert_array_equal((x > 1.5).numpy(), [False, True, True])


def test_int_tensor_operations_stay_integer():
    index = tg.arange(3)
    assert index.dtype == np.int64
    assert (index + 1).dtype == np.int64
    assert not (index + 1).requires_grad


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


def test_detach_shares_data_and_leaves_the_tape():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    detached = y.detach()
    assert detached.is_leaf
    assert not detached.requires_grad
    assert np.shares_memory(detached.numpy(), y.numpy())


def test_item_of_a_many_element_tensor_is_an_error():
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        tg.Tensor(np.zeros((2, 3))).item()


def test_creation_functions():
    assert tg.zeros(2, 3).shape == (2, 3)
    assert tg.zeros(2, 3).dtype == np.float32
    assert tg.ones((2,), dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(tg.randn(3, seed=1).numpy(), tg.randn(3, seed=1).numpy())
    assert not np.array_equal(tg.randn(3, seed=1).numpy(), tg.randn(3, seed=2).numpy())
    assert tg.randn(2, requires_grad=True).requires_grad
    np.testing.assert_array_equal(tg.arange(1, 7, 2).numpy(), [1, 3, 5])
    assert tg.arange(0.0, 1.0, 0.5).dtype == np.float32


# -- clip needs a bound (as PyTorch) --------------------------------------------------------------


@pytest.mark.parametrize("method", ["clip", "clamp", "clamp_", "clip_"])
def test_clip_without_bounds_is_an_error(method):
    x = tg.Tensor([1.0, -1.0])
    with pytest.raises(ValueError, match=r"(clip|clamp_): at least one of low"):
        getattr(x, method)()
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        getattr(torch.tensor([1.0, -1.0]), method)()
