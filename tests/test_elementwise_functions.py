"""The elementwise functions (ops/unary.py, ops/binary.py, ops/pointwise.py) against PyTorch in
float64 (values and every input's gradient) over 0-d, size-1, batched, broadcast and empty
shapes, against central finite differences, and twice differentiated (create_graph)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the PyTorch convention)
from helpers import check_op, check_second_order

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import nn
from tinygrad_ops.ops import Xlogy

SHAPES = [(), (1,), (3,), (2, 3), (2, 1, 3), (0, 3)]

# name: (ours, theirs, low, high); low/high None: standard normal inputs
UNARY = {
    "sin": (lambda x: x.sin(), torch.sin, None, None),
    "cos": (lambda x: x.cos(), torch.cos, None, None),
    "tan": (lambda x: x.tan(), torch.tan, -1.2, 1.2),
    "asin": (lambda x: x.asin(), torch.asin, -0.9, 0.9),
    "acos": (lambda x: x.acos(), torch.acos, -0.9, 0.9),
    "atan": (lambda x: x.atan(), torch.atan, None, None),
    "sinh": (lambda x: x.sinh(), torch.sinh, None, None),
    "cosh": (lambda x: x.cosh(), torch.cosh, None, None),
    "asinh": (lambda x: x.asinh(), torch.asinh, None, None),
    "acosh": (lambda x: x.acosh(), torch.acosh, 1.1, 4.0),
    "atanh": (lambda x: x.atanh(), torch.atanh, -0.9, 0.9),
    "log2": (lambda x: x.log2(), torch.log2, 0.1, 4.0),
    "log10": (lambda x: x.log10(), torch.log10, 0.1, 4.0),
    "exp2": (lambda x: x.exp2(), torch.exp2, None, None),
    "log1p": (lambda x: x.log1p(), torch.log1p, -0.9, 3.0),
    "expm1": (lambda x: x.expm1(), torch.expm1, None, None),
    "erf": (lambda x: x.erf(), torch.erf, None, None),
    "sign": (lambda x: x.sign(), torch.sign, None, None),
    "floor": (lambda x: x.floor(), torch.floor, -3.0, 3.0),
    "ceil": (lambda x: x.ceil(), torch.ceil, -3.0, 3.0),
    "round": (lambda x: x.round(), torch.round, -3.0, 3.0),
    "trunc": (lambda x: x.trunc(), torch.trunc, -3.0, 3.0),
    "softplus": (F.softplus, TF.softplus, -3.0, 3.0),
    "softplus-threshold": (
        lambda x: F.softplus(x, beta=2.0, threshold=1.0),
        lambda x: TF.softplus(x, beta=2.0, threshold=1.0),
        -3.0,
        3.0,
    ),
    "silu": (F.silu, TF.silu, None, None),
    "mish": (F.mish, TF.mish, None, None),
    "elu": (F.elu, TF.elu, None, None),
    "elu-alpha": (lambda x: F.elu(x, 0.5), lambda x: TF.elu(x, 0.5), None, None),
    "selu": (F.selu, TF.selu, None, None),
    "celu": (lambda x: F.celu(x, 2.0), lambda x: TF.celu(x, 2.0), None, None),
    "hardsigmoid": (F.hardsigmoid, TF.hardsigmoid, -5.0, 5.0),
    "hardswish": (F.hardswish, TF.hardswish, -5.0, 5.0),
    "logsigmoid": (F.logsigmoid, TF.logsigmoid, -5.0, 5.0),
    "softsign": (F.softsign, TF.softsign, None, None),
    "relu6": (F.relu6, TF.relu6, -2.0, 8.0),
    "gelu-tanh": (
        lambda x: F.gelu(x, approximate="tanh"),
        lambda x: TF.gelu(x, approximate="tanh"),
        None,
        None,
    ),
}

# name: (ours, theirs, low, high, shapes of the two operands)
BROADCASTS = [((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2,)), ((1,), ()), ((0, 3), (3,))]
BINARY = {
    "minimum": (tg.Tensor.minimum, torch.minimum, None, None),
    "atan2": (tg.Tensor.atan2, torch.atan2, None, None),
    "logaddexp": (tg.Tensor.logaddexp, torch.logaddexp, None, None),
    "copysign": (tg.Tensor.copysign, torch.copysign, None, None),
    "xlogy": (Xlogy.apply, torch.xlogy, 0.1, 3.0),
    "fmod": (tg.Tensor.fmod, torch.fmod, 0.5, 3.0),
    "remainder": (lambda a, b: a % (b - 2.0), lambda a, b: a % (b - 2.0), 0.3, 3.0),
    "floor-divide": (
        lambda a, b: a // b,
        lambda a, b: torch.div(a, b, rounding_mode="floor"),  # (torch's // has no gradient)
        0.5,
        3.0,
    ),
    "div-trunc": (
        lambda a, b: (a - 1.5).div(b, rounding_mode="trunc"),
        lambda a, b: torch.div(a - 1.5, b, rounding_mode="trunc"),
        0.5,
        3.0,
    ),
}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_function_matches_torch(name, shape):
    ours, theirs, low, high = UNARY[name]
    # PyTorch's hardsigmoid slope is the float32 constant 1/6 even in float64
    rtol = 1e-7 if name == "hardsigmoid" else 1e-8
    check_op(ours, theirs, shape, low=low, high=high, rtol=rtol)


@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_function_matches_torch(name, shapes):
    ours, theirs, low, high = BINARY[name]
    check_op(ours, theirs, *shapes, low=low, high=high)


def in_domain(low, high, *shapes, seed):
    """One uniform array per shape inside the function's domain ([-2, 2] where it has none)."""
    generator = np.random.default_rng(seed)
    low, high = (-2.0, 2.0) if low is None else (low, high)
    return [generator.uniform(low, high, size=shape) for shape in shapes]


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_function_passes_finite_differences(name):
    ours, _, low, high = UNARY[name]
    (values,) = in_domain(low, high, (2, 3), seed=3)
    if name in ("floor", "ceil", "round", "trunc"):  # keep clear of the steps
        values = np.round(values) + 0.3
    if name in ("relu6", "hardsigmoid", "hardswish"):  # keep clear of the kinks
        values = np.where(np.abs(np.abs(values) - 3.0) < 0.1, values + 0.3, values)
        values = np.where(np.abs(values) < 0.05, values + 0.2, values)
    assert tg.gradcheck(ours, [tg.Tensor(values, requires_grad=True)])


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_function_passes_finite_differences(name):
    ours, _, low, high = BINARY[name]
    a, b = in_domain(low, high, (2, 3), (3,), seed=4)
    if name == "minimum":
        b = b + 0.05  # no ties
    inputs = [tg.Tensor(a, requires_grad=True), tg.Tensor(b, requires_grad=True)]
    assert tg.gradcheck(ours, inputs)


@pytest.mark.parametrize(
    "name", ["sin", "tan", "asin", "atanh", "log2", "softplus", "silu", "mish", "elu", "gelu-tanh"]
)
def test_second_derivatives_match_torch(name):
    ours, theirs, low, high = UNARY[name]
    low, high = (-0.8, 0.8) if low is None else (low * 0.8, high * 0.8)
    values = np.random.default_rng(5).uniform(low, high, size=(4,))
    check_second_order(ours, theirs, values)


NAN_INPUTS = np.array([np.nan, -3.0, 0.0, 3.0, 6.0, -1.0, 2.5])


@pytest.mark.parametrize(
    "name", ["relu6", "hardsigmoid", "hardswish", "elu", "selu", "celu", "softplus", "silu",
             "logsigmoid", "softsign", "sign", "floor"]
)  # fmt: skip
def test_values_and_gradients_at_kinks_and_nan_match_torch(name):
    ours, theirs, _, _ = UNARY[name]
    x = tg.Tensor(NAN_INPUTS.copy(), requires_grad=True)
    torch_x = torch.tensor(NAN_INPUTS.copy(), requires_grad=True)
    out, expected = ours(x), theirs(torch_x)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), torch_x.grad.numpy(), rtol=1e-7)


def test_integer_inputs_give_float32_and_rounding_keeps_integers():
    ints = tg.Tensor(np.array([1, 2, 3]))
    for method in ("sin", "log2", "expm1", "atan", "erf"):
        assert getattr(ints, method)().dtype == np.float32, method
    for method in ("floor", "ceil", "round", "trunc", "sign"):
        assert getattr(ints, method)().dtype == np.int64, method
    np.testing.assert_array_equal((ints // 2).numpy(), [0, 1, 1])
    np.testing.assert_array_equal(
        tg.Tensor(np.array([-7, 7])).div(2, rounding_mode="trunc").numpy(), [-3, 3]
    )
    np.testing.assert_array_equal((tg.Tensor(np.array([-7, 7])) % 3).numpy(), [2, 1])
    np.testing.assert_array_equal(tg.Tensor(np.array([-7, 7])).fmod(3).numpy(), [-1, 1])


def test_isnan_isinf_isfinite_are_bool_tensors_without_gradient():
    x = tg.Tensor(np.array([np.nan, np.inf, -np.inf, 1.0]), requires_grad=True)
    np.testing.assert_array_equal(x.isnan().numpy(), [True, False, False, False])
    np.testing.assert_array_equal(x.isinf().numpy(), [False, True, True, False])
    np.testing.assert_array_equal(x.isfinite().numpy(), [False, False, False, True])
    assert not x.isnan().requires_grad


@pytest.mark.parametrize(
    ("action", "error", "message"),
    [
        (lambda: tg.Tensor(np.arange(3)) // tg.Tensor(np.array([1, 0, 1])), ZeroDivisionError,
         "div: integer division by zero"),
        (lambda: tg.Tensor(np.arange(3)) % 0, ZeroDivisionError, "remainder: integer division"),
        (lambda: tg.Tensor([1.0]).div(2.0, rounding_mode="round"), ValueError, "rounding_mode"),
        (lambda: F.silu(tg.Tensor(np.arange(3))), TypeError, "silu: the input must be a float"),
        (lambda: F.gelu(tg.Tensor([1.0]), approximate="erf"), ValueError, "gelu: approximate"),
        (lambda: tg.Tensor(np.ones(2)).minimum(tg.Tensor(np.ones(3))), ValueError,
         r"minimum: shapes \(2,\) and \(3,\)"),
    ],
)  # fmt: skip
def test_bad_arguments_are_clear_errors(action, error, message):
    with pytest.raises(error, match=message):
        action()


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (nn.SiLU(), torch.nn.SiLU()),
        (nn.Mish(), torch.nn.Mish()),
        (nn.ELU(alpha=0.7), torch.nn.ELU(alpha=0.7)),
        (nn.CELU(alpha=1.5), torch.nn.CELU(alpha=1.5)),
        (nn.SELU(), torch.nn.SELU()),
        (nn.Softplus(beta=2.0, threshold=3.0), torch.nn.Softplus(beta=2.0, threshold=3.0)),
        (nn.Hardsigmoid(), torch.nn.Hardsigmoid()),
        (nn.Hardswish(), torch.nn.Hardswish()),
        (nn.LogSigmoid(), torch.nn.LogSigmoid()),
        (nn.Softsign(), torch.nn.Softsign()),
        (nn.ReLU6(), torch.nn.ReLU6()),
        (nn.GELU(approximate="tanh"), torch.nn.GELU(approximate="tanh")),
    ],
    ids=lambda module: type(module).__name__,
)
def test_activation_modules_match_torch(ours, theirs):
    check_op(ours, theirs, (3, 4), low=-4.0, high=4.0, rtol=1e-7)  # (hardsigmoid: see above)


def test_xlogy_at_zeros_negatives_and_nan_matches_torch():
    """0 log 0 = 0 (and its gradient 0 where b <= 0), NaN propagated, as torch.xlogy; an
    upstream gradient of 0 gives 0 even where log b = -inf."""
    a = np.array([0.0, 0.0, 1.0, 2.0, 0.0, -1.0, 3.0])
    b = np.array([0.0, -1.0, 0.0, 3.0, np.nan, 2.0, 0.0])
    upstream = np.array([1.0, 1.0, 0.0, 2.0, 1.0, 1.0, 1.0])
    ours = [tg.Tensor(v, requires_grad=True) for v in (a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (a, b)]
    out, expected = Xlogy.apply(*ours), torch.xlogy(*theirs)
    out.backward(upstream)
    expected.backward(torch.tensor(upstream))
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine.grad.numpy(), reference.grad.numpy())


STEP_FUNCTIONS = {
    "floor": (lambda x: x.floor(), torch.floor),
    "ceil": (lambda x: x.ceil(), torch.ceil),
    "round": (lambda x: x.round(), torch.round),
    "trunc": (lambda x: x.trunc(), torch.trunc),
    "sign": (lambda x: x.sign(), torch.sign),
}
STEP_UPSTREAM = np.array([np.nan, np.inf, -np.inf])  # what `g * 0.0` turned into NaN


@pytest.mark.parametrize("name", sorted(STEP_FUNCTIONS))
def test_step_functions_give_zero_gradients_for_nan_and_inf_upstream(name):
    """A step function's gradient is 0 whatever the upstream gradient, as PyTorch's."""
    ours, theirs = STEP_FUNCTIONS[name]
    x = tg.Tensor(np.array([1.5, -2.5, 0.25]), requires_grad=True)
    ours(x).backward(tg.Tensor(STEP_UPSTREAM))
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
    torch_x = torch.tensor([1.5, -2.5, 0.25], dtype=torch.float64, requires_grad=True)
    theirs(torch_x).backward(torch.tensor(STEP_UPSTREAM))
    np.testing.assert_array_equal(torch_x.grad.numpy(), np.zeros(3))


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda a, b: a.copysign(b), torch.copysign),
        (lambda a, b: a // b, lambda a, b: torch.div(a, b, rounding_mode="floor")),
    ],
    ids=["copysign", "floor-divide"],
)
def test_binary_step_gradients_are_zero_for_nan_and_inf_upstream(ours, theirs):
    """copysign's second operand and both operands of a rounded quotient get 0."""
    values, others = np.array([1.5, -2.5, 0.25]), np.array([2.0, -3.0, 1.0])
    a, b = (tg.Tensor(v.copy(), requires_grad=True) for v in (values, others))
    torch_a, torch_b = (torch.tensor(v.copy(), requires_grad=True) for v in (values, others))
    ours(a, b).backward(tg.Tensor(STEP_UPSTREAM))
    theirs(torch_a, torch_b).backward(torch.tensor(STEP_UPSTREAM))
    np.testing.assert_array_equal(a.grad.numpy(), torch_a.grad.numpy())
    np.testing.assert_array_equal(b.grad.numpy(), torch_b.grad.numpy())
    assert not np.isnan(b.grad.numpy()).any()


FLAT_ACTIVATIONS = {
    "hardsigmoid": (F.hardsigmoid, TF.hardsigmoid),
    "hardswish": (F.hardswish, TF.hardswish),
    "relu6": (F.relu6, TF.relu6),
    "leaky_relu": (F.leaky_relu, TF.leaky_relu),
    "hardtanh": (F.hardtanh, TF.hardtanh),
    "hardtanh-2-3": (lambda x: F.hardtanh(x, -2.0, 3.0), lambda x: TF.hardtanh(x, -2.0, 3.0)),
    "clip": (lambda x: x.clip(-1.0, 1.0), lambda x: x.clamp(-1.0, 1.0)),
    "maximum": (
        lambda x: x.maximum(tg.Tensor(np.full(7, 0.5))),
        lambda x: torch.maximum(x, torch.full((7,), 0.5, dtype=torch.float64)),
    ),
    "minimum": (
        lambda x: x.minimum(tg.Tensor(np.full(7, 0.5))),
        lambda x: torch.minimum(x, torch.full((7,), 0.5, dtype=torch.float64)),
    ),
}


@pytest.mark.parametrize("name", sorted(FLAT_ACTIVATIONS))
def test_flat_activations_give_zero_gradients_for_nan_and_inf_upstream(name):
    """Where the function is flat its gradient is 0 whatever arrives from above, as in
    PyTorch's kernels (the slope times g was NaN for a NaN or inf upstream gradient)."""
    ours, theirs = FLAT_ACTIVATIONS[name]
    values = np.array([-np.inf, np.nan, 1e300, -1e300, -5.0, 7.0, 0.5])
    upstream = np.array([np.inf, -np.inf, np.nan, np.nan, np.inf, np.nan, 1.0])
    x = tg.Tensor(values.copy(), requires_grad=True)
    torch_x = torch.tensor(values.copy(), requires_grad=True)
    with np.errstate(invalid="ignore"):  # (forward: -inf * 0 in hardswish, as PyTorch's NaN)
        ours(x).backward(tg.Tensor(upstream))
    theirs(torch_x).backward(torch.tensor(upstream))
    np.testing.assert_allclose(x.grad.numpy(), torch_x.grad.numpy(), rtol=1e-7)


def test_atan2_at_the_origin_and_on_the_axes_matches_torch():
    """The gradient at (0, 0) is 0 (1 / (a² + b²) is inf there), as PyTorch's."""
    a_values, b_values = (
        np.array([0.0, 1.0, -1.0, 0.0, -0.0]),
        np.array([0.0, 0.0, -2.0, -1.0, -1.0]),
    )
    a, b = tg.Tensor(a_values, requires_grad=True), tg.Tensor(b_values, requires_grad=True)
    torch_a, torch_b = (
        torch.tensor(a_values, requires_grad=True),
        torch.tensor(b_values, requires_grad=True),
    )
    out, expected = tg.atan2(a, b), torch.atan2(torch_a, torch_b)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), torch_a.grad.numpy())
    np.testing.assert_array_equal(b.grad.numpy(), torch_b.grad.numpy())


@pytest.mark.parametrize(("low", "high"), [(-1.0, 1.0), (-2.0, 0.5), (0.0, 6.0)])
def test_hardtanh_matches_torch_at_its_bounds_and_between(low, high):
    """0 gradient at the bounds themselves (clip's is 1 there), g at NaN, as PyTorch's."""
    values = np.array([low - 1.0, low, (low + high) / 2, high, high + 2.0, np.nan])
    x, torch_x = (
        tg.Tensor(values.copy(), requires_grad=True),
        torch.tensor(values.copy(), requires_grad=True),
    )
    out, expected = tg.nn.Hardtanh(low, high)(x), torch.nn.Hardtanh(low, high)(torch_x)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    upstream = np.arange(1.0, 7.0)
    out.backward(tg.Tensor(upstream))
    expected.backward(torch.tensor(upstream))
    np.testing.assert_array_equal(x.grad.numpy(), torch_x.grad.numpy())
    with pytest.raises(ValueError, match=r"min_val 2\.0 is greater than max_val 1\.0"):
        F.hardtanh(x, 2.0, 1.0)
