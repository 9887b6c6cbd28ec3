"""Reductions over any axis or tuple of axes, with or without keepdims."""

import numpy as np

from . import dual
from .base import Op
from .checks import ArgumentError, AxisError, normalize_axis, pure
from .elementwise import where

# An empty tuple of axes, PyTorch's way per op: sum, mean, var and std reduce every dim
# (`x.sum(())` is x.sum(), where numpy would reduce none), any and all reduce none, and the
# ops that take no tuple in PyTorch (max, min, prod, logsumexp) refuse it as ambiguous.
_EMPTY_REDUCES_ALL = frozenset(("sum", "mean", "var", "std"))
_EMPTY_REDUCES_NONE = frozenset(("all", "any"))


@pure
def normalize_axes(axis, ndim, op_name):
    """`axis` (None, int or tuple, negatives allowed) as a sorted tuple of non-negative ints.

    >>> normalize_axes((-1, 0), 3, "sum")
    (0, 2)
    >>> normalize_axes((), 2, "sum")  # PyTorch's dim=(): every dim
    (0, 1)
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(axis)
        if not axes and op_name not in _EMPTY_REDUCES_NONE:
            if op_name in _EMPTY_REDUCES_ALL:
                return tuple(range(ndim))
            raise TypeError(
                f"{op_name}: axis=() is ambiguous (PyTorch reduces every dim, numpy none); "
                "pass axis=None to reduce every dim"
            )
    elif isinstance(axis, (int, np.integer)) and not isinstance(axis, (bool, np.bool_)):
        axes = (axis,)
    else:  # a float or a bool (True would silently reduce axis 1)
        raise TypeError(f"{op_name}: axis must be an int or a tuple of ints, got {axis!r}")
    normalized = [normalize_axis(value, ndim, op_name) for value in axes]
    if len(set(normalized)) != len(normalized):
        raise ArgumentError(f"{op_name}: axis {axis!r} repeats an axis")
    return tuple(sorted(normalized)) if ndim else ()


@pure
def keepdims_shape(shape, axes):
    """`shape` with the reduced `axes` set to 1 (the shape numpy's keepdims=True gives)."""
    return tuple(1 if index in axes else size for index, size in enumerate(shape))


class Sum(Op):
    """out = sum of a over axes;  da = g broadcast back over the summed axes

    Bool and integer tensors sum to int64, as in PyTorch (numpy sums unsigned ones to uint64).
    """

    __slots__ = ("input_shape", "kept_shape")

    def forward(self, a, axis=None, keepdims=False):
        self.input_shape = a.shape
        dtype = None if a.dtype.kind == "f" else np.int64
        if axis is None:  # the common case (a loss), without the axis bookkeeping
            self.kept_shape = (1,) * a.ndim
            return np.add.reduce(a, axis=None, keepdims=keepdims, dtype=dtype)
        axes = normalize_axes(axis, a.ndim, "sum")
        self.kept_shape = keepdims_shape(a.shape, axes)
        return np.add.reduce(a, axis=axes, keepdims=keepdims, dtype=dtype)

    def backward(self, grad_output):
        grad = grad_output.reshape(self.kept_shape)
        return (dual.broadcast_to(grad, self.input_shape),)


class _Extremum(Op):
    """Shared rule of max and min: the gradient goes to the elements equal to the result,
    split evenly among ties (as torch.amax / torch.amin); where the result is NaN, to the
    NaNs (as `torch.max(x)`), or with `nan_rows=True` NaN to every element of that group
    (as `torch.amax`, whose count of elements equal to a NaN result is 0)."""

    __slots__ = ("kept_shape",)
    reduce = None
    op_name = ""

    def forward(self, a, axis=None, keepdims=False, nan_rows=False):
        axes = normalize_axes(axis, a.ndim, self.op_name)
        if a.size == 0 and any(a.shape[axis] == 0 for axis in axes):
            raise AxisError(
                f"{self.op_name}: cannot reduce over an empty axis (input shape {a.shape})"
            )
        self.kept_shape = keepdims_shape(a.shape, axes)
        out = type(self).reduce(a, axis=axes, keepdims=True)
        hits = a == out
        if not nan_rows and out.dtype.kind == "f" and np.isnan(out).any():
            hits |= np.isnan(a)  # a NaN result: its NaNs share g (PyTorch's max/min rule)
        count = hits.sum(axis=axes, keepdims=True).astype(a.dtype)
        with np.errstate(invalid="ignore"):  # 0 / 0 in a NaN group under nan_rows: NaN
            self.save_for_backward(hits / count)
        return out if keepdims else np.squeeze(out, axis=axes)

    def backward(self, grad_output):
        (share,) = self.saved_tensors
        return (grad_output.reshape(self.kept_shape) * share,)


class Max(_Extremum):
    """out = max of a over axes;  da = g at the maxima (split evenly among ties)"""

    __slots__ = ()
    reduce = np.max
    op_name = "max"


class Min(_Extremum):
    """out = min of a over axes;  da = g at the minima (split evenly among ties)"""

    __slots__ = ()
    reduce = np.min
    op_name = "min"


class VectorNorm(Op):
    """out = (sum over axes of |a|^p)^(1/p) (p=2: the Euclidean norm);
    da = g * sign(a) |a|^(p-1) / out^(p-1), and 0 where out is 0 (PyTorch's subgradient)

    p = 1 gives da = g * sign(a); p = inf is `abs().amax()` (see `Tensor.norm`). p = 0 is
    the count of nonzero entries, with gradient 0; a negative p gives 0 when an entry is 0
    (|0|^p is inf); a zero entry gets gradient 0 for every p, as PyTorch's.
    """

    __slots__ = ("kept_shape", "axes", "p")

    def forward(self, a, p=2.0, axis=None, keepdims=False):
        self.axes = axes = normalize_axes(axis, a.ndim, "norm")
        self.kept_shape = keepdims_shape(a.shape, axes)
        self.p = p
        self.save_for_backward(a)
        out = self.norm(a)
        return out if keepdims else np.squeeze(out, axis=axes)

    def norm(self, a):
        """The norm with the reduced axes kept, of an array or a Tensor (a create_graph
        backward recomputes it from the input Tensor, so that it is recorded)."""
        if self.p == 2:
            return (a * a).sum(axis=self.axes, keepdims=True) ** 0.5
        if self.p == 1:
            return abs(a).sum(axis=self.axes, keepdims=True)
        if self.p == 0:  # a count: a constant even under create_graph
            count = np.count_nonzero(dual.raw(a), axis=self.axes, keepdims=True)
            return count.astype(dual.raw(a).dtype)
        with np.errstate(divide="ignore"):  # |0|^p = inf for p < 0: the norm is 0 then
            return (abs(a) ** self.p).sum(axis=self.axes, keepdims=True) ** (1 / self.p)

    def backward(self, grad_output):
        (a,) = self.saved_tensors
        grad = grad_output.reshape(self.kept_shape)
        if self.p == 1:
            return (grad * dual.sign(a),)
        if self.p == 0:
            return (dual.zeros_like(a),)
        norm = self.norm(a)
        with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 where out is 0: masked
            if self.p == 2:
                scale = a / norm
            else:
                scale = dual.sign(a) * abs(a) ** (self.p - 1) / norm ** (self.p - 1)
        # 0 where out is 0, and at a zero entry (|0|^(p-1) is inf for p < 1), as PyTorch's
        zero = (dual.raw(norm) == 0) | (dual.raw(a) == 0)
        return (grad * where(zero, 0.0, scale),)
