"""Checks and diagnoses of conv2d.py (a backward in numpy), function.py (a custom
`tg.Function`) and hvp.py (a Hessian-vector product with the engine's double backward)."""

from __future__ import annotations

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)

from .checking import (
    Check,
    Diagnosis,
    MismatchError,
    close,
    engine_gradients,
    gives,
    matches,
    numerical_gradient,
    random,
)

# --------------------------------------------------------------------------- conv2d.py

CONV_SHAPES = [
    ((1, 1, 4, 4), (1, 1, 2, 2)),
    ((2, 3, 5, 5), (4, 3, 3, 3)),
    ((1, 2, 4, 6), (3, 2, 2, 3)),
]


def _conv_case(x_shape, w_shape):
    def run(module):
        x, w = random(x_shape, 110), random(w_shape, 111)
        out_shape = (
            x_shape[0],
            w_shape[0],
            x_shape[2] - w_shape[2] + 1,
            x_shape[3] - w_shape[3] + 1,
        )
        grad_output = random(out_shape, 112)
        _, (dx, dw) = engine_gradients(lambda a, b: F.conv2d(a, b), [x, w], grad_output)
        got = module.backward(x.copy(), w.copy(), grad_output.copy())
        if not isinstance(got, tuple) or len(got) != 2:
            raise MismatchError("backward must return (dx, dw)")
        close(got[0], dx, "dx vs the engine", rtol=1e-9, atol=1e-10)
        close(got[1], dw, "dw vs the engine", rtol=1e-9, atol=1e-10)

    return run


def conv2d_checks():
    def finite_differences(module):
        x, w = random((1, 2, 3, 3), 113), random((2, 2, 2, 2), 114)
        grad_output = random((1, 2, 2, 2), 115)
        dx, dw = module.backward(x, w, grad_output)
        close(
            dx,
            numerical_gradient(lambda v: float((module.forward(v, w) * grad_output).sum()), x),
            "dx",
            rtol=1e-6,
        )
        close(
            dw,
            numerical_gradient(lambda v: float((module.forward(x, v) * grad_output).sum()), w),
            "dw",
            rtol=1e-6,
        )

    return [
        *[
            Check(
                f"dx and dw equal the engine's, x {x} and w {w}",
                "backward",
                _conv_case(x, w),
            )
            for x, w in CONV_SHAPES
        ],
        Check("dx and dw equal central differences of forward", "backward", finite_differences),
    ]


def conv2d_diagnoses():
    x, w = random((2, 2, 4, 4), 116), random((3, 2, 2, 2), 117)
    grad_output = random((2, 3, 3, 3), 118)

    def dw_of_one_sample(module):
        got = gives(module.backward, x, w, grad_output)
        if got is None or np.shape(got[1]) != w.shape:
            return got is not None  # dw kept a batch dim
        _, (_, first_only) = engine_gradients(
            lambda a, b: F.conv2d(a, b), [x[:1], w], grad_output[:1]
        )
        return matches(got[1], first_only)

    def dx_without_overlap(module):
        got = gives(module.backward, x, w, grad_output)
        if got is None or np.shape(got[0]) != x.shape:
            return False
        _, (dx, _) = engine_gradients(lambda a, b: F.conv2d(a, b), [x, w], grad_output)
        return not matches(got[0], dx) and matches(got[0][..., :1, :1], dx[..., :1, :1])

    return [
        Diagnosis(
            "backward",
            "dw has w's shape (F, C, kH, kW): sum its products over the batch (and the "
            "output positions)",
            dw_of_one_sample,
        ),
        Diagnosis(
            "backward",
            "a pixel covered by several windows gets the sum of their gradients: add into dx "
            "(+=) at each kernel offset, do not assign",
            dx_without_overlap,
        ),
    ]


# ------------------------------------------------------------------------- function.py


def _silu_gradient(data, grad_output):
    _, (expected,) = engine_gradients(lambda t: t * t.sigmoid(), [data], grad_output)
    return expected


def _function_case(data, grad_output):
    def run(module):
        x = tg.Tensor(np.array(data, dtype=np.float64), requires_grad=True)
        y = module.SiLU.apply(x)
        close(y.numpy(), (x * x.sigmoid()).numpy(), "forward vs x * sigmoid(x)")
        y.backward(tg.Tensor(np.array(grad_output, dtype=np.float64)))
        close(x.grad.numpy(), _silu_gradient(data, grad_output), "x.grad vs the engine")

    return run


def function_checks():
    def gradcheck(module):
        x = tg.Tensor(random((4,), 120), dtype=np.float64, requires_grad=True)
        if not tg.gradcheck(module.SiLU.apply, (x,)):
            raise MismatchError("tg.gradcheck(SiLU.apply, (x,)) is False")

    def extreme(module):
        data = np.array([-1000.0, -30.0, 30.0, 1000.0])
        x = tg.Tensor(data, requires_grad=True)
        with np.errstate(over="raise", invalid="raise"):
            y = module.SiLU.apply(x)
            y.sum().backward()
        close(y.numpy(), [0.0, -30.0 / (1 + np.exp(30.0)), 30.0 / (1 + np.exp(-30.0)), 1000.0], "y")
        close(x.grad.numpy(), _silu_gradient(data, np.ones(4)), "x.grad", atol=1e-12)

    def used_twice(module):
        data = random((3,), 121)
        x = tg.Tensor(data, requires_grad=True)
        (module.SiLU.apply(x) * module.SiLU.apply(x)).sum().backward()
        expected = 2 * (data / (1 + np.exp(-data))) * _silu_gradient(data, np.ones(3))
        close(x.grad.numpy(), expected, "x.grad of SiLU(x)²")

    return [
        Check(
            "SiLU.apply gives x · sigmoid(x) and the engine's gradient, seeded with ones",
            "SiLU",
            _function_case(random((5,), 122), np.ones(5)),
        ),
        Check(
            "the gradient is multiplied by the gradient arriving from above (a (2, 3) g)",
            "SiLU",
            _function_case(random((2, 3), 123), random((2, 3), 124)),
        ),
        Check("tg.gradcheck passes in float64", "SiLU", gradcheck),
        Check("x = ±1000: no overflow, the right values and gradient", "SiLU", extreme),
        Check("SiLU(x) used twice in a graph: the gradients add up", "SiLU", used_twice),
    ]


def _silu_backward_of(module, data, grad_output):
    x = tg.Tensor(np.array(data, dtype=np.float64), requires_grad=True)
    module.SiLU.apply(x).backward(tg.Tensor(np.array(grad_output, dtype=np.float64)))
    return x.grad.numpy()


def function_diagnoses():
    data = np.array([-1.5, 0.5, 2.0])
    s = 1 / (1 + np.exp(-data))

    def gradient_is(wrong, grad_output=None):
        grad_output = np.ones(3) if grad_output is None else grad_output
        return lambda m: matches(gives(_silu_backward_of, m, data, grad_output), wrong)

    return [
        Diagnosis(
            "SiLU",
            "multiply by grad_output, the gradient arriving from above (the chain rule)",
            gradient_is(s + data * s * (1 - s), np.full(3, 2.0)),
        ),
        Diagnosis(
            "SiLU",
            "x · s(x) is a product: its derivative is s + x s' (product rule), not s alone",
            gradient_is(s),
        ),
        Diagnosis(
            "SiLU",
            "the product rule needs both terms: s + x s (1 - s), you have only x s (1 - s)",
            gradient_is(data * s * (1 - s)),
        ),
    ]


# ------------------------------------------------------------------------------ hvp.py


def _hessian(f, data):
    """The Hessian of `f` at `data` by central differences of the engine's gradient."""

    def gradient(v):
        x = tg.Tensor(v, requires_grad=True)
        f(x).backward()
        return x.grad.numpy()

    columns = []
    for index in range(data.size):
        step = np.zeros_like(data)
        step.reshape(-1)[index] = 1e-5
        columns.append(((gradient(data + step) - gradient(data - step)) / 2e-5).reshape(-1))
    return np.stack(columns, axis=1)


FUNCTIONS = {
    "Σ x³ (a diagonal Hessian)": lambda x: (x * x * x).sum(),
    "(Σ x)² + Σ x·tanh(x) (a full Hessian)": lambda x: x.sum() * x.sum() + (x * x.tanh()).sum(),
    "Σ exp(x_i x_j), a (2, 2) input": lambda x: (x.reshape(4, 1) * x.reshape(1, 4)).exp().sum(),
}


def _hvp_case(description, shape):
    def run(module):
        function = FUNCTIONS[description]
        data, vector = random(shape, 130) * 0.5, random(shape, 131)
        x = tg.Tensor(data, requires_grad=True)
        got = module.hvp(function, x, tg.Tensor(vector))
        expected = (_hessian(function, data) @ vector.reshape(-1)).reshape(shape)
        close(
            np.asarray(getattr(got, "numpy", lambda: got)()), expected, "H v", rtol=1e-5, atol=1e-6
        )
        if x.grad is not None:
            raise MismatchError("hvp changed x.grad: take gradients with tg.grad, not backward()")

    return run


def hvp_checks():
    return [
        Check(f"H v of {name}", "hvp", _hvp_case(name, shape))
        for name, shape in zip(FUNCTIONS, [(4,), (3,), (2, 2)])
    ]


def hvp_diagnoses():
    data, vector = np.array([0.5, -1.0, 1.5]), np.array([1.0, 2.0, -1.0])
    function = FUNCTIONS["(Σ x)² + Σ x·tanh(x) (a full Hessian)"]
    hessian = _hessian(function, data)

    def result(module):
        try:
            got = module.hvp(function, tg.Tensor(data, requires_grad=True), tg.Tensor(vector))
        except Exception as error:  # the message says which mistake
            return error
        return np.asarray(got.numpy() if hasattr(got, "numpy") else got)

    def no_graph(module):
        got = result(module)
        return (isinstance(got, Exception) and "require" in str(got)) or (
            isinstance(got, np.ndarray) and matches(got, np.zeros(3))
        )

    return [
        Diagnosis(
            "hvp",
            "the first gradient must be differentiable itself: tg.grad(f(x), [x], "
            "create_graph=True), or the second has no graph to walk",
            no_graph,
        ),
        Diagnosis(
            "hvp",
            "contract with v before the second gradient, grad((∇f · v).sum(), x); "
            "(H 1) * v is not H v",
            lambda m: matches(result(m), (hessian @ np.ones(3)) * vector, rtol=1e-5),
        ),
        Diagnosis(
            "hvp",
            "that is the gradient ∇f (times v): take the gradient a second time",
            lambda m: matches(result(m), _first_gradient(function, data) * vector, rtol=1e-6),
        ),
    ]


def _first_gradient(function, data):
    x = tg.Tensor(data, requires_grad=True)
    function(x).backward()
    return x.grad.numpy()
