"""Edges of the ops where a PyTorch user expects PyTorch's answer or a clear error: axis
arguments (range, bools), NaN in the gradient rules, integer powers, float16 rms_norm."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the PyTorch convention)

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import nn

NAN = float("nan")


def ones(*shape):
    return tg.Tensor(np.ones(shape))


# -- axis arguments out of range: an error naming the op, the axis and ndim ---------------------


@pytest.mark.parametrize(
    ("action", "op_name", "axis", "ndim"),
    [
        pytest.param(lambda: ones(2, 3).transpose(1, 2), "transpose", 2, 2, id="transpose-wraps"),
        pytest.param(lambda: ones(2, 3).transpose(0, 5), "transpose", 5, 2, id="transpose-far"),
        pytest.param(lambda: ones(2, 3).permute(0, -3), "transpose", -3, 2, id="permute-neg"),
        pytest.param(lambda: tg.concatenate([ones(2, 3)] * 2, 2), "concatenate", 2, 2, id="cat"),
        pytest.param(lambda: tg.concatenate([ones(2)] * 2, -2), "concatenate", -2, 1, id="cat-neg"),
        pytest.param(lambda: tg.stack([ones(2, 3)] * 2, 5), "stack", 5, 3, id="stack"),
        pytest.param(lambda: tg.stack([ones(2, 3)] * 2, -4), "stack", -4, 3, id="stack-neg"),
        pytest.param(lambda: ones(2, 3).expand_dims(5), "expand_dims", 5, 3, id="expand_dims"),
        pytest.param(lambda: ones(2, 3).unsqueeze(-4), "expand_dims", -4, 3, id="unsqueeze"),
        pytest.param(lambda: ones(2, 3).squeeze(2), "squeeze", 2, 2, id="squeeze"),
    ],
)
def test_axis_out_of_range_is_a_clear_error(action, op_name, axis, ndim):
    with pytest.raises(ValueError) as error:
        action()
    assert isinstance(error.value, IndexError)  # PyTorch's class (a ValueError too)
    assert not isinstance(error.value, np.exceptions.AxisError)  # never numpy's own
    message = str(error.value)
    assert message.startswith(f"{op_name}: axis {axis} is out of range for a {ndim}-d tensor")


def test_in_range_axes_still_work_as_numpy():
    x = tg.Tensor(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(x.transpose(-1, 0).numpy(), x.numpy().T)
    assert tg.stack([x, x], -1).shape == (2, 3, 2)
    assert tg.concatenate([x, x], -1).shape == (2, 6)
    assert x.expand_dims(-1).shape == (2, 3, 1)
    assert x.expand_dims(2).shape == (2, 3, 1)


def test_concatenating_0d_tensors_is_a_clear_error():
    with pytest.raises(ValueError, match="concatenate: 0-d tensors cannot be joined"):
        tg.concatenate([tg.Tensor(1.0), tg.Tensor(2.0)])


# -- a bool is not an axis (True would silently mean axis 1) ------------------------------------


@pytest.mark.parametrize(
    ("action", "op_name"),
    [
        pytest.param(lambda x: x.sum(axis=True), "sum", id="sum"),
        pytest.param(lambda x: x.sum(axis=(0, True)), "sum", id="sum-tuple"),
        pytest.param(lambda x: x.mean(axis=True), "mean", id="mean"),
        pytest.param(lambda x: x.var(axis=False), "var", id="var"),
        pytest.param(lambda x: x.max(axis=True), "max", id="max"),
        pytest.param(lambda x: x.min(axis=np.True_), "min", id="min-numpy-bool"),
        pytest.param(lambda x: F.softmax(x, True), "softmax", id="softmax"),
        pytest.param(lambda x: F.log_softmax(x, True), "log_softmax", id="log_softmax"),
        pytest.param(lambda x: F.layer_norm(x, True), "layer_norm", id="layer_norm"),
        pytest.param(lambda x: F.rms_norm(x, (True,)), "rms_norm", id="rms_norm"),
        pytest.param(lambda x: x.transpose(True, 0), "transpose", id="transpose"),
        pytest.param(lambda x: x.swapaxes(True, 0), "swapaxes", id="swapaxes"),
        pytest.param(lambda x: x.expand_dims(True), "expand_dims", id="expand_dims"),
        pytest.param(lambda x: x.squeeze(True), "squeeze", id="squeeze"),
        pytest.param(lambda x: tg.stack([x, x], True), "stack", id="stack"),
        pytest.param(lambda x: tg.concatenate([x, x], True), "concatenate", id="concatenate"),
    ],
)
def test_a_bool_axis_is_a_type_error(action, op_name):
    x = tg.Tensor(np.ones((2, 1)))
    with pytest.raises(TypeError, match=f"^{op_name}: "):
        action(x)


# -- gradients at NaN, as PyTorch's rules give them ----------------------------------------------

VALUES = [NAN, 1.0, -1.0, 0.0, 2.0]
OTHERS = [1.0, NAN, NAN, 0.0, 2.0]

NAN_CASES = [
    pytest.param(lambda x: x.relu(), torch.relu, (VALUES,), id="relu"),
    pytest.param(lambda x: x.abs(), torch.abs, (VALUES,), id="abs"),
    pytest.param(tg.maximum, torch.maximum, (VALUES, OTHERS), id="maximum"),
    pytest.param(tg.maximum, torch.maximum, (OTHERS, VALUES), id="maximum-swapped"),
    pytest.param(lambda x: x.clip(-0.5, 0.5), lambda x: x.clamp(-0.5, 0.5), (VALUES,), id="clip"),
    pytest.param(lambda x: F.leaky_relu(x, 0.1), lambda x: TF.leaky_relu(x, 0.1), (VALUES,),
                 id="leaky_relu"),
    pytest.param(lambda x: x.max(), torch.max, (VALUES,), id="max"),
    pytest.param(lambda x: x.min(), torch.min, ([NAN, NAN, 1.0],), id="min-two-nans"),
    pytest.param(lambda x: x.max(axis=1), lambda x: torch.max(x, 1).values,
                 ([[NAN, 1.0, 2.0], [3.0, 1.0, 2.0]],), id="max-axis"),
    pytest.param(lambda x: x.sigmoid(), torch.sigmoid, (VALUES,), id="sigmoid"),
    pytest.param(lambda x: x.tanh(), torch.tanh, (VALUES,), id="tanh"),
    pytest.param(lambda x: x.sqrt(), torch.sqrt, ([NAN, 4.0],), id="sqrt"),
]  # fmt: skip


@pytest.mark.parametrize(("ours", "theirs", "values"), NAN_CASES)
def test_gradients_at_nan_match_torch(ours, theirs, values):
    arrays = [np.array(value, dtype=np.float64) for value in values]
    mine = [tg.Tensor(array.copy(), requires_grad=True) for array in arrays]
    reference = [torch.tensor(array.copy(), requires_grad=True) for array in arrays]
    ours(*mine).sum().backward()
    theirs(*reference).sum().backward()
    for index, (tensor, expected) in enumerate(zip(mine, reference, strict=True)):
        np.testing.assert_array_equal(
            tensor.grad.numpy(), expected.grad.numpy(), err_msg=f"gradient of input {index}"
        )


# -- infinities and signed zeros, where the formula picked decides the answer ---------------------

INF = float("inf")
EDGES = [-0.0, 0.0, -1.0, 1.0, 2.0, INF, -INF, NAN]

EDGE_CASES = [
    pytest.param(lambda x: x**0.5, lambda x: x**0.5, id="pow-0.5"),
    pytest.param(lambda x: x**-0.5, lambda x: x**-0.5, id="pow-minus-0.5"),
    pytest.param(lambda x: x**1.5, lambda x: x**1.5, id="pow-1.5"),
    pytest.param(lambda x: x.asin(), torch.asin, id="asin"),
    pytest.param(lambda x: x.acos(), torch.acos, id="acos"),
    pytest.param(F.softsign, TF.softsign, id="softsign"),
]


def same_numbers(ours, theirs, what):
    """Equal to an ulp (PyTorch's vectorised sqrt rounds differently), NaN where NaN, and
    the same sign of zero (x**0.5 at -0 is -0 in PyTorch)."""
    np.testing.assert_allclose(ours, theirs, rtol=4e-16, atol=0, err_msg=what)
    numbers = ~np.isnan(theirs)
    np.testing.assert_array_equal(np.signbit(ours[numbers]), np.signbit(theirs[numbers]), what)


@pytest.mark.parametrize(("ours", "theirs"), EDGE_CASES)
def test_values_and_gradients_at_infinities_and_signed_zeros_match_torch(ours, theirs):
    x = tg.Tensor(np.array(EDGES), requires_grad=True)
    torch_x = torch.tensor(EDGES, dtype=torch.float64, requires_grad=True)
    with np.errstate(all="ignore"):  # (numpy's RuntimeWarnings are another matter)
        out = ours(x)
        out.backward(np.ones(len(EDGES)))
    expected = theirs(torch_x)
    expected.backward(torch.ones(len(EDGES), dtype=torch.float64))
    same_numbers(out.numpy(), expected.detach().numpy(), "values")
    same_numbers(x.grad.numpy(), torch_x.grad.numpy(), "gradients")


# -- integer powers -------------------------------------------------------------------------------


@pytest.mark.parametrize("exponent", [-1, -2, np.int64(-3)])
def test_integer_tensor_to_a_negative_integer_power_is_refused_as_in_torch(exponent):
    with pytest.raises(ValueError, match=r"^pow: Integers to negative integer powers are not"):
        tg.Tensor(np.arange(3)) ** exponent


def test_integer_tensor_to_negative_tensor_exponents_matches_torch():
    base = np.array([2, 1, -1, -1, 0, 3])
    exponent = np.array([-1, -3, -3, -2, 2, 2])
    expected = torch.tensor(base) ** torch.tensor(exponent)
    np.testing.assert_array_equal((tg.Tensor(base) ** tg.Tensor(exponent)).numpy(), expected)
    np.testing.assert_array_equal((2 ** tg.Tensor(exponent)).numpy(), 2 ** torch.tensor(exponent))


# -- float16 rms_norm: computed in float32, with float32's eps (as PyTorch) ----------------------


def test_float16_rms_norm_uses_float32_eps_as_torch():
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float16) * np.float16(0.01)
    expected = TF.rms_norm(torch.tensor(x), (8,)).numpy()
    ours = F.rms_norm(tg.Tensor(x), (8,))
    assert ours.dtype == np.float16
    np.testing.assert_allclose(ours.numpy().astype(np.float64), expected, rtol=2e-3, atol=1e-3)
    module = nn.RMSNorm(8, dtype=np.float16)
    module_out = module(tg.Tensor(x)).numpy().astype(np.float64)
    np.testing.assert_allclose(module_out, expected, rtol=2e-3, atol=1e-3)


# -- backward at the edges of a domain: IEEE's numbers, no numpy RuntimeWarning ------------------

BACKWARD_EDGES = [
    pytest.param(lambda x: x.sqrt(), torch.sqrt, [0.0, 4.0], id="sqrt-at-0"),
    pytest.param(lambda x: x.tanh(), torch.tanh, [INF, -INF, 1.0], id="tanh-at-inf"),
    pytest.param(lambda x: (x * x).sum().sqrt(), lambda x: (x * x).sum().sqrt(), [0.0, 0.0],
                 id="norm-at-0"),
    pytest.param(lambda x: x.logsumexp(0), lambda x: x.logsumexp(0), [-INF, -INF],
                 id="logsumexp-of-minus-inf"),
    pytest.param(lambda x: x.asin(), torch.asin, [1.0, 0.5], id="asin-at-1"),
]  # fmt: skip


@pytest.mark.parametrize(("ours", "theirs", "values"), BACKWARD_EDGES)
def test_backward_at_domain_edges_matches_torch_without_warnings(ours, theirs, values):
    x = tg.Tensor(np.array(values), requires_grad=True)
    torch_x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    with np.errstate(all="ignore"):
        out = ours(x)  # (the forward may warn: README says why)
    out.sum().backward()  # warnings are errors in the suite: this must not warn
    theirs(torch_x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), torch_x.grad.numpy())
