"""Elementwise functions of two tensors beyond arithmetic: logaddexp, atan2, copysign, fmod,
remainder (%) and division with rounding (//). Each docstring gives the forward and backward
rule; operands broadcast, and the engine sums gradients back to each input's shape.

The rules multiply the upstream gradient by factors that are saved in forward when they are
piecewise constant in the inputs (the quotients of fmod and remainder, copysign's ratio):
their own derivative is 0, so a create_graph backward is still exact.
"""

import numpy as np

from . import dual
from .base import Op
from .dtypes import promote, promote_float
from .elementwise import broadcast_error, where
from .jacobian import diagonal_from_vjp, diagonal_kind


def check_integer_divisor(op_name, a, b):
    """Integer division by zero is an error, as in PyTorch (numpy gives 0 and a warning)."""
    integers = np.asarray(a).dtype.kind in "iub" and np.asarray(b).dtype.kind in "iub"
    if integers and not np.all(b):
        raise ZeroDivisionError(f"{op_name}: integer division by zero")


def _apply(op_name, function, a, b):
    """`function(a, b)`, with a broadcast error that names the op."""
    try:
        return function(a, b)
    except ValueError:
        raise broadcast_error(op_name, a, b) from None


class LogAddExp(Op):
    """out = log(exp(a) + exp(b));  da = g / (1 + exp(b - a)), db = g / (1 + exp(a - b))"""

    __slots__ = ()
    promotion = staticmethod(promote_float)
    jacobian_kind = diagonal_kind
    jacobian = diagonal_from_vjp

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return _apply("logaddexp", np.logaddexp, a, b)

    def backward(self, grad_output):
        a, b = self.saved_tensors
        with np.errstate(over="ignore"):  # exp(b - a) = inf: a gradient of 0, as PyTorch
            return grad_output / (dual.exp(b - a) + 1.0), grad_output / (dual.exp(a - b) + 1.0)


class Atan2(Op):
    """out = atan2(a, b), the angle of the point (b, a);  da = g b / (a² + b²),
    db = -g a / (a² + b²)  (0 at the origin, as PyTorch)"""

    __slots__ = ()
    promotion = staticmethod(promote_float)
    jacobian_kind = diagonal_kind
    jacobian = diagonal_from_vjp

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return _apply("atan2", np.arctan2, a, b)

    def backward(self, grad_output):
        a, b = self.saved_tensors
        squared = a * a + b * b
        with np.errstate(divide="ignore"):
            reciprocal = where(dual.raw(squared) == 0, 0.0, 1.0 / squared)
        return grad_output * b * reciprocal, -grad_output * a * reciprocal


class CopySign(Op):
    """out = |a| with the sign of b;  da = g * out / a (0 where a == 0), db = 0"""

    __slots__ = ()
    promotion = staticmethod(promote_float)
    jacobian_kind = diagonal_kind
    jacobian = diagonal_from_vjp

    def forward(self, a, b):
        out = _apply("copysign", np.copysign, a, b)
        if self.needs_input_grad[0]:
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(np.equal(a, 0), 0.0, out / a).astype(out.dtype, copy=False)
            self.save_for_backward(ratio)
        return out

    def backward(self, grad_output):
        ratio = self.saved_tensors[0] if self.needs_input_grad[0] else None
        return (grad_output * ratio if ratio is not None else None), dual.zeros_like(grad_output)


class _Modulo(Op):
    """Shared rule of fmod and remainder: out = a - q b with q a rounded quotient;
    da = g, db = -g q."""

    __slots__ = ()
    promotion = staticmethod(promote)
    jacobian_kind = diagonal_kind
    jacobian = diagonal_from_vjp
    numpy_function = quotient = op_name = None

    def forward(self, a, b):
        cls = type(self)
        check_integer_divisor(cls.op_name, a, b)
        out = _apply(cls.op_name, cls.numpy_function, a, b)
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                self.save_for_backward(cls.quotient(a, b).astype(out.dtype, copy=False))
        return out

    def backward(self, grad_output):
        quotient = self.saved_tensors[0] if self.needs_input_grad[1] else None
        return grad_output, (-grad_output * quotient if quotient is not None else None)


class Fmod(_Modulo):
    """out = fmod(a, b) = a - trunc(a / b) b (the sign of a, as C);  da = g, db = -g trunc(a/b)"""

    __slots__ = ()
    numpy_function, op_name = np.fmod, "fmod"

    @staticmethod
    def quotient(a, b):
        return np.trunc(np.true_divide(a, b))


class Remainder(_Modulo):
    """out = a % b = a - floor(a / b) b (the sign of b, as Python);  da = g, db = -g floor(a/b)"""

    __slots__ = ()
    numpy_function, op_name = np.remainder, "remainder"

    @staticmethod
    def quotient(a, b):
        return np.floor_divide(a, b)


def truncated_divide(a, b):
    """a / b rounded toward zero, in a and b's dtype (integers stay integers).

    >>> truncated_divide(np.array([7, -7]), np.array([2, 2])).tolist()
    [3, -3]
    """
    if np.asarray(a).dtype.kind == "f" or np.asarray(b).dtype.kind == "f":
        return np.trunc(np.true_divide(a, b))
    quotient = np.floor_divide(a, b)
    # floor is one below trunc where the division is inexact and the signs differ
    inexact = np.not_equal(np.remainder(a, b), 0) & np.not_equal(np.less(a, 0), np.less(b, 0))
    return quotient + inexact.astype(quotient.dtype)


class RoundedDivide(Op):
    """out = a / b rounded ("floor": toward -inf, as //; "trunc": toward 0); da = db = 0

    Integer operands give an integer result, as in PyTorch. The gradient is 0 almost
    everywhere (a step function of a and b), which PyTorch returns too.
    """

    __slots__ = ()
    promotion = staticmethod(promote)
    jacobian_kind = diagonal_kind
    jacobian = diagonal_from_vjp

    def forward(self, a, b, rounding_mode):
        check_integer_divisor("div", a, b)
        function = np.floor_divide if rounding_mode == "floor" else truncated_divide
        with np.errstate(divide="ignore", invalid="ignore"):  # x / 0: inf or NaN, as PyTorch
            return _apply("div", function, a, b)

    def backward(self, grad_output):
        return dual.zeros_like(grad_output), dual.zeros_like(grad_output)


class Xlogy(Op):
    """out = a log b, 0 where a == 0 (unless b is NaN);  da = g log b (0 where a == 0 and
    b <= 0, or g == 0), db = g a / b

    PyTorch's xlogy and its rules. kl_div is xlogy(t, t) - t x, as PyTorch's: its target's
    gradient at t = 0 is 0/0 = NaN there, as in PyTorch."""

    __slots__ = ()
    promotion = staticmethod(promote_float)
    jacobian_kind = diagonal_kind
    jacobian = diagonal_from_vjp

    def forward(self, a, b):
        with np.errstate(divide="ignore", invalid="ignore"):  # log(0) = -inf, log(-1) = NaN
            product = _apply("xlogy", np.multiply, a, np.log(b))
        self.save_for_backward(a, b)
        return np.where(np.equal(a, 0) & ~np.isnan(b), 0.0, product).astype(product.dtype)

    def backward(self, grad_output):
        a, b = self.saved_tensors
        needs_a, needs_b = self.needs_input_grad
        grad_a = grad_b = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if needs_a:
                raw_a, raw_b = dual.raw(a), dual.raw(b)
                zero = (np.equal(raw_a, 0) & np.less_equal(raw_b, 0)) | np.equal(
                    dual.raw(grad_output), 0
                )
                grad_a = where(zero, 0.0, grad_output * dual.log(b))
            if needs_b:
                grad_b = grad_output * a / b
        return grad_a, grad_b
