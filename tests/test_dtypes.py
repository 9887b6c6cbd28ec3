"""Type promotion (ops/dtypes.py) against PyTorch: the dtype and the values of every op that
promotes, over bool, integer and float tensors, 0-d tensors and Python numbers; and each
float dtype kept through every primitive and its gradient."""

import itertools

import numpy as np
import pytest
import torch

import tinygrad_ops as tg
from tinygrad_ops.ops import PRIMITIVES

DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64"]


def make_pair(dtype, zero_dim=False):
    """The same small nonzero values (in the dtype's range) as ours and as torch's."""
    values = np.array([1, 2, 3]) if not zero_dim else np.array(2)
    array = values.astype(dtype)
    return tg.Tensor(array.copy()), torch.tensor(array.copy())


OPERANDS = [(dtype, False) for dtype in DTYPES] + [("int64", True), ("float64", True)]
NUMBERS = [2, 1.5, True]

BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / b, lambda a, b: a / b),
    "pow": (lambda a, b: a**b, lambda a, b: a**b),
    "maximum": (tg.maximum, torch.maximum),
    "where": (
        lambda a, b: tg.where(tg.Tensor(np.array(True)), a, b),
        lambda a, b: torch.where(torch.tensor(True), a, b),
    ),
}
UNARY = {
    "exp": (lambda a: a.exp(), torch.exp),
    "log": (lambda a: a.log(), torch.log),
    "sqrt": (lambda a: a.sqrt(), torch.sqrt),
    "tanh": (lambda a: a.tanh(), torch.tanh),
    "sigmoid": (lambda a: a.sigmoid(), torch.sigmoid),
    "neg": (lambda a: -a, lambda a: -a),
    "abs": (lambda a: a.abs(), torch.abs),
    "relu": (lambda a: a.relu(), torch.relu),
    "sum": (lambda a: a.sum(), torch.sum),
}


def same_result(ours, theirs, extension=False):
    """Both raise, or both give the same dtype and (to float16's precision) the same values.

    `extension`: where PyTorch refuses a bool operand (bool - int, relu and pow of bools) we
    compute numpy's exact answer; the dtype must then still follow the promotion rule.
    """
    try:
        expected = theirs()
    except (RuntimeError, TypeError):
        if not extension:
            with pytest.raises((TypeError, ValueError)):
                ours()
        return
    result = ours()
    assert str(result.dtype) == str(expected.dtype).removeprefix("torch."), (result, expected)
    np.testing.assert_allclose(
        result.numpy().astype(np.float64), expected.numpy().astype(np.float64), rtol=2e-3
    )


def numpy_extension(name, *dtypes):
    """True for the bool cases PyTorch refuses and numpy answers exactly (see same_result)."""
    has_bool = "bool" in dtypes
    if name == "sub":
        return has_bool and dtypes.count("bool") == 1
    return has_bool and name in ("relu", "pow")


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_promote_tensors_as_torch(name):
    ours, theirs = BINARY[name]
    for (dtype_a, zero_a), (dtype_b, zero_b) in itertools.product(OPERANDS, repeat=2):
        (a, torch_a), (b, torch_b) = make_pair(dtype_a, zero_a), make_pair(dtype_b, zero_b)
        same_result(
            lambda: ours(a, b),  # noqa: B023
            lambda: theirs(torch_a, torch_b),  # noqa: B023
            numpy_extension(name, dtype_a, dtype_b),
        )


@pytest.mark.parametrize("name", sorted(BINARY))
def test_python_numbers_do_not_upcast_tensors(name):
    ours, theirs = BINARY[name]
    for (dtype, zero_dim), number in itertools.product(OPERANDS, NUMBERS):
        if name == "maximum":  # torch.maximum takes Tensors only
            continue
        tensor, torch_tensor = make_pair(dtype, zero_dim)
        extension = numpy_extension(name, dtype, "bool" if number is True else "number")
        same_result(
            lambda: ours(tensor, number),  # noqa: B023
            lambda: theirs(torch_tensor, number),  # noqa: B023
            extension,
        )
        same_result(
            lambda: ours(number, tensor),  # noqa: B023
            lambda: theirs(number, torch_tensor),  # noqa: B023
            extension,
        )


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_numpy_array_operands_promote_as_torch_tensors(name):
    """`x * array` (an operator's operand converted by as_operand): a 0-d float64 array
    does not widen a float32 tensor, a float64 array with dims does, as torch's tensors."""
    ours, theirs = BINARY[name]
    for (dtype_a, zero_a), (dtype_b, zero_b) in itertools.product(OPERANDS, repeat=2):
        (a, torch_a), (b, torch_b) = make_pair(dtype_a, zero_a), make_pair(dtype_b, zero_b)
        same_result(
            lambda: ours(a, b.numpy()),  # noqa: B023
            lambda: theirs(torch_a, torch_b),  # noqa: B023
            numpy_extension(name, dtype_a, dtype_b),
        )


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_give_float32_for_integers_as_torch(name):
    ours, theirs = UNARY[name]
    for dtype, zero_dim in OPERANDS:
        tensor, torch_tensor = make_pair(dtype, zero_dim)
        same_result(
            lambda: ours(tensor),  # noqa: B023
            lambda: theirs(torch_tensor),  # noqa: B023
            numpy_extension(name, dtype),
        )


def test_sigmoid_of_an_integer_tensor_is_float32_not_integer_zeros():
    out = tg.Tensor(np.array([0, 1, 2])).sigmoid()
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), torch.sigmoid(torch.tensor([0, 1, 2])), rtol=1e-6)


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda a, b: tg.concatenate([a, b]), lambda a, b: torch.cat([a, b])),
        (lambda a, b: tg.stack([a, b]), lambda a, b: torch.stack([a, b])),
    ],
    ids=["concatenate", "stack"],
)
def test_joining_promotes_as_torch(ours, theirs):
    for dtype_a, dtype_b in itertools.product(DTYPES, repeat=2):
        (a, torch_a), (b, torch_b) = make_pair(dtype_a), make_pair(dtype_b)
        same_result(lambda: ours(a, b), lambda: theirs(torch_a, torch_b))  # noqa: B023


def test_integer_mean_var_and_power_results_are_float32():
    ints = tg.Tensor(np.arange(4))
    assert ints.mean().dtype == np.float32
    assert ints.var().dtype == np.float32
    assert (ints**0.5).dtype == np.float32
    assert (ints**2).dtype == np.int64
    assert ints.clip(0.5, 2.5).dtype == np.float32
    assert ints.clip(1, 2).dtype == np.int64


@pytest.mark.parametrize(("low", "high"), [(np.float16, np.float32), (np.float32, np.float64)])
def test_mixed_float_gradients_keep_each_dtype_and_stay_differentiable(low, high):
    values = np.array([0.5, -1.0, 2.0])
    a = tg.Tensor(values.astype(low), requires_grad=True)
    b = tg.Tensor(values.astype(high) * 3, requires_grad=True)
    torch_a = torch.tensor(values.astype(low), requires_grad=True)
    torch_b = torch.tensor(values.astype(high) * 3, requires_grad=True)
    out = (a * b * a).sum()
    expected = (torch_a * torch_b * torch_a).sum()
    assert str(out.dtype) == str(expected.dtype).removeprefix("torch.")
    grad_a, grad_b = tg.grad(out, [a, b], create_graph=True)
    torch_grad_a, torch_grad_b = torch.autograd.grad(
        expected, [torch_a, torch_b], create_graph=True
    )
    assert grad_a.dtype == low
    assert grad_b.dtype == high
    np.testing.assert_allclose(grad_a.numpy(), torch_grad_a.detach().numpy(), rtol=1e-3)
    # Second order through the recorded cast: d/da of sum(d out/db) = 2a.
    (second,) = tg.grad(grad_b.sum(), [a])
    (torch_second,) = torch.autograd.grad(torch_grad_b.sum(), [torch_a])
    np.testing.assert_allclose(second.numpy(), torch_second.numpy(), rtol=1e-3)


FLOATS = [np.float16, np.float32, np.float64]


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


@pytest.mark.parametrize("branches", [(1, 0.5), (1.0, 0.0), (1, 0), (True, False)], ids=str)
def test_where_of_two_python_numbers_has_torchs_dtype(branches):
    """where(mask, 1.0, 0.0) is float32 in PyTorch (numpy's where would give float64)."""
    mask = np.array([True, False])
    ours = tg.where(tg.Tensor(mask), *branches)
    theirs = torch.where(torch.tensor(mask), *branches)
    assert ours.dtype == theirs.numpy().dtype
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    "scalar",
    [np.int32(1), np.int64(-2), np.uint8(3), np.bool_(True), np.float16(0.5), np.float64(0.25)],
    ids=lambda s: type(s).__name__,
)
def test_a_numpy_scalar_keeps_its_dtype(scalar):
    # As torch.tensor(np.int32(1)) is int32: a numpy scalar is a 0-d array's value.
    tensor = tg.Tensor(scalar)
    assert tensor.dtype == scalar.dtype
    assert tensor.shape == ()
    assert tensor.item() == scalar.item()
    assert torch.tensor(scalar).numpy().dtype == scalar.dtype


def test_python_numbers_still_become_float32():
    assert [tg.Tensor(value).dtype for value in (1, 2.5, True)] == [np.float32] * 3
