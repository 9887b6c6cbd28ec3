"""`tg.gradcheck`, the torch-free oracle: on every primitive, and on itself.

Inputs stay away from kinks (relu, abs, clip bounds, max ties), where central differences
straddle two slopes and disagree with any one-sided rule.
"""

import numpy as np
import pytest

import tinygrad_ops as tg

CONDITION = np.array([[True, False, True], [False, True, False]])


def away_from_zero(shape, seed):
    """Values in ±[0.3, 1.5]: no kinks of relu/abs/sign within eps."""
    generator = np.random.default_rng(seed)
    return generator.uniform(0.3, 1.5, size=shape) * generator.choice([-1.0, 1.0], size=shape)


def inputs(*shapes, seed=0, low=None, high=None):
    generator = np.random.default_rng(seed)
    tensors = []
    for index, shape in enumerate(shapes):
        if low is not None:
            values = generator.uniform(low, high, size=shape)
        else:
            values = away_from_zero(shape, seed + index)
        tensors.append(tg.Tensor(np.asarray(values, dtype=np.float64), requires_grad=True))
    return tensors


def case(name, fn, *shapes, low=None, high=None):
    return pytest.param(fn, shapes, low, high, id=name)


CASES = [
    case("add-broadcast", lambda a, b: a + b, (2, 3), (3,)),
    case("sub-broadcast", lambda a, b: a - b, (2, 1), (3,)),
    case("mul-broadcast", lambda a, b: a * b, (2, 3), ()),
    case("div", lambda a, b: a / b, (2, 3), (2, 3), low=0.5, high=2.0),
    case("neg", lambda a: -a, (2, 3)),
    case("pow-tensor", lambda a, b: a**b, (2, 3), (3,), low=0.5, high=2.0),
    case("pow-scalar", lambda a: a**3, (2, 3)),
    case("pow-scalar-fractional", lambda a: a**1.5, (4,), low=0.5, high=2.0),
    case("rpow", lambda b: 3.0**b, (4,)),
    case("exp", lambda a: a.exp(), (2, 3)),
    case("log", lambda a: a.log(), (2, 3), low=0.2, high=2.0),
    case("sqrt", lambda a: a.sqrt(), (2, 3), low=0.2, high=2.0),
    case("abs", lambda a: a.abs(), (2, 3)),
    case("tanh", lambda a: a.tanh(), (2, 3)),
    case("sigmoid", lambda a: a.sigmoid(), (2, 3)),
    case("relu", lambda a: a.relu(), (2, 3)),
    case("maximum", tg.maximum, (2, 3), (3,)),
    case("where", lambda a, b: tg.where(CONDITION, a, b), (2, 3), (1, 3)),
    case("clip", lambda a: a.clip(-1.0, 1.0), (3, 4)),
    case("sum-axis", lambda a: a.sum(axis=(0, 2), keepdims=True), (2, 3, 2)),
    case("max-axis", lambda a: a.max(axis=1), (2, 4)),
    case("min-all", lambda a: a.min(), (3, 2)),
    case("mean", lambda a: a.mean(axis=-1), (2, 3)),
    case("var-ddof1", lambda a: a.var(axis=0, ddof=1), (4, 2)),
    case("reshape", lambda a: a.reshape(3, 2), (2, 3)),
    case("transpose", lambda a: a.transpose(2, 0, 1), (2, 3, 2)),
    case("swapaxes", lambda a: a.swapaxes(0, -1), (2, 3)),
    case("broadcast_to", lambda a: a.broadcast_to((3, 2, 4)), (2, 1)),
    case("getitem-slices", lambda a: a[::-1, None, 1:], (3, 3)),
    case("getitem-repeated", lambda a: a[np.array([0, 2, 0, 0])], (3, 2)),
    case("getitem-mask", lambda a: a[CONDITION], (2, 3)),
    case("stack", lambda a, b: tg.stack([a, b], axis=1), (2, 2), (2, 2)),
    case("concatenate", lambda a, b: tg.concatenate([a, b], axis=-1), (2, 1), (2, 3)),
    case("matmul-vector-vector", lambda a, b: a @ b, (3,), (3,)),
    case("matmul-vector-matrix", lambda a, b: a @ b, (3,), (3, 2)),
    case("matmul-matrix-vector", lambda a, b: a @ b, (2, 3), (3,)),
    case("matmul-broadcast-batch", lambda a, b: a @ b, (2, 1, 2, 3), (3, 3, 2)),
    case("cast-float64", lambda a: a.astype(np.float64) * 2, (3,)),
]


@pytest.mark.parametrize(("fn", "shapes", "low", "high"), CASES)
def test_gradcheck_primitive(fn, shapes, low, high):
    assert tg.gradcheck(fn, inputs(*shapes, low=low, high=high))


def test_gradcheck_composite_several_inputs():
    a, b, c = inputs((2, 3), (3, 2), (2,))
    assert tg.gradcheck(lambda a, b, c: ((a @ b).tanh() + c).exp().sum(axis=0), (a, b, c))


def test_gradcheck_skips_inputs_that_do_not_require_grad():
    a = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    constant = tg.Tensor(np.array([3.0, 4.0]))
    assert tg.gradcheck(lambda a, c: a * c, (a, constant))


def test_gradcheck_accepts_float32_inputs_and_leaves_them_untouched():
    x = tg.Tensor(np.array([0.5, -1.0], dtype=np.float32), requires_grad=True)
    before = x.numpy().copy()
    assert tg.gradcheck(lambda t: t.tanh(), (x,))
    np.testing.assert_array_equal(x.numpy(), before)
    assert x.grad is None


class WrongSquare(tg.Function):
    """x**2 with the derivative 3x (wrong): gradcheck must catch it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x


class WrongInOneElement(tg.Function):
    """a * b, with the gradient of b wrong in its element (1, 0) only."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        grad_b = (grad_output * a).numpy().copy()
        grad_b[1, 0] += 1.0
        return grad_output * b, tg.Tensor(grad_b)


def test_gradcheck_raises_on_wrong_gradient():
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(tg.GradcheckError, match=r"input 0 .*element \(0,\)"):
        tg.gradcheck(WrongSquare.apply, (x,))


def test_gradcheck_returns_false_with_report():
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    assert tg.gradcheck(WrongSquare.apply, (x,), raise_exception=False) is False
    report = tg.gradcheck.last_report
    assert "input 0" in report
    assert "analytic 3.0" in report
    assert "numeric 2.0" in report


def test_gradcheck_report_names_the_wrong_input_and_element():
    a, b = inputs((2, 3), (2, 3))
    with pytest.raises(tg.GradcheckError) as error:
        tg.gradcheck(WrongInOneElement.apply, (a, b))
    message = str(error.value)
    assert "input 1" in message
    assert "element (1, 0)" in message
    # the (1, 0) column is off in every row of the Jacobian: 6 rows
    assert "6 of 36" in message


def test_gradcheck_through_float32_with_a_coarser_step():
    x = tg.Tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    assert tg.gradcheck(
        lambda t: t.astype(np.float32).tanh().astype(np.float64), (x,), eps=1e-2, atol=1e-3
    )


def test_gradcheck_without_differentiable_inputs_is_an_error():
    with pytest.raises(ValueError, match="requires grad"):
        tg.gradcheck(lambda t: t * 2, (tg.Tensor([1.0]),))


def test_gradcheck_rejects_a_function_that_returns_no_tensor():
    x = tg.Tensor(np.array([1.0]), requires_grad=True)
    with pytest.raises(TypeError, match="must return a Tensor"):
        tg.gradcheck(lambda t: t.numpy(), (x,))


def test_gradcheck_on_non_contiguous_inputs():
    transposed = np.random.default_rng(0).standard_normal((3, 2)).T
    fortran = np.asfortranarray(np.ones((2, 2), dtype=np.float32))
    x = tg.Tensor(transposed, requires_grad=True)
    y = tg.Tensor(fortran, requires_grad=True)
    assert tg.gradcheck(lambda a, b: a.exp().sum(axis=1) * (b * b).tanh().sum(), (x, y))
    np.testing.assert_array_equal(x.numpy(), transposed)
