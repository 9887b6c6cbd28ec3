"""Pooling over the windows of (N, C, H, W) inputs, as PyTorch's `max_pool2d`/`avg_pool2d`
(and their 1-D forms over a height of 1).

Max pooling is one op, `MaxPool2d`: the gradient of each window goes to the first of its
maxima (PyTorch's choice; `max` over the window would split it between ties), and windows
that overlap add up. Average pooling is composed: pad, `SlidingWindows`, a sum over each
window and a division by the window's count, so its backward is those ops' own rules.

Output size (PyTorch's `pooling_output_shape`): (n + 2 pad - d (k - 1) - 1) // s + 1, or
with ceil_mode the ceiling of the division, less one if the last window would start in the
right-hand padding. The windows that ceil_mode adds past the end are padded here and
counted in no average.
"""

import numpy as np

from .base import Op, is_tensor, new_tensor
from .checks import ArgumentError, DtypeError, ShapeError
from .shape import Stack
from .windows import (
    Pad,
    SlidingWindows,
    add_windows,
    sliding_windows,
    spatial_tuple,
    window_count,
    with_batch,
)


class MaxPool2d(Op):
    """out[n, c, i, j] = max of the window (i, j) of x padded with -inf;
    dx = g routed to the first maximum of each window (overlapping windows add up)"""

    __slots__ = ("choice", "kernel", "stride", "dilation", "widths", "padded_shape")

    def forward(self, x, kernel, stride, dilation, widths):
        self.kernel, self.stride, self.dilation, self.widths = kernel, stride, dilation, widths
        # padding never wins a window: -inf, or an integer input's least value
        lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        padded = np.pad(x, widths, constant_values=lowest) if np.any(widths) else x
        self.padded_shape = padded.shape
        windows = sliding_windows(padded, kernel, stride, dilation)
        flat = windows.reshape((*windows.shape[:4], kernel[0] * kernel[1]))
        self.choice = flat.argmax(axis=-1)  # the first maximum (NaN counts as the maximum)
        out = np.take_along_axis(flat, self.choice[..., None], axis=-1)[..., 0]
        if np.any(widths) and np.isneginf(out).any():
            # A window of -infs only: its first in-bounds tap, as PyTorch (not a pad, whose
            # gradient would be lost and whose index would point outside the plane).
            inside = np.pad(np.ones(x.shape[2:], bool), widths[2:], constant_values=False)
            taps = sliding_windows(inside, kernel, stride, dilation)
            first_inside = taps.reshape((*taps.shape[:2], -1)).argmax(axis=-1)
            self.choice = np.where(np.isneginf(out), first_inside, self.choice)
        return out

    def backward(self, grad_output):
        taps = np.arange(self.kernel[0] * self.kernel[1])
        mask = (taps == self.choice[..., None]).reshape(self.choice.shape + self.kernel)
        grad_windows = grad_output.reshape(grad_output.shape + (1, 1)) * mask.astype(
            grad_output.dtype
        )
        grad_padded = add_windows(grad_windows, self.padded_shape, self.stride, self.dilation)
        middle = tuple(
            slice(before, size - after)
            for (before, after), size in zip(self.widths, self.padded_shape)
        )
        return (grad_padded[middle],)

    def flat_indices(self, width):
        """Where each maximum sits in its (H, W) plane, as h W + w (PyTorch's indices)."""
        row_tap, column_tap = np.divmod(self.choice, self.kernel[1])
        out_h, out_w = self.choice.shape[2:]
        top, left = self.widths[2][0], self.widths[3][0]
        rows = np.arange(out_h)[:, None] * self.stride[0] + row_tap * self.dilation[0] - top
        columns = np.arange(out_w) * self.stride[1] + column_tap * self.dilation[1] - left
        return (rows * width + columns).astype(np.int64)


def pool_geometry(x, kernel_size, stride, padding, dilation, ceil_mode, op_name):
    """kernel, stride, dilation and the ((0, 0), (0, 0), (top, bottom), (left, right)) widths,
    the bottom/right ones including the extra that ceil_mode needs."""
    kernel = spatial_tuple(kernel_size, 2, "kernel_size", op_name)
    if stride is None or stride == ():
        stride = kernel
    stride = spatial_tuple(stride, 2, "stride", op_name)
    padding = spatial_tuple(padding, 2, "padding", op_name, minimum=0)
    dilation = spatial_tuple(dilation, 2, "dilation", op_name)
    widths = [(0, 0), (0, 0)]
    for size, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation):
        span = d * (k - 1) + 1
        if p > span // 2:
            raise ArgumentError(
                f"{op_name}: padding ({p}) must be at most half the (dilated) kernel size "
                f"({span}), as in PyTorch"
            )
        count = window_count(size + 2 * p, k, s, d)
        if ceil_mode:
            count = -(-(size + 2 * p - span) // s) + 1
            if (count - 1) * s >= size + p:  # the last window would start in the padding
                count -= 1
        if count < 1:  # (ceil_mode gives a window to an input smaller than the kernel)
            raise ShapeError(
                f"{op_name}: the input of shape {x.shape} (padded by {padding}) is smaller "
                f"than the kernel {kernel} (dilation {dilation})"
            )
        extra = max(0, (count - 1) * s + span - (size + 2 * p))
        widths.append((p, p + extra))
    return kernel, stride, dilation, tuple(widths)


def _batched_windows(op_name, input, kernel_size, stride, padding, dilation, ceil_mode):
    """The input as an (N, C, H, W) tensor (float; max pooling also takes integers, as
    PyTorch's), whether a batch dim was added to it, and the windows' (kernel, stride,
    dilation, widths) from `pool_geometry`."""
    integers = op_name == "max_pool2d"
    x, unbatched = with_batch(_float_tensor(input, op_name, integers), 2, op_name)
    geometry = pool_geometry(x, kernel_size, stride, padding, dilation, ceil_mode, op_name)
    return x, unbatched, geometry


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """The maximum of each window, as PyTorch's max_pool2d (stride defaults to the kernel).

    With return_indices=True also the position h W + w of each maximum in its plane.

    >>> import tinygrad_ops as tg
    >>> max_pool2d(tg.Tensor(np.arange(16.0).reshape(1, 1, 4, 4), dtype=np.float32), 2).numpy()
    array([[[[ 5.,  7.],
             [13., 15.]]]], dtype=float32)
    """
    x, unbatched, (kernel, stride, dilation, widths) = _batched_windows(
        "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode
    )
    out = MaxPool2d.apply(x, kernel=kernel, stride=stride, dilation=dilation, widths=widths)
    indices = None
    if return_indices:
        node = out._ctx if out._ctx is not None else None
        if node is None:  # not recorded (no_grad): run the op's forward once more to ask it
            node = MaxPool2d()
            node.needs_input_grad = [False]
            node.forward(x.data, kernel, stride, dilation, widths)
        indices = new_tensor(node.flat_indices(x.shape[3]))
    if unbatched:
        out = out.reshape(out.shape[1:])
        indices = None if indices is None else new_tensor(indices.data[0])
    return (out, indices) if return_indices else out


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """The mean of each window, as PyTorch's avg_pool2d: zero padding counted in the mean
    unless count_include_pad=False; divisor_override replaces the count.

    >>> import tinygrad_ops as tg
    >>> avg_pool2d(tg.Tensor(np.arange(16.0).reshape(1, 1, 4, 4), dtype=np.float32), 2).numpy()
    array([[[[ 2.5,  4.5],
             [10.5, 12.5]]]], dtype=float32)
    """
    x, unbatched, (kernel, stride, dilation, widths) = _batched_windows(
        "avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode
    )
    windows = SlidingWindows.apply(
        Pad.apply(x, widths=widths, value=0.0), kernel=kernel, stride=stride, dilation=dilation
    )
    if x.dtype == np.float16:  # summed in float32, as PyTorch (float16 overflows at 65504)
        windows = windows.astype(np.float32)
    totals = windows.sum(axis=(-2, -1))
    if divisor_override is not None:
        if not isinstance(divisor_override, (int, np.integer)) or divisor_override < 1:
            raise ArgumentError(
                f"avg_pool2d: divisor_override must be a positive int, got {divisor_override!r}"
            )
        out = totals / float(divisor_override)
    else:
        counts = window_counts(x.shape[2:], widths, kernel, stride, count_include_pad)
        out = totals / counts.astype(totals.dtype)
    out = out.astype(x.dtype) if out.dtype != x.dtype else out
    return out.reshape(out.shape[1:]) if unbatched else out


def adaptive_avg_pool2d(input, output_size):
    """The mean over each of output_size[0] x output_size[1] bins that cover the plane, as
    PyTorch's: bin i of n over a length L spans [floor(i L / n), ceil((i + 1) L / n)) (so
    bins may overlap by one); None keeps that dim's length. `(1, 1)` is global pooling.

    >>> import tinygrad_ops as tg
    >>> adaptive_avg_pool2d(tg.Tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 1).numpy()
    array([[[[7.5]]]])
    """
    x, unbatched = with_batch(_float_tensor(input, "adaptive_avg_pool2d"), 2, "adaptive_avg_pool2d")
    height, width = x.shape[2:]
    out_height, out_width = _output_size(output_size, (height, width), "adaptive_avg_pool2d")
    if height % out_height == 0 and width % out_width == 0:  # equal bins: one pooling
        kernel = (height // out_height, width // out_width)
        out = avg_pool2d(x, kernel)
    else:
        rows = []
        for top, bottom in _bins(out_height, height):
            row = [
                x[:, :, top:bottom, left:right].mean(axis=(2, 3))
                for left, right in _bins(out_width, width)
            ]
            rows.append(Stack.apply(*row, axis=2))
        out = Stack.apply(*rows, axis=2)
    return out.reshape(out.shape[1:]) if unbatched else out


def _bins(count, length):
    """PyTorch's adaptive bins: bin i of `count` over `length` is [floor(i length / count),
    ceil((i + 1) length / count))."""
    return [(i * length // count, -(-(i + 1) * length // count)) for i in range(count)]


def _output_size(output_size, lengths, op_name):
    """An adaptive pooling's (height, width): an int for both, or a pair of ints or None
    (None keeps the input's length), each at least 1."""
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * 2
    valid = len(sizes) == 2 and all(
        size is None
        or (isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size >= 1)
        for size in sizes
    )
    if not valid:
        raise ArgumentError(
            f"{op_name}: output_size must be an int or a pair of ints (or None) of "
            f"at least 1, got {output_size!r}"
        )
    return tuple(length if size is None else int(size) for size, length in zip(sizes, lengths))


def window_counts(spatial, widths, kernel, stride, count_include_pad):
    """How many elements each window averages: the padding counts (if asked), never the
    extra that ceil_mode adds past the padding."""
    padded = [size + before + after for size, (before, after) in zip(spatial, widths[2:])]
    counted = np.zeros(padded)
    if count_include_pad:
        stop_h, stop_w = (size + 2 * before for size, (before, _) in zip(spatial, widths[2:]))
        counted[:stop_h, :stop_w] = 1.0
    else:
        (top, _), (left, _) = widths[2:]
        counted[top : top + spatial[0], left : left + spatial[1]] = 1.0
    return sliding_windows(counted, kernel, stride, (1, 1)).sum(axis=(-2, -1))


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """max_pool2d over a height of 1: input (N, C, L) or (C, L).

    >>> import tinygrad_ops as tg
    >>> max_pool1d(tg.Tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2).numpy()
    array([[[3., 2.]]], dtype=float32)
    """
    x = _float_tensor(input, "max_pool1d", integers=True)
    x = x.expand_dims(-2)
    result = max_pool2d(
        x,
        (1, spatial_tuple(kernel_size, 1, "kernel_size", "max_pool1d")[0]),
        None if stride is None else (1, spatial_tuple(stride, 1, "stride", "max_pool1d")[0]),
        (0, spatial_tuple(padding, 1, "padding", "max_pool1d", 0)[0]),
        (1, spatial_tuple(dilation, 1, "dilation", "max_pool1d")[0]),
        ceil_mode,
        return_indices,
    )
    if return_indices:
        out, indices = result
        return out.squeeze(-2), new_tensor(indices.data.squeeze(-2))
    return result.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """avg_pool2d over a height of 1: input (N, C, L) or (C, L).

    >>> import tinygrad_ops as tg
    >>> avg_pool1d(tg.Tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2).numpy()
    array([[[2., 1.]]], dtype=float32)
    """
    x = _float_tensor(input, "avg_pool1d").expand_dims(-2)
    out = avg_pool2d(
        x,
        (1, spatial_tuple(kernel_size, 1, "kernel_size", "avg_pool1d")[0]),
        None if stride is None else (1, spatial_tuple(stride, 1, "stride", "avg_pool1d")[0]),
        (0, spatial_tuple(padding, 1, "padding", "avg_pool1d", 0)[0]),
        ceil_mode,
        count_include_pad,
    )
    return out.squeeze(-2)


def _float_tensor(value, op_name, integers=False):
    if not is_tensor(value):
        if not isinstance(value, np.ndarray):
            raise TypeError(f"{op_name}: input must be a Tensor, got {type(value).__name__}")
        value = new_tensor(value)
    if value.dtype.kind != "f" and not (integers and value.dtype.kind in "iu"):
        kinds = "floating point or integer" if integers else "floating point"
        raise DtypeError(f"{op_name}: input must be {kinds}, got {value.dtype}")
    return value
