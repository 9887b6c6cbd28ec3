"""Type promotion (ops/dtypes.py) against PyTorch: the dtype and the values of every op that
promotes, over bool, integer and float tensors, 0-d tensors and Python numbers."""

import itertools

import numpy as np
import pytest
import torch

import tinygrad_ops as tg

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
