"""Elementwise functions of one tensor: exp and log, sqrt, the trigonometric and hyperbolic
functions and their inverses, and rounding. Each docstring gives the forward and backward rule.

Integer and bool tensors give float32 (`promote_float`, ops/dtypes.py), as in PyTorch; the
rounding functions keep an integer tensor as it is. The backward rules are written with
operations that numpy arrays and Tensors share (`call` below runs an op's forward on either),
so a create_graph backward is recorded and differentiable again.
"""

import math

import numpy as np

from . import dual
from .base import Op, is_tensor
from .dtypes import promote_float
from .jacobian import Diagonal, diagonal_from_vjp, diagonal_kind


class Exp(Op):
    """out = exp(a);  da = g * out"""

    __slots__ = ()
    promotion = staticmethod(promote_float)

    jacobian_kind = diagonal_kind

    def jacobian(self, index):
        """J_a = diag(out)"""
        (out,) = self.saved_tensors
        return Diagonal(out)

    def forward(self, a):
        out = np.exp(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad_output):
        (out,) = self.saved_tensors
        return (grad_output * out,)


class Log(Op):
    """out = log(a);  da = g / a"""

    __slots__ = ()
    promotion = staticmethod(promote_float)

    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp

    def forward(self, a):
        self.save_for_backward(a)
        return np.log(a)

    def backward(self, grad_output):
        (a,) = self.saved_tensors
        return (grad_output / a,)


class Sqrt(Op):
    """out = sqrt(a);  da = g / (2 * out)"""

    __slots__ = ()
    promotion = staticmethod(promote_float)

    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp

    def forward(self, a):
        out = np.sqrt(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad_output):
        (out,) = self.saved_tensors
        with np.errstate(divide="ignore", invalid="ignore"):  # inf at 0, NaN for 0 / 0
            return (grad_output / (out * 2),)


class Tanh(Op):
    """out = tanh(a);  da = g * (1 - out**2)"""

    __slots__ = ()
    promotion = staticmethod(promote_float)
    numpy_function = np.tanh  # (for `call`)

    jacobian_kind = diagonal_kind

    def jacobian(self, index):
        """J_a = diag(1 - out**2)"""
        (out,) = self.saved_tensors
        return Diagonal(1 - out * out)

    def forward(self, a):
        out = np.tanh(a)
        self.save_for_backward(out)
        return out

    def backward(self, grad_output):
        (out,) = self.saved_tensors
        return (grad_output * (1 - out * out),)


def stable_sigmoid(a):
    """1 / (1 + exp(-a)) without overflow: exp is only ever taken of -|a|."""
    z = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + z), z / (1 + z))


class Sigmoid(Op):
    """out = 1 / (1 + exp(-a));  da = g * out * (1 - out)"""

    __slots__ = ()
    promotion = staticmethod(promote_float)
    numpy_function = staticmethod(stable_sigmoid)  # (for `call`)

    jacobian_kind = diagonal_kind

    def jacobian(self, index):
        """J_a = diag(out * (1 - out))"""
        (out,) = self.saved_tensors
        return Diagonal(out * (1 - out))

    def forward(self, a):
        out = stable_sigmoid(a).astype(a.dtype, copy=False)
        self.save_for_backward(out)
        return out

    def backward(self, grad_output):
        (out,) = self.saved_tensors
        return (grad_output * (out * (1 - out)),)


def call(op_class, value):
    """`op_class`'s function of `value`: recorded (`apply`) for a Tensor, numpy's for an array.

    >>> call(Cos, np.zeros(2))
    array([1., 1.])
    """
    return op_class.apply(value) if is_tensor(value) else op_class.numpy_function(value)


class FloatFunction(Op):
    """out = f(a);  da = g * f'(a): the shared shape of the smooth functions below.

    A subclass names `numpy_function` (numpy's forward) and writes `derivative(a, out)` with
    operations that arrays and Tensors share (a create_graph backward gets Tensors).
    """

    __slots__ = ()
    promotion = staticmethod(promote_float)
    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp
    numpy_function = None

    def forward(self, a):
        out = type(self).numpy_function(a)
        self.save_for_backward(a, out)
        return out

    def backward(self, grad_output):
        a, out = self.saved_tensors
        return (grad_output * self.derivative(a, out),)

    def derivative(self, a, out):  # pragma: no cover - every subclass overrides it
        raise NotImplementedError


class Sin(FloatFunction):
    """out = sin(a);  da = g * cos(a)"""

    __slots__ = ()
    numpy_function = np.sin

    def derivative(self, a, out):
        return call(Cos, a)


class Cos(FloatFunction):
    """out = cos(a);  da = -g * sin(a)"""

    __slots__ = ()
    numpy_function = np.cos

    def derivative(self, a, out):
        return -call(Sin, a)


class Tan(FloatFunction):
    """out = tan(a);  da = g * (1 + out²)"""

    __slots__ = ()
    numpy_function = np.tan

    def derivative(self, a, out):
        return out * out + 1.0


class Asin(FloatFunction):
    """out = asin(a);  da = g / sqrt(1 - a²)"""

    __slots__ = ()
    numpy_function = np.arcsin

    def derivative(self, a, out):
        return 1.0 / (1.0 - a * a) ** 0.5  # (a sqrt: NaN at ±inf, as PyTorch; pow gives 0)


class Acos(FloatFunction):
    """out = acos(a);  da = -g / sqrt(1 - a²)"""

    __slots__ = ()
    numpy_function = np.arccos

    def derivative(self, a, out):
        return -1.0 / (1.0 - a * a) ** 0.5  # (a sqrt: NaN at ±inf, as PyTorch)


class Atan(FloatFunction):
    """out = atan(a);  da = g / (1 + a²)"""

    __slots__ = ()
    numpy_function = np.arctan

    def derivative(self, a, out):
        return 1.0 / (a * a + 1.0)


class Sinh(FloatFunction):
    """out = sinh(a);  da = g * cosh(a)"""

    __slots__ = ()
    numpy_function = np.sinh

    def derivative(self, a, out):
        return call(Cosh, a)


class Cosh(FloatFunction):
    """out = cosh(a);  da = g * sinh(a)"""

    __slots__ = ()
    numpy_function = np.cosh

    def derivative(self, a, out):
        return call(Sinh, a)


class Asinh(FloatFunction):
    """out = asinh(a);  da = g / sqrt(a² + 1)"""

    __slots__ = ()
    numpy_function = np.arcsinh

    def derivative(self, a, out):
        return (a * a + 1.0) ** -0.5


class Acosh(FloatFunction):
    """out = acosh(a);  da = g / sqrt(a² - 1)"""

    __slots__ = ()
    numpy_function = np.arccosh

    def derivative(self, a, out):
        return (a * a - 1.0) ** -0.5


class Atanh(FloatFunction):
    """out = atanh(a);  da = g / (1 - a²)"""

    __slots__ = ()
    numpy_function = np.arctanh

    def derivative(self, a, out):
        return 1.0 / (1.0 - a * a)


class Log2(FloatFunction):
    """out = log2(a);  da = g / (a ln 2)"""

    __slots__ = ()
    numpy_function = np.log2

    def derivative(self, a, out):
        return 1.0 / (a * math.log(2.0))


class Log10(FloatFunction):
    """out = log10(a);  da = g / (a ln 10)"""

    __slots__ = ()
    numpy_function = np.log10

    def derivative(self, a, out):
        return 1.0 / (a * math.log(10.0))


class Exp2(FloatFunction):
    """out = 2^a;  da = g * out ln 2"""

    __slots__ = ()
    numpy_function = np.exp2

    def derivative(self, a, out):
        return out * math.log(2.0)


class Log1p(FloatFunction):
    """out = log(1 + a) (exact for small a);  da = g / (1 + a)"""

    __slots__ = ()
    numpy_function = np.log1p

    def derivative(self, a, out):
        return 1.0 / (a + 1.0)


class Expm1(FloatFunction):
    """out = exp(a) - 1 (exact for small a);  da = g * (out + 1)"""

    __slots__ = ()
    numpy_function = np.expm1

    def derivative(self, a, out):
        return out + 1.0


class Rounding(Op):
    """out = a rounded (sign, floor, ceil, round, trunc);  da = 0 (a step function)

    An integer or bool tensor is returned as it is (a copy), as in PyTorch; numpy's floor
    would make it float64. `numpy_function` is numpy's rounding of a float array.
    """

    __slots__ = ()
    jacobian_kind = diagonal_kind
    jacobian = diagonal_from_vjp
    numpy_function = None

    def forward(self, a):
        if a.dtype.kind != "f":
            return a.copy()
        return type(self).numpy_function(a)

    def backward(self, grad_output):
        return (dual.zeros_like(grad_output),)


def sign_function(a):
    """sign(a), 0 at NaN (as PyTorch; numpy gives NaN)."""
    return np.nan_to_num(np.sign(a), nan=0.0)


class Sign(Rounding):
    """out = sign(a) (-1, 0 or 1; 0 at NaN, as PyTorch);  da = 0"""

    __slots__ = ()
    numpy_function = staticmethod(sign_function)

    def forward(self, a):
        if a.dtype == np.bool_:
            return a.copy()
        return np.sign(a) if a.dtype.kind != "f" else sign_function(a)


class Floor(Rounding):
    """out = floor(a), the largest integer <= a;  da = 0"""

    __slots__ = ()
    numpy_function = np.floor


class Ceil(Rounding):
    """out = ceil(a), the smallest integer >= a;  da = 0"""

    __slots__ = ()
    numpy_function = np.ceil


class Round(Rounding):
    """out = a rounded to the nearest integer, halves to even (as PyTorch);  da = 0"""

    __slots__ = ()
    numpy_function = np.rint


class Trunc(Rounding):
    """out = a rounded toward zero;  da = 0"""

    __slots__ = ()
    numpy_function = np.trunc
