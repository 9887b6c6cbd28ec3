"""The Tensor methods of the elementwise functions: one line each over an op
(`ops/unary.py`, `ops/binary.py`, `ops/elementwise.py`, ...), kept beside `tensor.py` so
that each file stays on a few screens. `Tensor` inherits them.

Names are PyTorch's (numpy's aliases where numpy users would type them).

>>> import tinygrad_ops as tg
>>> x = tg.Tensor([0.0, 1.0])
>>> x.sin().numpy().round(4), x.exp2().tolist(), x.clip(0.5, None).tolist()
(array([0.    , 0.8415], dtype=float32), [1.0, 2.0], [0.5, 1.0])
"""

import numpy as np

from .ops import (
    Abs,
    Acos,
    Acosh,
    Asin,
    Asinh,
    Atan,
    Atan2,
    Atanh,
    Ceil,
    Clip,
    CopySign,
    Cos,
    Cosh,
    Erf,
    Exp,
    Exp2,
    Expm1,
    Floor,
    Fmod,
    Log,
    Log1p,
    Log2,
    Log10,
    LogAddExp,
    LogSoftmax,
    Minimum,
    Relu,
    Remainder,
    Round,
    RoundedDivide,
    Sigmoid,
    Sign,
    Sin,
    Sinh,
    Softmax,
    Sqrt,
    Tan,
    Tanh,
    Trunc,
)
from .ops.base import is_tensor, values_read
from .ops.checks import ArgumentError, reduction_arguments
from .tensor_functions import constant, maximum, where


def check_bounds(op_name, low, high):
    """clip needs a bound (PyTorch raises too): clip(None, None) is most likely a mistake."""
    if low is None and high is None:
        raise ArgumentError(f"{op_name}: at least one of low (min) and high (max) must not be None")
    return high


def _clip_by_tensors(x, low, high):
    """clip with Tensor bounds, as torch.clamp: the low bound where x < low, then the high
    one where that exceeds high;  dx = g where low <= x <= high, dlow = g where x < low,
    dhigh = g where the result would exceed high (two selections, so NaN-free as PyTorch)."""
    out = x
    if low is not None:
        out = where(out < low, low, out)
    if high is not None:
        out = where(out > high, high, out)
    return out


class MathMethods:
    """Mixed into `Tensor` (see the module docstring)."""

    __slots__ = ()

    # -- elementwise functions -----------------------------------------------------------------

    def exp(self):
        return Exp.apply(self)

    def log(self):
        return Log.apply(self)

    def sqrt(self):
        return Sqrt.apply(self)

    def abs(self):
        return Abs.apply(self)

    def __abs__(self):
        return Abs.apply(self)

    def tanh(self):
        return Tanh.apply(self)

    def sigmoid(self):
        return Sigmoid.apply(self)

    def relu(self):
        return Relu.apply(self)

    def pow(self, exponent):
        """self ** exponent (the Pow rule: d = g exponent self^(exponent - 1))."""
        return self**exponent

    def square(self):
        """self ** 2;  d = 2 g self."""
        return self**2

    def reciprocal(self):
        """1 / self;  d = -g / self^2."""
        return 1 / self

    def rsqrt(self):
        """1 / sqrt(self);  d = -g / (2 self^(3/2))."""
        return 1 / self.sqrt()

    # -- arithmetic by name (PyTorch's methods for the operators) ------------------------------

    def add(self, other, *, alpha=1):
        """self + alpha * other."""
        return self + (other if alpha == 1 else alpha * other)

    def sub(self, other, *, alpha=1):
        """self - alpha * other."""
        return self - (other if alpha == 1 else alpha * other)

    def mul(self, other):
        """self * other."""
        return self * other

    def neg(self):
        """-self;  d = -g."""
        return -self

    # -- softmax along a dim (ops/activations.py) ----------------------------------------------

    def softmax(self, dim):
        """exp(x) / sum(exp(x)) along `dim` (required, as in PyTorch): F.softmax's op."""
        axis, _ = reduction_arguments("softmax", None, False, dim)
        return Softmax.apply(self, axis=axis)

    def log_softmax(self, dim):
        """x - logsumexp(x) along `dim` (required, as in PyTorch): F.log_softmax's op."""
        axis, _ = reduction_arguments("log_softmax", None, False, dim)
        return LogSoftmax.apply(self, axis=axis)

    def clip(self, low=None, high=None):
        """Elements limited to [low, high] (either bound may be None, not both).

        >>> import tinygrad_ops as tg
        >>> tg.Tensor([-2.0, 0.5, 3.0]).clip(-1, 1).numpy()
        array([-1. ,  0.5,  1. ], dtype=float32)
        """
        check_bounds("clip", low, high)
        if is_tensor(low) or is_tensor(high):
            return _clip_by_tensors(self, low, high)
        return Clip.apply(self, low=low, high=high)

    def clamp(self, min=None, max=None):
        """`clip` with PyTorch's argument names: `x.clamp(min=0)`, `x.clamp(-1, 1)`; a
        bound may be a Tensor (broadcast against x, and given its share of the gradient).

        >>> import tinygrad_ops as tg
        >>> tg.Tensor([-2.0, 0.5]).clamp(min=0).numpy()
        array([0. , 0.5], dtype=float32)
        >>> tg.Tensor([-2.0, 0.5]).clamp(min=tg.Tensor([-3.0, 1.0])).numpy()
        array([-2.,  1.], dtype=float32)
        """
        check_bounds("clamp", min, max)
        if is_tensor(min) or is_tensor(max):
            return _clip_by_tensors(self, min, max)
        return Clip.apply(self, low=min, high=max)

    def maximum(self, other):
        return maximum(self, other)

    # -- trigonometric and hyperbolic functions ----------------------------------------------

    def sin(self):
        return Sin.apply(self)

    def cos(self):
        return Cos.apply(self)

    def tan(self):
        return Tan.apply(self)

    def asin(self):
        return Asin.apply(self)

    def acos(self):
        return Acos.apply(self)

    def atan(self):
        return Atan.apply(self)

    def sinh(self):
        return Sinh.apply(self)

    def cosh(self):
        return Cosh.apply(self)

    def asinh(self):
        return Asinh.apply(self)

    def acosh(self):
        return Acosh.apply(self)

    def atanh(self):
        return Atanh.apply(self)

    arcsin, arccos, arctan = asin, acos, atan  # numpy's (and PyTorch's alias) names
    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    # -- exponentials and logarithms -----------------------------------------------------------

    def log2(self):
        return Log2.apply(self)

    def log10(self):
        return Log10.apply(self)

    def exp2(self):
        return Exp2.apply(self)

    def log1p(self):
        return Log1p.apply(self)

    def expm1(self):
        return Expm1.apply(self)

    def erf(self):
        return Erf.apply(self)

    def logaddexp(self, other):
        return LogAddExp.apply(self, other)

    def atan2(self, other):
        """The angle of the point (other, self) in (-pi, pi], as torch.atan2."""
        return Atan2.apply(self, other)

    arctan2 = atan2

    # -- rounding and signs (zero gradient) ----------------------------------------------------

    def sign(self):
        return Sign.apply(self)

    def floor(self):
        return Floor.apply(self)

    def ceil(self):
        return Ceil.apply(self)

    def round(self):
        return Round.apply(self)

    def trunc(self):
        return Trunc.apply(self)

    def copysign(self, other):
        return CopySign.apply(self, other)

    # -- division with rounding, remainders ----------------------------------------------------

    def div(self, other, *, rounding_mode=None):
        """self / other; rounding_mode "floor" (as //) or "trunc" rounds the quotient."""
        if rounding_mode is None:
            return self / other
        if rounding_mode not in ("floor", "trunc"):
            raise ArgumentError(
                f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}"
            )
        return RoundedDivide.apply(self, other, rounding_mode=rounding_mode)

    def __floordiv__(self, other):
        return RoundedDivide.apply(self, other, rounding_mode="floor")

    def __rfloordiv__(self, other):
        return RoundedDivide.apply(other, self, rounding_mode="floor")

    def fmod(self, other):
        return Fmod.apply(self, other)

    def remainder(self, other):
        return Remainder.apply(self, other)

    def __mod__(self, other):
        return Remainder.apply(self, other)

    def __rmod__(self, other):
        return Remainder.apply(other, self)

    def minimum(self, other):
        return Minimum.apply(self, other)

    def lerp(self, end, weight):
        """self + weight (end - self), as torch.lerp (weight a number or a tensor); its
        gradients are 1 - weight, weight and end - self."""
        return self + weight * (end - self)

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default 0 and the
        dtype's largest and smallest numbers), as torch.nan_to_num; the gradient is g where
        the value was finite, 0 where it was replaced (the replacement is a constant)."""
        values_read(self, "nan_to_num")
        replaced = np.nan_to_num(self.data, nan=nan, posinf=posinf, neginf=neginf)
        return where(constant(np.isfinite(self.data)), self, constant(replaced))

    # -- tests (bool tensors, outside the tape) ------------------------------------------------

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """|x - other| <= atol + rtol |other| elementwise, as torch.isclose: a boolean tensor
        outside the tape."""
        values_read(self, "isclose")
        other_values = other.data if isinstance(other, type(self)) else np.asarray(other)
        return constant(np.isclose(self.data, other_values, rtol, atol, equal_nan))

    def isnan(self):
        """out = a is NaN: a boolean tensor outside the tape (no gradient)."""
        values_read(self, "isnan")
        return constant(np.isnan(self.data))

    def logical_not(self):
        """out = not a (nonzero counts as true): a boolean tensor outside the tape."""
        values_read(self, "logical_not")
        return constant(np.logical_not(self.data))

    def logical_and(self, other):
        """out = a and b elementwise (nonzero counts as true), broadcast: a boolean tensor
        outside the tape."""
        return self._compare(other, np.logical_and)

    def logical_or(self, other):
        """out = a or b elementwise: a boolean tensor outside the tape."""
        return self._compare(other, np.logical_or)

    def logical_xor(self, other):
        """out = a xor b elementwise (exactly one true): a boolean tensor outside the tape."""
        return self._compare(other, np.logical_xor)

    def isinf(self):
        """out = a is +inf or -inf: a boolean tensor outside the tape (no gradient)."""
        values_read(self, "isinf")
        return constant(np.isinf(self.data))

    def isfinite(self):
        """out = a is neither NaN nor infinite: a boolean tensor outside the tape."""
        values_read(self, "isfinite")
        return constant(np.isfinite(self.data))
