"""Checks and diagnoses of relu.py, softmax.py, log_softmax.py, cross_entropy.py and
gradient_check.py."""

from __future__ import annotations

import numpy as np

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import reference

from .checking import (
    Check,
    Diagnosis,
    MismatchError,
    close,
    engine_gradients,
    gives,
    matches,
    random,
    same_dtype,
    shape_text,
)


def _normalised_along(y, axis):
    """True when the softmax `y` sums to 1 along `axis` (its exp, for a log-softmax)."""
    if y is None or np.shape(y) != (3, 4):
        return False
    y = np.asarray(y, dtype=np.float64)
    probabilities = y if np.all(y >= 0) else np.exp(y)
    return matches(probabilities.sum(axis=axis), np.ones(np.delete((3, 4), axis)))


def _raises_broadcast_error(function, *arguments):
    """True when `function(*arguments)` fails to broadcast two shapes (a missing keepdims)."""
    try:
        with np.errstate(all="ignore"):
            function(*arguments)
    except ValueError as error:
        return "broadcast" in str(error)
    except Exception:  # another mistake
        return False
    return False


# ----------------------------------------------------------------------------- relu.py


def relu_checks():
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

        return run

    def inplace(module):
        x, grad_output = random((4, 5), 3), random((4, 5), 4)
        kept_x, kept_grad = x.copy(), grad_output.copy()
        got = module.backward(x, grad_output)
        if not np.array_equal(grad_output, kept_grad):
            raise MismatchError("backward wrote into grad_output")
        if not np.array_equal(x, kept_x):
            raise MismatchError("backward wrote into x")
        close(got, kept_grad * (kept_x > 0), "backward")

    return [
        *[
            Check(
                f"dx = g where x > 0 and 0 elsewhere, {shape_text(shape)}, "
                f"{np.dtype(dtype).name} kept",
                "backward",
                backward_case(shape, dtype),
            )
            for shape, dtype in [
                ((), np.float64),
                ((7,), np.float64),
                ((2, 3, 4), np.float64),
                ((5,), np.float32),
                ((5,), np.float16),
            ]
        ],
        Check(
            "dx is 0 where x is exactly 0 (the subgradient PyTorch takes)",
            "backward",
            backward_case((6,), np.float64, zeros=True),
        ),
        Check("backward writes into neither grad_output nor x", "backward", inplace),
    ]


def relu_diagnoses():
    x, g = np.array([0.0, 1.5, -1.0]), np.array([2.0, 2.0, 2.0])

    def writes_into_arguments(module):
        x_copy, g_copy = x.copy(), g.copy()
        try:
            module.backward(x_copy, g_copy)  # no copies here: did it write into them?
        except Exception:  # another mistake
            return False
        return not (np.array_equal(x_copy, x) and np.array_equal(g_copy, g))

    def promotes(module):
        got = gives(module.backward, x.astype(np.float32), g.astype(np.float32))
        return getattr(got, "dtype", None) == np.float64

    return [
        Diagnosis(
            "backward",
            "at x = 0 you pass the gradient through: PyTorch takes the subgradient 0 there "
            "(x > 0, not x >= 0)",
            lambda m: matches(gives(m.backward, x, g), [2.0, 2.0, 0.0]),
        ),
        Diagnosis(
            "backward",
            "you write into an argument: grad_output may be shared with another branch (an "
            "Add hands one array to both inputs); build a new array",
            writes_into_arguments,
        ),
        Diagnosis(
            "backward",
            "float32 in, float64 out: multiply by the boolean mask (x > 0) itself, which keeps "
            "the dtype; .astype(np.float64) promotes",
            promotes,
        ),
        Diagnosis(
            "backward",
            "you return the mask alone: multiply it by grad_output (the chain rule)",
            lambda m: matches(gives(m.backward, x, g), [0.0, 1.0, 0.0]),
        ),
    ]


# ---------------------------------------------------------------- softmax, log_softmax


def _softmax_forward_checks(engine_op, reference_forward, extra=()):
    def case(shape, axis, dtype=np.float64, scale=1.0, shift=0.0, inf_row=False, far=False):
        def run(module):
            x = random(shape, 5, scale) + shift
            if far:
                x[0] += 1000.0
                x[-1] -= 1000.0
            if inf_row:
                x[0] = -np.inf
            got = module.forward(x.astype(dtype), axis)
            same_dtype(got, dtype, "forward")
            with np.errstate(invalid="ignore"):
                expected = engine_op(tg.Tensor(x), axis).numpy()
            tolerance = 2e-2 if dtype == np.float16 else 1e-5 if dtype == np.float32 else 1e-9
            close(got, expected, "forward vs the engine", rtol=tolerance, atol=tolerance)
            if axis in (-1, len(shape) - 1) and not inf_row and dtype == np.float64:
                close(got, reference_forward(x), "forward vs tinygrad_ops.reference")

        return run

    return [
        Check("forward equals the engine's along axis -1, shape (5,)", "forward", case((5,), -1)),
        Check("forward along axis -1, shape (3, 4)", "forward", case((3, 4), -1)),
        Check("forward along axis 0 (the columns), shape (3, 4)", "forward", case((3, 4), 0)),
        Check("forward along a middle axis, shape (2, 3, 4)", "forward", case((2, 3, 4), 1)),
        Check(
            "forward is finite and right for inputs about 1000 (where exp overflows)",
            "forward",
            case((3, 4), -1, scale=10.0, shift=1000.0),
        ),
        Check(
            "forward is right for rows 2000 apart (each row on its own)",
            "forward",
            case((3, 4), -1, far=True),
        ),
        Check(
            "forward gives nan in an all -inf row (as PyTorch) and the other rows right",
            "forward",
            case((3, 4), -1, inf_row=True),
        ),
        *extra,
        Check("forward keeps float32", "forward", case((3, 4), -1, dtype=np.float32)),
        Check(
            "forward keeps fp16, within fp16's precision",
            "forward",
            case((3, 4), -1, dtype=np.float16, scale=4.0),
        ),
    ]


def _softmax_backward_checks(engine_op, reference_backward):
    def case(shape, axis, scale=1.0, shift=0.0):
        def run(module):
            x = random(shape, 5, scale) + shift
            grad_output = random(shape, 6)
            expected, (expected_grad,) = engine_gradients(
                lambda t: engine_op(t, axis), [x], grad_output
            )
            got = module.backward(expected.copy(), grad_output.copy(), axis)
            close(got, expected_grad, "backward vs the engine", rtol=1e-7, atol=1e-9)
            if reference_backward is not None and axis in (-1, len(shape) - 1):
                close(got, reference_backward(expected, grad_output), "backward vs reference")

        return run

    return [
        Check("backward equals the engine's along axis -1, shape (5,)", "backward", case((5,), -1)),
        Check("backward along axis -1, shape (3, 4)", "backward", case((3, 4), -1)),
        Check("backward along axis 0, shape (3, 4)", "backward", case((3, 4), 0)),
        Check("backward along a middle axis, shape (2, 3, 4)", "backward", case((2, 3, 4), 1)),
    ]


def softmax_checks():
    return _softmax_forward_checks(F.softmax, reference.softmax) + _softmax_backward_checks(
        F.softmax, reference.softmax_backward
    )


def _numpy_softmax(x, axis):
    exps = np.exp(x - x.max(axis=axis, keepdims=True))
    return exps / exps.sum(axis=axis, keepdims=True)


def _forward_diagnoses(wrong_global, wrong_axis):
    far = np.array([[0.0, 1.0, 2.0], [2000.0, 2001.0, 2002.0]])
    large = np.array([[1000.0, 1001.0, 1002.0]])
    rectangle = random((3, 4), 90)
    return [
        Diagnosis(
            "forward",
            "exp of a large input overflows: subtract the max along `axis` first (it "
            "cancels: numerator and denominator are both scaled by exp(-m))",
            lambda m: not np.all(np.isfinite(np.asarray(gives(m.forward, large, -1), float))),
        ),
        Diagnosis(
            "forward",
            "you subtract the max of the whole array: take it along `axis` (keepdims=True), "
            "or a row far below it underflows to 0 / 0",
            lambda m: matches(gives(m.forward, far, -1), wrong_global(far)),
        ),
        Diagnosis(
            "forward",
            "you reduce along the last axis whatever `axis` says: pass axis=axis to every "
            "max and sum",
            lambda m: (
                matches(gives(m.forward, rectangle, 0), wrong_axis(rectangle))
                or _normalised_along(gives(m.forward, rectangle, 0), -1)
            ),
        ),
        Diagnosis(
            "forward",
            "a reduction without keepdims=True: the (3,) result lines up with the last axis, "
            "not with the rows it came from",
            lambda m: _raises_broadcast_error(m.forward, rectangle, -1),
        ),
    ]


def _backward_diagnoses(right, global_sum, no_factor):
    y = _numpy_softmax(random((3, 4), 91), -1)
    g = random((3, 4), 92)
    return [
        Diagnosis(
            "backward",
            "the sum over the whole array: the sum in the rule runs along `axis` only, "
            "with keepdims=True",
            lambda m: matches(gives(m.backward, y, g, -1), global_sum(y, g)),
        ),
        Diagnosis(
            "backward",
            "a sum without keepdims=True: the (3,) result lines up with the last axis, not "
            "with the rows it came from",
            lambda m: (
                _raises_broadcast_error(m.backward, y, g, -1)
                or matches(gives(m.backward, y[:3, :3], g[:3, :3], -1), _no_keepdims(right, y, g))
            ),
        ),
        Diagnosis(
            "backward",
            no_factor[0],
            lambda m: matches(gives(m.backward, y, g, -1), no_factor[1](y, g)),
        ),
        Diagnosis(
            "backward",
            "you sum along the last axis whatever `axis` says: pass axis=axis",
            lambda m: (
                matches(gives(m.backward, y, g, 0), right(y, g, -1))
                and not matches(right(y, g, 0), right(y, g, -1))
            ),
        ),
    ]


def _no_keepdims(right, y, g):
    """The rule with its (3,) sum lined up against the last axis (square input)."""
    y, g = y[:3, :3], g[:3, :3]
    if right is _softmax_rule:
        return y * (g - (g * y).sum(axis=-1))
    return g - np.exp(y) * g.sum(axis=-1)


def _softmax_rule(y, g, axis):
    return y * (g - (g * y).sum(axis=axis, keepdims=True))


def _log_softmax_rule(y, g, axis):
    return g - np.exp(y) * g.sum(axis=axis, keepdims=True)


def softmax_diagnoses():
    def wrong_global(x):
        exps = np.exp(x - x.max())
        return exps / exps.sum(axis=-1, keepdims=True)

    return _forward_diagnoses(wrong_global, lambda x: _numpy_softmax(x, -1)) + _backward_diagnoses(
        _softmax_rule,
        lambda y, g: y * (g - (g * y).sum()),
        (
            "the rule is dx = y (g - Σ g y): multiply by y",
            lambda y, g: g - (g * y).sum(axis=-1, keepdims=True),
        ),
    )


def _log_softmax_far(module):
    x = np.array([[0.0, -800.0, 1.0], [3.0, 2.0, 1.0]])
    got = module.forward(x, -1)
    expected = F.log_softmax(tg.Tensor(x), -1).numpy()
    close(got, expected, "forward 800 below the largest logit", rtol=1e-9)


def log_softmax_checks():
    far = Check(
        "forward is finite and right 800 below the largest logit (no log of an underflowed 0)",
        "forward",
        _log_softmax_far,
    )

    def reference_log_softmax(x):
        return np.log(reference.softmax(x))

    return _softmax_forward_checks(
        F.log_softmax, reference_log_softmax, (far,)
    ) + _softmax_backward_checks(F.log_softmax, None)


def log_softmax_diagnoses():
    def log_of_softmax(module):
        got = gives(module.forward, np.array([[0.0, -800.0, 1.0]]), -1)
        return got is not None and np.isneginf(np.asarray(got, float)).any()

    def wrong_global(x):
        shifted = x - x.max()
        return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))

    def wrong_axis(x):
        return np.log(_numpy_softmax(x, -1))

    return [
        Diagnosis(
            "forward",
            "log(softmax(x)) takes the log of a softmax that underflowed to 0 (-inf for a "
            "logit 800 below the largest): compute x - m - log Σ exp(x - m) instead",
            log_of_softmax,
        ),
        *_forward_diagnoses(wrong_global, wrong_axis),
        *_backward_diagnoses(
            _log_softmax_rule,
            lambda y, g: g - np.exp(y) * g.sum(),
            (
                "y is the log of the softmax: the rule is dx = g - exp(y) Σ g, with exp(y)",
                lambda y, g: g - y * g.sum(axis=-1, keepdims=True),
            ),
        ),
    ]


# --------------------------------------------------------------------- cross_entropy.py


def _cross_entropy_oracle(logits, targets, grad_output):
    target_tensor = tg.Tensor(targets, dtype=np.int64)
    with np.errstate(invalid="ignore"):
        return engine_gradients(lambda t: F.cross_entropy(t, target_tensor), [logits], grad_output)


def cross_entropy_checks():
    def case(
        rows, classes, scale=1.0, masked=False, grad_output=1.0, dtype=np.float64, part="forward"
    ):
        def run(module):
            logits = random((rows, classes), 7, scale)
            targets = np.arange(rows) % classes
            if masked:
                logits[:, -1] = -np.inf
                targets = np.arange(rows) % (classes - 1)
            expected, (expected_grad,) = _cross_entropy_oracle(logits, targets, grad_output)
            tolerance = 1e-5 if dtype != np.float64 else 1e-8
            if part == "forward":
                got = module.forward(logits.astype(dtype), targets)
                close(got, expected, "forward vs the engine", rtol=tolerance)
            else:
                got = module.backward(logits.astype(dtype), targets, grad_output)
                close(got, expected_grad, "backward vs the engine", rtol=tolerance, atol=1e-9)

        return run

    return [
        Check("the mean loss of 4 rows, 3 classes", "forward", case(4, 3)),
        Check("the loss of logits about 1000 is finite and right", "forward", case(4, 3, 1000.0)),
        Check("a masked class (logit -inf) gives no nan", "forward", case(4, 4, masked=True)),
        Check("float32 logits", "forward", case(4, 3, dtype=np.float32)),
        Check("backward: 4 rows, 3 classes", "backward", case(4, 3, part="backward")),
        Check("backward: 1 row, 5 classes", "backward", case(1, 5, part="backward")),
        Check("backward: logits about 1000", "backward", case(4, 3, 1000.0, part="backward")),
        Check(
            "backward: a masked class gets gradient 0, no nan",
            "backward",
            case(4, 4, masked=True, part="backward"),
        ),
        Check(
            "backward: scaled by grad_output (2.5)",
            "backward",
            case(3, 4, grad_output=2.5, part="backward"),
        ),
    ]


def cross_entropy_diagnoses():
    logits, targets = random((4, 3), 93), np.array([0, 1, 2, 0])
    _, (right,) = _cross_entropy_oracle(logits, targets, 1.0)
    loss, _ = _cross_entropy_oracle(logits, targets, 1.0)
    return [
        Diagnosis(
            "forward",
            "exp of a large logit overflows: log Σ exp(x) = m + log Σ exp(x - m), m the row's max",
            lambda m: (
                not np.isfinite(
                    float(gives(m.forward, random((2, 3), 94, 1000.0), np.array([0, 1])) or np.nan)
                )
            ),
        ),
        Diagnosis(
            "forward",
            "the loss is the mean over the rows, not the sum",
            lambda m: matches(gives(m.forward, logits, targets), 4 * loss),
        ),
        Diagnosis(
            "backward",
            "the loss is a mean over N rows, so its gradient has a 1 / N: divide by N",
            lambda m: matches(gives(m.backward, logits, targets, 1.0), 4 * right),
        ),
        Diagnosis(
            "backward",
            "multiply by grad_output, the gradient arriving from above",
            lambda m: matches(gives(m.backward, logits, targets, 2.5), right),
        ),
    ]


# -------------------------------------------------------------------- gradient_check.py


def _function(v):
    return float((np.sin(v) * v).sum())


def _derivative(v):
    return np.sin(v) + v * np.cos(v)


def gradient_check_checks():
    def case(shape, dtype):
        def run(module):
            x = random(shape, 8, dtype=dtype)
            kept = x.copy()
            got = module.numerical_gradient(_function, x)
            if not np.array_equal(x, kept):
                raise MismatchError("numerical_gradient changed x")
            close(got, _derivative(x.astype(np.float64)), "vs the derivative", rtol=1e-6, atol=1e-7)

        return run

    def verdict(module):
        x = random((3,), 9)
        if module.gradcheck(_function, _derivative, x) is not True:
            raise MismatchError("gradcheck said False for the right gradient")
        if module.gradcheck(_function, lambda v: 1.01 * _derivative(v), x) is not False:
            raise MismatchError("gradcheck said True for a gradient 1% off")

    return [
        Check(
            "numerical_gradient is within 1e-6 of the derivative, shape (3, 2)",
            "numerical_gradient",
            case((3, 2), np.float64),
        ),
        Check("numerical_gradient of a scalar input", "numerical_gradient", case((), np.float64)),
        Check(
            "numerical_gradient of a float32 input is accurate to 1e-6",
            "numerical_gradient",
            case((4,), np.float32),
        ),
        Check(
            "numerical_gradient of an fp16 input is accurate to 1e-6",
            "numerical_gradient",
            case((4,), np.float16),
        ),
        Check(
            "gradcheck says True for the right gradient, False for one 1% off",
            "gradcheck",
            verdict,
        ),
    ]


def gradient_check_diagnoses():
    def one_sided(module):
        got = gives(module.numerical_gradient, lambda v: float((v**3).sum()), np.array([1.0]))
        return got is not None and abs(float(np.ravel(got)[0]) - 3.0) > 1e-6

    def low_precision(module):
        got = gives(module.numerical_gradient, _function, np.array([0.7], dtype=np.float32))
        right = _derivative(np.array([0.7], dtype=np.float32).astype(np.float64))
        return got is not None and (
            getattr(got, "dtype", None) != np.float64 or not matches(got, right, 1e-6)
        )

    def changes_x(module):
        x = np.array([0.5, 1.5])
        gives(module.numerical_gradient, _function, x)
        return not np.array_equal(x, [0.5, 1.5])

    return [
        Diagnosis(
            "numerical_gradient",
            "a one-sided difference (f(x + h) - f(x)) / h is off by O(h): take the central "
            "one, (f(x + h) - f(x - h)) / 2h",
            one_sided,
        ),
        Diagnosis(
            "numerical_gradient",
            "the differences are taken in the input's low precision: work on a float64 copy "
            "(np.array(x, dtype=np.float64))",
            low_precision,
        ),
        Diagnosis(
            "numerical_gradient",
            "x is changed: restore each element after stepping it (and work on a copy)",
            changes_x,
        ),
        Diagnosis(
            "gradcheck",
            "compare with a tolerance, np.allclose(analytic, numeric, rtol=rtol, atol=atol), "
            "and return a bool",
            lambda m: gives(m.gradcheck, _function, _derivative, np.array([0.3, 1.1])) is not True,
        ),
    ]
