"""Checks of relu.py, softmax.py, log_softmax.py, cross_entropy.py and gradient_check.py."""

from __future__ import annotations

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import reference

from .checking import (
    Case,
    MismatchError,
    close,
    engine_gradients,
    numerical_gradient,
    random,
    same_dtype,
    shape_text,
)

FP16 = "fp16 keeps ~3 digits and overflows past 65504: compute in the input's dtype, no more"


def relu_cases():
    def backward_case(shape, dtype, zeros=False):
        def run(module):
            x = random(shape, 1, dtype=dtype)
            if zeros:
                x.reshape(-1)[::2] = 0
            grad_output = random(shape, 2, dtype=dtype)
            got = module.backward(x.copy(), grad_output.copy())
            same_dtype(got, dtype, "backward")
            _, (expected,) = engine_gradients(lambda t: t.relu(), [x], grad_output)
            tolerance = 1e-3 if dtype == np.float16 else 1e-6
            close(got, expected, "backward vs the engine", rtol=tolerance)
            if not zeros:
                numeric = numerical_gradient(
                    lambda v: float((np.maximum(v, 0) * grad_output).sum()), x
                )
                close(got, numeric, "backward vs finite differences", rtol=max(tolerance, 1e-5))

        return run

    def inplace_trap(module):
        x = random((4, 5), 3)
        grad_output = random((4, 5), 4)
        kept_x, kept_grad = x.copy(), grad_output.copy()
        got = module.backward(x, grad_output)
        if not np.array_equal(grad_output, kept_grad):
            raise MismatchError("backward wrote into grad_output")
        if not np.array_equal(x, kept_x):
            raise MismatchError("backward wrote into x")
        close(got, kept_grad * (kept_x > 0), "backward")

    cases = [
        Case(
            f"{shape_text(shape)}, {np.dtype(dtype).name}",
            "dx = g * (x > 0), elementwise; keep the dtype of x"
            + ("; " + FP16 if dtype == np.float16 else ""),
            backward_case(shape, dtype),
        )
        for shape, dtype in [
            ((), np.float64),
            ((7,), np.float64),
            ((2, 3, 4), np.float64),
            ((5,), np.float32),
            ((5,), np.float16),
        ]
    ]
    cases.append(
        Case(
            "inputs exactly 0",
            "at x = 0 PyTorch takes the subgradient 0: x > 0, not x >= 0",
            backward_case((6,), np.float64, zeros=True),
        )
    )
    cases.append(
        Case(
            "the in-place trap",
            "grad_output may be shared with another branch (an Add hands "
            "one array to both inputs): build a new array, never assign into grad_output or x",
            inplace_trap,
        )
    )
    return cases


def _softmax_family(engine_op, reference_forward, reference_backward):
    """Cases for softmax.py or log_softmax.py (`forward(x, axis)`, `backward(y, g, axis)`)."""

    def case(shape, axis, dtype=np.float64, scale=1.0, shift=0.0, inf_row=False, far=False):
        def run(module):
            x = random(shape, 5, scale) + shift
            if far:
                x[0] += 1000.0
                x[-1] -= 1000.0
            if inf_row:
                x[0] = -np.inf
            grad_output = random(shape, 6)
            got = module.forward(x.astype(dtype), axis)
            same_dtype(got, dtype, "forward")
            with np.errstate(invalid="ignore"):
                expected, (expected_grad,) = engine_gradients(
                    lambda t: engine_op(t, axis), [x], grad_output
                )
            tolerance = 2e-2 if dtype == np.float16 else 1e-5 if dtype == np.float32 else 1e-9
            close(got, expected, "forward vs the engine", rtol=tolerance, atol=tolerance)
            if axis in (-1, len(shape) - 1) and not inf_row and dtype == np.float64:
                close(got, reference_forward(x), "forward vs tinygrad_ops.reference")
            if dtype != np.float64:
                return
            with np.errstate(invalid="ignore"):
                got_grad = module.backward(expected.copy(), grad_output.copy(), axis)
            close(got_grad, expected_grad, "backward vs the engine", rtol=1e-7, atol=1e-9)
            if reference_backward is not None and axis in (-1, len(shape) - 1) and not inf_row:
                close(
                    got_grad,
                    reference_backward(expected, grad_output),
                    "backward vs tinygrad_ops.reference",
                    rtol=1e-7,
                )
            if x.size <= 24 and not inf_row:
                numeric = numerical_gradient(
                    lambda v: float((module.forward(v, axis) * grad_output).sum()), x
                )
                close(got_grad, numeric, "backward vs finite differences", rtol=1e-5, atol=1e-7)

        return run

    along = "every sum and max runs along `axis` with keepdims=True"
    return [
        Case("shape (5,), axis -1", along, case((5,), -1)),
        Case("shape (3, 4), axis -1", along, case((3, 4), -1)),
        Case("shape (3, 4), axis 0", along + " (here the columns)", case((3, 4), 0)),
        Case("shape (2, 3, 4), axis 1", along + " (a middle axis)", case((2, 3, 4), 1)),
        Case(
            "large inputs (about 1000)",
            "exp(1000) overflows: subtract the max first",
            case((3, 4), -1, scale=10.0, shift=1000.0),
        ),
        Case(
            "rows 2000 apart",
            "take the max of each row (along axis), not of the whole array: "
            "a global max underflows the other rows to 0 / 0",
            case((3, 4), -1, far=True),
        ),
        Case(
            "an all -inf row",
            "a row of -inf gives nan (as PyTorch); the other rows must stay "
            "right: nothing computed across rows",
            case((3, 4), -1, inf_row=True),
        ),
        Case("float32", "keep the input's dtype", case((3, 4), -1, dtype=np.float32)),
        Case("fp16", FP16, case((3, 4), -1, dtype=np.float16, scale=4.0)),
    ]


def softmax_cases():
    return _softmax_family(F.softmax, reference.softmax, reference.softmax_backward)


def log_softmax_cases():
    def reference_log_softmax(x):
        return np.log(reference.softmax(x))

    return _softmax_family(F.log_softmax, reference_log_softmax, None)


def cross_entropy_cases():
    def case(rows, classes, scale=1.0, masked=False, grad_output=1.0, dtype=np.float64):
        def run(module):
            logits = random((rows, classes), 7, scale)
            targets = np.arange(rows) % classes
            if masked:
                logits[:, -1] = -np.inf
                targets = np.arange(rows) % (classes - 1)
            target_tensor = tg.Tensor(targets, dtype=np.int64)
            with np.errstate(invalid="ignore"):
                expected, (expected_grad,) = engine_gradients(
                    lambda t: F.cross_entropy(t, target_tensor), [logits], grad_output
                )
            got = module.forward(logits.astype(dtype), targets)
            close(
                got, expected, "forward vs the engine", rtol=1e-5 if dtype != np.float64 else 1e-9
            )
            got_grad = module.backward(logits.astype(dtype), targets, grad_output)
            close(
                got_grad,
                expected_grad,
                "backward vs the engine",
                rtol=1e-5 if dtype != np.float64 else 1e-8,
                atol=1e-9,
            )
            if not masked and rows * classes <= 40:
                numeric = numerical_gradient(
                    lambda v: module.forward(v, targets) * grad_output, logits
                )
                close(got_grad, numeric, "backward vs finite differences", rtol=1e-5, atol=1e-7)

        return run

    return [
        Case("4 rows, 3 classes", "dx = (softmax - one_hot) / N", case(4, 3)),
        Case("1 row, 5 classes", "the mean over N = 1 rows", case(1, 5)),
        Case("large logits (about 1000)", "log-sum-exp: m + log Σ exp(x - m)", case(4, 3, 1000.0)),
        Case(
            "a masked class (logit -inf)",
            "exp(-inf - m) = 0: no nan, gradient 0 there",
            case(4, 4, masked=True),
        ),
        Case(
            "grad_output 2.5",
            "multiply by grad_output (the gradient of the loss)",
            case(3, 4, grad_output=2.5),
        ),
        Case("float32 logits", "keep the input's dtype", case(4, 3, dtype=np.float32)),
    ]


def gradient_check_cases():
    def function(v):
        return float((np.sin(v) * v).sum())

    def analytic(v):
        return np.sin(v) + v * np.cos(v)

    def case(shape, dtype):
        def run(module):
            x = random(shape, 8, dtype=dtype)
            kept = x.copy()
            got = module.numerical_gradient(function, x)
            if not np.array_equal(x, kept):
                raise MismatchError("numerical_gradient changed x")
            close(
                got,
                analytic(x.astype(np.float64)),
                "numerical_gradient vs the derivative",
                rtol=1e-6,
                atol=1e-7,
            )

        return run

    def verdict(module):
        x = random((3,), 9)
        if module.gradcheck(function, analytic, x) is not True:
            raise MismatchError("gradcheck said False for the right gradient")
        if module.gradcheck(function, lambda v: 1.01 * analytic(v), x) is not False:
            raise MismatchError("gradcheck said True for a gradient 1% off")

    fp = "do the differences in float64 whatever x's dtype (np.array(x, dtype=np.float64))"
    return [
        Case(
            "shape (3, 2), float64",
            "(f(x + h) - f(x - h)) / 2h, one element at a time",
            case((3, 2), np.float64),
        ),
        Case("a scalar", "np.ndindex(()) gives one index, ()", case((), np.float64)),
        Case("float32 input", fp, case((4,), np.float32)),
        Case("fp16 input", fp + "; " + FP16, case((4,), np.float16)),
        Case(
            "gradcheck's verdict",
            "compare with np.allclose(analytic, numeric, rtol, atol)",
            verdict,
        ),
    ]
