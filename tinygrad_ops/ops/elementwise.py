"""Elementwise primitives. Each docstring gives the forward and the backward rule; every
one can sit on a scanned chain, with a diagonal Jacobian (ops/jacobian.py).

Binary ops broadcast as numpy does; the engine sums gradients back to each input's shape,
so the rules here are written for equal shapes.
"""

import numpy as np

from . import dual
from .base import Op, is_tensor
from .checks import ArgumentError, ShapeError
from .dtypes import promote, promote_branches, promote_float, result_dtype
from .jacobian import (
    IDENTITY,
    MINUS_IDENTITY,
    Diagonal,
    diagonal_from_vjp,
    diagonal_kind,
)


def broadcast_error(op_name, a, b):
    shape_a = np.shape(a)
    shape_b = np.shape(b)
    return ShapeError(
        f"{op_name}: shapes {tuple(shape_a)} and {tuple(shape_b)} cannot be broadcast together"
    )


class Add(Op):
    """out = a + b;  da = g, db = g"""

    __slots__ = ()
    promotion = staticmethod(promote)

    jacobian_kind = diagonal_kind

    def jacobian(self, index):
        """J_a = J_b = I"""
        return IDENTITY

    def forward(self, a, b):
        try:
            return a + b
        except ValueError:
            raise broadcast_error("add", a, b) from None

    def backward(self, grad_output):
        return grad_output, grad_output


class Sub(Op):
    """out = a - b;  da = g, db = -g"""

    __slots__ = ()
    promotion = staticmethod(promote)

    jacobian_kind = diagonal_kind

    def jacobian(self, index):
        """J_a = I, J_b = -I"""
        return IDENTITY if index == 0 else MINUS_IDENTITY

    def forward(self, a, b):
        try:
            return a - b
        except ValueError:
            raise broadcast_error("sub", a, b) from None
        except TypeError:  # numpy has no subtraction of two bools, nor has PyTorch
            raise TypeError(
                "sub: subtracting bool tensors is not supported (as in PyTorch); use ^ "
                "(logical xor), or ~ to invert a mask"
            ) from None

    def backward(self, grad_output):
        return grad_output, -grad_output


class Mul(Op):
    """out = a * b;  da = g * b, db = g * a"""

    __slots__ = ()
    promotion = staticmethod(promote)

    jacobian_kind = diagonal_kind

    def jacobian(self, index):
        """J_a = diag(b), J_b = diag(a)"""
        a, b = self.saved_tensors
        return Diagonal(b if index == 0 else a)

    def forward(self, a, b):
        needs_a, needs_b = self.needs_input_grad
        # Save only what the rule reads: `x.mul_(2.0)` must not keep (and version-check) x.
        self.save_for_backward(a if needs_b else None, b if needs_a else None)
        try:
            return a * b
        except ValueError:
            raise broadcast_error("mul", a, b) from None

    def backward(self, grad_output):
        a, b = self.saved_tensors
        needs_a, needs_b = self.needs_input_grad
        return (grad_output * b if needs_a else None, grad_output * a if needs_b else None)


class Div(Op):
    """out = a / b;  da = g / b, db = -g * a / b**2"""

    __slots__ = ()
    promotion = staticmethod(promote_float)

    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp

    def forward(self, a, b):
        self.save_for_backward(a if self.needs_input_grad[1] else None, b)
        try:
            return a / b
        except ValueError:
            raise broadcast_error("div", a, b) from None

    def backward(self, grad_output):
        a, b = self.saved_tensors
        needs_a, needs_b = self.needs_input_grad
        grad_a = grad_output / b if needs_a else None
        grad_b = -grad_output * a / (b * b) if needs_b else None
        return grad_a, grad_b


class Neg(Op):
    """out = -a;  da = -g"""

    __slots__ = ()

    jacobian_kind = diagonal_kind

    def jacobian(self, index):
        """J_a = -I"""
        return MINUS_IDENTITY

    def forward(self, a):
        if a.dtype == np.bool_:
            raise TypeError(
                "neg: negating a bool tensor is not supported (as in PyTorch); use ~ to "
                "invert a mask"
            )
        return -a

    def backward(self, grad_output):
        return (-grad_output,)


class PowScalar(Op):
    """out = a ** p (p a constant);  da = g * p * a ** (p - 1), and 0 where p == 0"""

    __slots__ = ("exponent",)

    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp

    def forward(self, a, exponent):
        if a.dtype.kind in "iub" and isinstance(exponent, int) and exponent < 0:
            raise ArgumentError(
                "pow: Integers to negative integer powers are not allowed (as in PyTorch): "
                f"exponent {exponent} of a {a.dtype} tensor; convert the tensor to float first"
            )
        self.exponent = exponent
        if a.dtype.kind != "f":  # an integer tensor to a float power is float32 (ops/dtypes.py)
            dtype = result_dtype([a, exponent])
            return (a.astype(dtype, copy=False) ** exponent).astype(dtype, copy=False)
        self.save_for_backward(a)
        if exponent == -0.5:  # 1 / sqrt(a), as PyTorch's rsqrt: -inf at -0 (pow gives +inf)
            return np.reciprocal(np.sqrt(a))
        return a**exponent  # (numpy's ** 0.5 is sqrt, -0 at -0, as PyTorch's)

    def backward(self, grad_output):
        (a,) = self.saved_tensors
        p = self.exponent
        if p == 0:
            return grad_output * 0, None
        if p == 1:
            return grad_output, None
        if p == 2:
            return grad_output * (a * 2), None
        if p == 0.5:  # 0.5 / sqrt(a), as PyTorch: -inf at -0, NaN at -inf (pow: +inf, 0)
            return grad_output * (0.5 / a**0.5), None
        return grad_output * (p * a ** (p - 1)), None


def is_integer(value):
    """True for integer and bool arrays and Python ints (the operands of integer pow)."""
    return np.asarray(value).dtype.kind in "iub"


def integer_power(a, b):
    """a ** b for integers, with PyTorch's answer for negative exponents (numpy refuses them):
    1 for a base of 1, ±1 for -1 (by the exponent's parity), 0 for any other base.

    >>> integer_power(np.array([2, 1, -1, -1, 0]), np.array([-1, -3, -3, -2, 2])).tolist()
    [0, 1, -1, 1, 0]
    """
    negative = np.less(b, 0)
    out = np.power(a, np.where(negative, 0, b))
    if np.any(negative):
        odd = np.not_equal(np.remainder(b, 2), 0)
        fraction = np.where(np.equal(a, 1), 1, np.where(np.equal(a, -1), np.where(odd, -1, 1), 0))
        out = np.where(negative, fraction, out).astype(out.dtype, copy=False)
    return out.astype(np.result_type(a, b), copy=False)  # bools: numpy's power gives int8


class Pow(Op):
    """out = a ** b;  da = g * b * a ** (b - 1), db = g * out * log(a)

    At b == 0, da is 0; at a == 0 with b >= 0, db is 0 (the limit of a**b * log(a)):
    the conventions PyTorch uses.
    """

    __slots__ = ()
    promotion = staticmethod(promote)

    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp

    def forward(self, a, b):
        try:
            out = integer_power(a, b) if is_integer(a) and is_integer(b) else np.power(a, b)
        except ValueError:
            raise broadcast_error("pow", a, b) from None
        # A Python-number operand (2.0 ** x) as an array of out's dtype: np.where/np.log
        # would make it a float64 array, which upcasts a float32 rule.
        if type(a) is not np.ndarray:
            a = np.asarray(a, dtype=out.dtype)
        if type(b) is not np.ndarray:
            b = np.asarray(b, dtype=out.dtype)
        zero_exponent = np.equal(b, 0)
        zero_base = (np.equal(a, 0)) & (np.greater_equal(b, 0))
        self.save_for_backward(a, b, out, zero_exponent, zero_base)
        return out

    def backward(self, grad_output):
        a, b, out, zero_exponent, zero_base = self.saved_tensors
        needs_a, needs_b = self.needs_input_grad
        grad_a = grad_b = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if needs_a:
                grad_a = where(zero_exponent, 0.0, grad_output * b * a ** (b - 1))
            if needs_b:
                safe_a = where(zero_base, 1.0, a)
                grad_b = where(zero_base, 0.0, grad_output * out * dual.log(safe_a))
        return grad_a, grad_b


class Abs(Op):
    """out = |a|;  da = g * sign(a)  (0 at a == 0 and at NaN, as PyTorch)"""

    __slots__ = ()

    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp

    def forward(self, a):
        if a.dtype == np.bool_:
            raise TypeError("abs: bool tensors are not supported (as in PyTorch)")
        sign = np.sign(a)
        if sign.dtype.kind == "f":
            sign = np.nan_to_num(sign, nan=0.0)  # sign(NaN) is NaN; PyTorch's slope is 0
        self.save_for_backward(sign)
        return np.abs(a)

    def backward(self, grad_output):
        (sign,) = self.saved_tensors
        return (grad_output * sign,)


class Relu(Op):
    """out = max(a, 0);  da = g * (out != 0)  (0 at a == 0, g at NaN: as PyTorch)

    The product is a selection: a dead unit's gradient is 0 even where g is NaN or inf, as
    PyTorch's (`keep_where`, not numpy's g * mask, which gives NaN there)."""

    __slots__ = ()

    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp

    def forward(self, a):
        out = np.maximum(a, 0)
        self.save_for_backward(out)  # (as PyTorch: changing it in place then raises)
        return out

    def backward(self, grad_output):
        (out,) = self.saved_tensors
        # PyTorch masks out <= 0, so a NaN passes its gradient (out > 0 would block it). The
        # output is positive, zero or NaN: out != 0 is that mask's complement, in one pass.
        positive = out != 0
        if type(grad_output) is not np.ndarray or grad_output.itemsize not in _FLOAT_SIZES:
            return (where(positive, grad_output, 0.0),)  # a Tensor: create_graph
        return (keep_where(grad_output, positive),)


def keep_where(values, mask, overwrite=False):
    """`values` where `mask` holds, +0.0 elsewhere, whatever the values there (NaN, inf):
    the floats' bits, read as integers, times the mask (1 or 0), which is a kept value's
    bits as they are or 0, the bits of +0.0. One pass, the cost of values * mask, which
    gives NaN where a masked-out value is NaN or inf (and -0.0 where it is negative);
    np.where with a mask of random bits is several times slower (a branch per element),
    but one call instead of three below about a thousand elements: there it is the
    faster, with the same bits (it copies the kept values as they are).

    `overwrite=True` says that nothing else reads `values`' array: the product may then
    be written over it (the same bits, a new array fewer; a compiled step's replay passes
    it for a gradient array that it owns).

    >>> keep_where(np.array([1.5, np.nan, np.inf]), np.array([True, False, False]))
    array([1.5, 0. , 0. ])
    """
    if values.size <= _SMALL:
        return np.where(mask, values, 0.0)
    view = values.view(_SAME_SIZE_INT[values.itemsize])
    # (a new array is owned, not a view of an int array)
    kept = values if overwrite else np.empty(values.shape, values.dtype)
    np.multiply(view, mask, out=view if overwrite else kept.view(view.dtype))
    return kept


_SAME_SIZE_INT = {2: np.int16, 4: np.int32, 8: np.int64}  # float16, float32, float64
_FLOAT_SIZES = frozenset(_SAME_SIZE_INT)  # (immutable: tg.compile decides the test once)
_SMALL = 512  # (elements: np.where is 0.7 us faster at 8x8 float32, the product from 32x32)


class Maximum(Op):
    """out = max(a, b);  da = g where a > b, db = g where b > a, g / 2 each on ties, and g to
    both where either is NaN (PyTorch's rule: da = g, halved where a == b, 0 where a < b)"""

    __slots__ = ()
    promotion = staticmethod(promote)

    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp

    numpy_function, loses, op_name = np.maximum, np.less, "maximum"  # (Minimum flips them)

    def forward(self, a, b):
        cls = type(self)
        try:
            out = cls.numpy_function(a, b)
        except ValueError:
            raise broadcast_error(cls.op_name, a, b) from None
        needs_a, needs_b = self.needs_input_grad
        untied = 1.0 - 0.5 * np.equal(a, b)
        share_a = np.where(cls.loses(a, b), 0.0, untied).astype(out.dtype) if needs_a else None
        share_b = np.where(cls.loses(b, a), 0.0, untied).astype(out.dtype) if needs_b else None
        self.save_for_backward(share_a, share_b)
        return out

    def backward(self, grad_output):
        share_a, share_b = self.saved_tensors
        needs_a, needs_b = self.needs_input_grad
        return (
            masked(grad_output, share_a) if needs_a else None,
            masked(grad_output, share_b) if needs_b else None,
        )


class Minimum(Maximum):
    """out = min(a, b);  da = g where a < b, db = g where b < a, g / 2 each on ties, and g to
    both where either is NaN (Maximum's rule with the comparison flipped, as PyTorch)"""

    __slots__ = ()
    numpy_function, loses, op_name = np.minimum, np.greater, "minimum"


class Where(Op):
    """out = a where condition else b;  da = g where condition, db = g elsewhere"""

    __slots__ = ()
    promotion = staticmethod(promote_branches)

    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp

    def forward(self, condition, a, b):
        condition = np.asarray(condition, dtype=bool)
        try:
            out = np.where(condition, a, b)
        except ValueError:
            raise ShapeError(
                f"where: condition, x and y of shapes {condition.shape}, {np.shape(a)} and "
                f"{np.shape(b)} cannot be broadcast together"
            ) from None
        self.save_for_backward(condition)
        return out

    def backward(self, grad_output):
        (condition,) = self.saved_tensors
        _, needs_a, needs_b = self.needs_input_grad
        grad_a = where(condition, grad_output, 0.0) if needs_a else None
        grad_b = where(condition, 0.0, grad_output) if needs_b else None
        return None, grad_a, grad_b


def where(condition, x, y):
    """`np.where` for arrays, for a backward rule; the recorded `Where` when `x` or `y` is a
    Tensor (create_graph, ops/dual.py)."""
    if is_tensor(x) or is_tensor(y):
        return Where.apply(condition, x, y)
    return np.where(condition, x, y)


def masked(grad, factor):
    """grad * factor, with exact zeros where `factor` is 0 even if `grad` is NaN or inf
    there: the rules of max, min and clip select the gradient, as PyTorch's (a product
    alone would give NaN). `factor` is an array (a mask or the shares of a tie)."""
    return where(factor == 0, 0.0, grad * factor)


class Clip(Op):
    """out = min(max(a, low), high);  da = g where low <= a <= high (as torch.clamp)"""

    __slots__ = ()

    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp

    def forward(self, a, low=None, high=None):
        # numpy-scalar bounds as Python numbers: np.float64 bounds would upcast a float32 a
        low = low.item() if isinstance(low, np.generic) else low
        high = high.item() if isinstance(high, np.generic) else high
        if a.dtype.kind != "f":  # an integer tensor clipped to float bounds is float32
            a = a.astype(result_dtype([a, low, high]), copy=False)
        inside = np.ones(a.shape, dtype=bool)
        if low is not None:
            inside &= a >= low
        if high is not None:
            inside &= a <= high
        self.save_for_backward(inside)
        if low is None and high is None:
            return a.copy()
        return np.clip(a, low, high)

    def backward(self, grad_output):
        (inside,) = self.saved_tensors
        return (masked(grad_output, inside),)


class Cast(Op):
    """out = a converted to another dtype;  da = g converted back to a's dtype"""

    __slots__ = ("input_dtype",)

    def forward(self, a, dtype):
        self.input_dtype = a.dtype
        return a.astype(dtype)

    def backward(self, grad_output):
        return (grad_output.astype(self.input_dtype),)


class Fill(Op):
    """out = value everywhere, in a's shape and dtype (`fill_`, `zero_`: a NaN or an inf in
    a is overwritten, where a * 0 would keep it);  da = 0 (the old values are gone)"""

    __slots__ = ()

    def forward(self, a, value):
        return np.full_like(a, value)

    def backward(self, grad_output):
        # Zeros, as PyTorch's (not g * 0, which a NaN in g would keep): a constant, even in a
        # create_graph pass.
        return np.zeros(grad_output.shape, dtype=grad_output.dtype), None
