"""Cumulative reductions along one axis: cumsum, cumprod, logcumsumexp. Each docstring gives
the forward and backward rule; `axis` is already a non-negative int (Tensor methods check it).

The backward rules run on numpy arrays and on Tensors (create_graph) alike: they use
operators, `.sum`, basic slicing and these ops themselves.
"""

import numpy as np

from .base import Op, is_tensor
from .dtypes import promote_float
from .elementwise import masked
from .shape import Stack


def _take(values, index, axis):
    """values[..., index, ...] along `axis` (basic indexing: arrays and Tensors alike)."""
    return values[(slice(None),) * axis + (index,)]


def _reverse(values, axis):
    """values reversed along `axis` (a basic slice with step -1)."""
    return values[(slice(None),) * axis + (slice(None, None, -1),)]


def _stack(values, axis):
    """np.stack for arrays, the recorded `Stack` when any value is a Tensor."""
    if any(is_tensor(value) for value in values):
        return Stack.apply(*values, axis=axis)
    return np.stack(values, axis)


def reverse_cumsum(values, axis):
    """sum_{j >= i} values_j along `axis`: the adjoint of cumsum.

    >>> reverse_cumsum(np.array([1.0, 2.0, 3.0]), 0)
    array([6., 5., 3.])
    """
    # The cumsum of the reversed values, reversed back: exact where `total - cumsum + values`
    # cancels (1e16 + 1 - 1e16) and NaN-free where it subtracts inf from inf.
    if is_tensor(values):
        return values.flip(axis).cumsum(axis).flip(axis)
    return np.flip(np.cumsum(np.flip(values, axis), axis), axis)


def cumsum(values, axis):
    """np.cumsum for arrays, the recorded `Cumsum` for Tensors."""
    return Cumsum.apply(values, axis=axis) if is_tensor(values) else np.cumsum(values, axis)


class Cumsum(Op):
    """out_i = sum_{j <= i} a_j along axis;  da_j = sum_{i >= j} g_i (a reversed cumsum)

    Integer and bool tensors sum to int64, as PyTorch.
    """

    __slots__ = ("axis",)

    def forward(self, a, axis):
        self.axis = axis
        if a.dtype == np.float16:  # summed in float32, as PyTorch (float16 drifts)
            with np.errstate(over="ignore"):  # above 65504: inf, as PyTorch
                return np.cumsum(a, axis=axis, dtype=np.float32).astype(np.float16)
        return np.cumsum(a, axis=axis, dtype=None if a.dtype.kind == "f" else np.int64)

    def backward(self, grad_output):
        return (reverse_cumsum(grad_output, self.axis),)


class Cumprod(Op):
    """out_i = prod_{j <= i} a_j along axis;
    da_k = (prod_{j < k} a_j) s_k with s_k = g_k + a_{k+1} s_{k+1} (from the last k down),
    the sum over i >= k of g_i prod_{j <= i, j != k} a_j: exact where some a_j are 0."""

    __slots__ = ("axis",)

    def forward(self, a, axis):
        self.axis = axis
        if a.dtype == np.float16:  # multiplied in float32, as PyTorch (float16 drifts)
            with np.errstate(over="ignore", under="ignore"):
                out = np.cumprod(a, axis=axis, dtype=np.float32).astype(np.float16)
        else:
            out = np.cumprod(a, axis=axis, dtype=None if a.dtype.kind == "f" else np.int64)
        self.save_for_backward(a, out)
        return out

    def backward(self, grad_output):
        a, out = self.saved_tensors
        axis = self.axis
        length = a.shape[axis]
        if length == 0:
            return (grad_output,)
        if not is_tensor(a) and np.all(a):  # no zeros: the shortcut (sum of g out) / a
            # An output that gets no gradient adds nothing, also where it overflowed to inf
            # (0 * inf is NaN): prod's gradient is then g prod / a, as PyTorch's prod.
            return (reverse_cumsum(masked(out, grad_output), axis) / a,)
        suffix = [None] * length  # s_k of the docstring, built from the last position down
        suffix[-1] = _take(grad_output, length - 1, axis)
        for k in range(length - 2, -1, -1):
            suffix[k] = _take(grad_output, k, axis) + _take(a, k + 1, axis) * suffix[k + 1]
        prefix = [_take(a, 0, axis) * 0.0 + 1.0]  # prod_{j < k} a_j, from k = 0 up
        for k in range(1, length):
            prefix.append(_take(out, k - 1, axis))
        return (_stack([left * right for left, right in zip(prefix, suffix)], axis),)


class LogCumSumExp(Op):
    """out_i = log sum_{j <= i} exp(a_j) along axis (numpy's logaddexp.accumulate: stable);
    da_j = sum_{i >= j} g_i exp(a_j - out_i) = softmax weights of each prefix, summed"""

    __slots__ = ("axis",)
    promotion = staticmethod(promote_float)

    def forward(self, a, axis):
        self.axis = axis
        if not a.shape[axis]:
            out = a.copy()
        elif a.dtype == np.float16:  # in float32, as PyTorch (float16 drifts)
            out = np.logaddexp.accumulate(a.astype(np.float32), axis=axis).astype(np.float16)
        else:
            out = np.logaddexp.accumulate(a, axis=axis)
        self.save_for_backward(a, out)
        return out

    def backward(self, grad_output):
        a, out = self.saved_tensors
        axis = self.axis
        if is_tensor(grad_output):  # create_graph: the sum written out, differentiable
            return (self.backward_composed(grad_output, a, out),)
        # sum_{i >= j} g_i exp(-out_i), in logs and split by sign so that nothing overflows:
        # log sum_{i >= j} |g_i| exp(-out_i) is a reversed logcumsumexp.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            grad = np.zeros_like(a)
            for sign in (1.0, -1.0):
                logs = np.where(sign * grad_output > 0, np.log(np.abs(grad_output)), -np.inf)
                tail = np.logaddexp.accumulate(_reverse(logs - out, axis), axis=axis)
                grad = grad + sign * np.exp(_reverse(tail, axis) + a)
        return (grad,)

    def backward_composed(self, grad_output, a, out):
        """The same sum with Tensor ops: weights exp(a_j - out_i) for i >= j, one i at a time."""
        length = a.shape[self.axis]
        terms = []
        for j in range(length):
            a_j = _take(a, j, self.axis)
            total = None
            for i in range(j, length):
                term = _take(grad_output, i, self.axis) * (a_j - _take(out, i, self.axis)).exp()
                total = term if total is None else total + term
            terms.append(total)
        return _stack(terms, self.axis) if terms else grad_output
