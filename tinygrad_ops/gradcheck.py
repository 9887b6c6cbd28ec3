"""Gradient checking: analytic gradients against central finite differences in float64."""

import numpy as np

from .autograd.backward import grad
from .tensor import Tensor


class GradcheckError(RuntimeError):
    """Raised by `gradcheck` when an analytic gradient disagrees with finite differences."""


def gradcheck(
    fn,
    inputs,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
):
    """Check d fn(*inputs) / d input for every input that requires grad.

    The Jacobian is built twice in float64: column by column from central differences
    (f(x + eps) - f(x - eps)) / (2 eps), and row by row from backward passes. Every entry
    must satisfy |analytic - numeric| <= atol + rtol * |numeric|.

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([0.5, -1.0, 2.0], dtype="float64", requires_grad=True)
    >>> tg.gradcheck(lambda t: (t * t).tanh(), (x,))
    True
    """
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    originals = inputs
    inputs = tuple(
        # A C-ordered copy: the perturbation below writes through reshape(-1), a view only then
        Tensor(np.array(value.data, dtype=np.float64, order="C"), requires_grad=value.requires_grad)
        if isinstance(value, Tensor)
        else value
        for value in inputs
    )
    differentiable = [
        index
        for index, value in enumerate(inputs)
        if isinstance(value, Tensor) and value.requires_grad
    ]
    if not differentiable:
        raise ValueError("gradcheck: none of the inputs requires grad")

    def evaluate():
        out = fn(*inputs)
        if not isinstance(out, Tensor):
            raise TypeError(f"gradcheck: fn must return a Tensor, got {type(out).__name__}")
        return out

    output = evaluate()
    for index in differentiable:
        tensor = inputs[index]
        numeric = _numeric_jacobian(evaluate, tensor, output.data.size, eps)
        analytic = _analytic_jacobian(output, tensor, numeric.shape)
        report = _mismatch(analytic, numeric, atol, rtol, index, originals[index].shape)
        if report is not None:
            if raise_exception:
                raise GradcheckError(report)
            gradcheck.last_report = report
            return False
    return True


def _numeric_jacobian(evaluate, tensor, output_size, eps):
    """(output size, input size): column j is (f(x + eps e_j) - f(x - eps e_j)) / (2 eps)."""
    numeric = np.zeros((output_size, tensor.data.size))
    flat = tensor.data.reshape(-1)  # a view: the input is a C-ordered copy
    for element in range(flat.size):
        saved = flat[element]
        flat[element] = saved + eps
        plus = evaluate().data.astype(np.float64).reshape(-1)
        flat[element] = saved - eps
        minus = evaluate().data.astype(np.float64).reshape(-1)
        flat[element] = saved
        numeric[:, element] = (plus - minus) / (2 * eps)
    return numeric


def _analytic_jacobian(output, tensor, shape):
    """The same Jacobian from backward passes: row i is the gradient of output element i."""
    analytic = np.zeros(shape)
    if not output.requires_grad:
        return analytic
    output_size = shape[0]
    for row in range(output_size):
        seed = np.zeros(output_size)
        seed[row] = 1.0
        (result,) = grad(
            output,
            [tensor],
            grad_outputs=[seed.reshape(output.shape)],
            retain_graph=True,
            allow_unused=True,
        )
        if result is not None:
            analytic[row] = result.data.reshape(-1)
    return analytic


def _mismatch(analytic, numeric, atol, rtol, index, input_shape):
    """The report of the first entry outside atol + rtol * |numeric| (or a NaN on one side
    only), or None when every entry agrees."""
    bad = np.abs(analytic - numeric) > atol + rtol * np.abs(numeric)
    bad |= np.isnan(analytic) != np.isnan(numeric)
    if not bad.any():
        return None
    row, element = np.argwhere(bad)[0]
    position = np.unravel_index(element, input_shape) if input_shape else ()
    return (
        f"gradcheck failed for input {index} (shape {input_shape}) at "
        f"element {tuple(int(i) for i in position)}, output element {int(row)}: "
        f"analytic {float(analytic[row, element])!r}, "
        f"numeric {float(numeric[row, element])!r} "
        f"({int(bad.sum())} of {bad.size} Jacobian entries disagree)"
    )


gradcheck.last_report = None
