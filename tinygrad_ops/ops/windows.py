"""Sliding windows and padding: the two moves that convolution and pooling are made of.

`SlidingWindows` views every window of the last k dims of an array (no copy: a strided
view, numpy's `as_strided`), and `AddWindows` is its adjoint: it adds each window back
where it was read. Each is the other's backward, so both are differentiable to any order.
`Pad` surrounds an array with a constant; its backward cuts the middle out again.

Window arithmetic (PyTorch's, `torch.nn.Conv2d` docs): along a dim of size n, with kernel
k, stride s and dilation d, there are (n - d(k - 1) - 1) // s + 1 windows; window i reads
positions i s + p d for p = 0 .. k - 1.
"""

import numpy as np

from .base import Op, is_tensor
from .checks import ArgumentError, ShapeError


def window_count(size, kernel, stride, dilation):
    """How many windows of `kernel` taps fit along a dim of `size` (0 when none fits).

    >>> window_count(8, 3, 1, 1), window_count(8, 3, 2, 1), window_count(8, 3, 1, 2)
    (6, 3, 4)
    """
    span = dilation * (kernel - 1) + 1
    return max(0, (size - span) // stride + 1)


def sliding_windows(array, kernel, stride, dilation):
    """A read-only view of shape `lead + counts + kernel`: every window of the last k dims.

    >>> sliding_windows(np.arange(5.0), (3,), (1,), (1,))
    array([[0., 1., 2.],
           [1., 2., 3.],
           [2., 3., 4.]])
    """
    dims = len(kernel)
    spatial = array.shape[array.ndim - dims :]
    counts = tuple(map(window_count, spatial, kernel, stride, dilation))
    steps = array.strides[array.ndim - dims :]
    shape = array.shape[: array.ndim - dims] + counts + tuple(kernel)
    strides = (
        array.strides[: array.ndim - dims]
        + tuple(step * s for step, s in zip(steps, stride))
        + tuple(step * d for step, d in zip(steps, dilation))
    )
    return np.lib.stride_tricks.as_strided(array, shape, strides, writeable=False)


def add_windows_array(windows, shape, stride, dilation):
    """zeros(shape) with every window added back where it was read (overlaps add up).

    One strided slice-add per kernel tap (k_h k_w of them), not one per window.

    >>> add_windows_array(np.ones((3, 3)), (5,), (1,), (1,))
    array([1., 2., 3., 2., 1.])
    """
    dims = len(stride)
    out = np.zeros(shape, dtype=windows.dtype)
    kernel = windows.shape[windows.ndim - dims :]
    counts = windows.shape[windows.ndim - 2 * dims : windows.ndim - dims]
    if 0 in counts:
        return out
    for tap in np.ndindex(*kernel):
        target = tuple(
            slice(p * d, p * d + s * (count - 1) + 1, s)
            for p, d, s, count in zip(tap, dilation, stride, counts)
        )
        out[(Ellipsis, *target)] += windows[(Ellipsis, *tap)]
    return out


def windows_of(value, kernel, stride, dilation):
    """`sliding_windows` for arrays, the recorded `SlidingWindows` op for Tensors."""
    if is_tensor(value):
        return SlidingWindows.apply(value, kernel=kernel, stride=stride, dilation=dilation)
    return sliding_windows(value, kernel, stride, dilation)


def add_windows(windows, shape, stride, dilation):
    """`add_windows_array` for arrays, the recorded `AddWindows` op for Tensors."""
    if is_tensor(windows):
        return AddWindows.apply(windows, shape=shape, stride=stride, dilation=dilation)
    return add_windows_array(windows, shape, stride, dilation)


class SlidingWindows(Op):
    """out[..., i, p] = a[..., i s + p d] (each window of the last k dims, a strided view);
    da = the windows of g added back where they were read (AddWindows, its adjoint)"""

    __slots__ = ("input_shape", "stride", "dilation")
    is_view = True

    def forward(self, a, kernel, stride, dilation):
        self.input_shape = a.shape
        self.stride, self.dilation = tuple(stride), tuple(dilation)
        return sliding_windows(a, tuple(kernel), self.stride, self.dilation)

    def backward(self, grad_output):
        return (add_windows(grad_output, self.input_shape, self.stride, self.dilation),)


class AddWindows(Op):
    """out = zeros(shape) with each window a[..., i, :] added at its place;
    da = SlidingWindows of g (reading back what each window added)"""

    __slots__ = ("kernel", "stride", "dilation")

    def forward(self, a, shape, stride, dilation):
        self.stride, self.dilation = tuple(stride), tuple(dilation)
        self.kernel = a.shape[a.ndim - len(self.stride) :]
        return add_windows_array(a, tuple(shape), self.stride, self.dilation)

    def backward(self, grad_output):
        return (windows_of(grad_output, self.kernel, self.stride, self.dilation),)


class Pad(Op):
    """out = a with `value` around it (widths[i] = (before, after) for dim i);
    da = g[before : before + n] along every dim (the middle, where a sits)"""

    __slots__ = ("middle",)

    def forward(self, a, widths, value=0.0):
        self.middle = tuple(
            slice(before, before + size) for (before, _), size in zip(widths, a.shape)
        )
        return np.pad(a, widths, mode="constant", constant_values=value)

    def backward(self, grad_output):
        return (grad_output[self.middle],)


def pad_array_or_tensor(value, widths, fill=0.0):
    """Pad an array (np.pad) or a Tensor (the recorded `Pad`) with a constant."""
    if is_tensor(value):
        return Pad.apply(value, widths=widths, value=fill)
    if not any(before or after for before, after in widths):
        return value
    return np.pad(value, widths, mode="constant", constant_values=fill)


# ----------------------------------------------------------------------------------------------
# Arguments as PyTorch takes them: an int for every spatial dim, or one int per dim


def spatial_tuple(value, dims, name, op_name, minimum=1):
    """`value` as a tuple of `dims` ints, each at least `minimum` (a clear error otherwise).

    >>> spatial_tuple(2, 2, "stride", "conv2d"), spatial_tuple((1, 3), 2, "stride", "conv2d")
    ((2, 2), (1, 3))
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        values = (int(value),) * dims
    elif isinstance(value, (tuple, list)) and all(
        isinstance(item, (int, np.integer)) and not isinstance(item, bool) for item in value
    ):
        values = tuple(int(item) for item in value)
    else:
        raise TypeError(f"{op_name}: {name} must be an int or a tuple of ints, got {value!r}")
    if len(values) == 1 and dims > 1:
        values = values * dims
    if len(values) != dims or any(item < minimum for item in values):
        raise ArgumentError(
            f"{op_name}: {name} must be {dims} int(s) of at least {minimum}, got {value!r}"
        )
    return values


def with_batch(x, spatial_dims, op_name):
    """(x with a batch dim, whether one was added): PyTorch takes (C, ...) as one sample."""
    if x.ndim == spatial_dims + 1:
        return x.reshape((1, *x.shape)), True
    if x.ndim != spatial_dims + 2:
        layout = "(N, C, L)" if spatial_dims == 1 else "(N, C, H, W)"
        raise ShapeError(
            f"{op_name}: the input must be {layout} or unbatched without N, got shape {x.shape}"
        )
    return x, False
