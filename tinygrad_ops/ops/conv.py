"""Convolution: `Conv2d`, one fused op (im2col, then one matrix product per group), and the
public `conv2d`/`conv1d` (conv1d is conv2d over a height of 1). `docs/derivations.md`
derives the backward rule with a worked example; `reference.conv2d` spells it as loops.

The layouts are PyTorch's: input (N, C, H, W), weight (O, C / groups, kH, kW), bias (O,).
With groups G, output channel o of group g = o // (O / G) sees input channels
g C/G .. (g + 1) C/G - 1 only.

Written as matrices (one per group): each window of the padded input, flattened, is a
column of `columns` (C/G·kH·kW taps by N·Ho·Wo windows: im2col); the kernels of the group
are the rows of `kernels` (O/G rows). Then

    out = kernels · columns                          (O/G, N·Ho·Wo)
    d kernels = g · columnsᵀ                         (what each tap saw, weighted by g)
    d columns = kernelsᵀ · g, then each window's column is added back where it was read
                (AddWindows), and the padding is cut off: that is dx
    d bias = g summed over N, Ho, Wo

The columns are laid out tap-major (channel, kernel row, kernel column, then the windows in
image order), so that copying them and adding them back run along contiguous image rows.

The plain backward uses the columns saved by forward. Under create_graph the same formulas
run on Tensors, the columns recomputed from the input Tensor, so they are differentiable again.
"""

import numpy as np

from .base import Op, is_tensor, new_tensor
from .checks import ArgumentError, DtypeError, ShapeError
from .windows import add_windows, pad_array_or_tensor, spatial_tuple, windows_of, with_batch


def group_columns(windows, groups):
    """(N, C, Ho, Wo, kH, kW) windows -> (G, C/G·kH·kW, N·Ho·Wo) columns (im2col; a copy)."""
    batch, channels, out_h, out_w, kernel_h, kernel_w = windows.shape
    taps = channels // groups * kernel_h * kernel_w
    tap_major = windows.transpose((1, 4, 5, 0, 2, 3))  # (C, kH, kW, N, Ho, Wo)
    return tap_major.reshape((groups, taps, batch * out_h * out_w))


def ungroup_columns(columns, windows_shape):
    """The inverse of `group_columns`, a view: (G, C/G·kH·kW, N·Ho·Wo) -> (N, C, Ho, Wo, kH, kW)"""
    batch, channels, out_h, out_w, kernel_h, kernel_w = windows_shape
    tap_major = columns.reshape((channels, kernel_h, kernel_w, batch, out_h, out_w))
    return tap_major.transpose((3, 0, 4, 5, 1, 2))


def group_rows(grad_output, groups):
    """(N, O, Ho, Wo) -> (G, O/G, N·Ho·Wo): each output channel a row of all positions."""
    batch, channels, out_h, out_w = grad_output.shape
    channel_major = grad_output.transpose((1, 0, 2, 3))
    return channel_major.reshape((groups, channels // groups, batch * out_h * out_w))


def ungroup_rows(rows, batch, out_h, out_w):
    """The inverse of `group_rows`: (G, O/G, N·Ho·Wo) -> (N, O, Ho, Wo)."""
    groups, per_group, _ = rows.shape
    channel_major = rows.reshape((groups * per_group, batch, out_h, out_w))
    return channel_major.transpose((1, 0, 2, 3))


class Conv2d(Op):
    """out[n, o] = b[o] + sum_{c, p, q} w[o, c, p, q] x_pad[n, gC' + c, i s + p d, j s + q d]
    (the group's kernels times the im2col columns);  dw = g · columnsᵀ, dx = kernelsᵀ · g
    added back window by window (padding cut off), db = g summed over n, i, j"""

    __slots__ = ("stride", "dilation", "groups", "widths", "padded_shape", "windows_shape")

    def forward(self, x, weight, bias, stride, padding, dilation, groups):
        self.stride, self.dilation, self.groups = stride, dilation, groups
        self.widths = ((0, 0), (0, 0), *padding)
        padded = pad_array_or_tensor(x, self.widths)
        self.padded_shape = padded.shape
        kernel = weight.shape[2:]
        windows = windows_of(padded, kernel, stride, dilation)
        self.windows_shape = windows.shape
        batch, _, out_h, out_w = windows.shape[:4]
        columns = group_columns(windows, groups)
        kernels = weight.reshape((groups, weight.shape[0] // groups, -1))
        out = ungroup_rows(np.matmul(kernels, columns), batch, out_h, out_w)
        out = np.ascontiguousarray(out)
        if bias is not None:
            out += bias.reshape(1, -1, 1, 1)
        needs_x, needs_weight = self.needs_input_grad[0], self.needs_input_grad[1]
        self.save_for_backward(columns if needs_weight else None, weight if needs_x else None)
        return out

    def backward(self, grad_output):
        columns, weight = self.saved_tensors
        if self.graph_mode:  # the same rule on Tensors: columns recomputed from x
            x, weight = self.inputs[0], self.inputs[1]
            if self.needs_input_grad[1]:
                padded = pad_array_or_tensor(x, self.widths)
                kernel = self.windows_shape[4:]
                windows = windows_of(padded, kernel, self.stride, self.dilation)
                columns = group_columns(windows, self.groups)
        rows = group_rows(grad_output, self.groups)
        grad_x = grad_weight = grad_bias = None
        if self.needs_input_grad[0]:
            kernels = weight.reshape((self.groups, weight.shape[0] // self.groups, -1))
            grad_windows = ungroup_columns(kernels.swapaxes(-1, -2) @ rows, self.windows_shape)
            grad_padded = add_windows(grad_windows, self.padded_shape, self.stride, self.dilation)
            middle = tuple(slice(before, size - after) for (before, after), size in zip(
                self.widths, self.padded_shape
            ))  # fmt: skip
            grad_x = grad_padded[middle]
        if self.needs_input_grad[1]:
            weight_shape = self.inputs[1].shape
            grad_weight = (rows @ columns.swapaxes(-1, -2)).reshape(weight_shape)
        if self.needs_input_grad[2]:
            grad_bias = grad_output.sum(axis=(0, 2, 3))
        return grad_x, grad_weight, grad_bias


def conv_padding(padding, kernel, stride, dilation, op_name):
    """PyTorch's padding argument as ((top, bottom), (left, right)) (or one pair per dim).

    'valid' is no padding; 'same' keeps the size (stride 1 only), with the odd extra row or
    column at the end, as PyTorch places it.
    """
    dims = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * dims
        if padding != "same":
            raise ArgumentError(
                f"{op_name}: padding must be 'valid', 'same' or ints, got {padding!r}"
            )
        if any(step != 1 for step in stride):
            raise ArgumentError(f"{op_name}: padding='same' needs stride 1, got stride {stride}")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((total // 2, total - total // 2) for total in totals)
    return tuple((size, size) for size in spatial_tuple(padding, dims, "padding", op_name, 0))


def check_conv(x, weight, bias, groups, op_name):
    for name, value in (("input", x), ("weight", weight), ("bias", bias)):
        if value is not None and value.dtype.kind != "f":
            raise TypeError(f"{op_name}: {name} must be floating point, got {value.dtype}")
        if value is not None and value.dtype != x.dtype:
            raise DtypeError(
                f"{op_name}: input ({x.dtype}) and {name} ({value.dtype}) must have one dtype"
            )
    if weight.ndim != x.ndim:
        raise ShapeError(
            f"{op_name}: weight must be (out_channels, in_channels / groups, kernel...) with "
            f"{x.ndim} dims, got shape {weight.shape}"
        )
    if not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ArgumentError(f"{op_name}: groups must be a positive int, got {groups!r}")
    channels, out_channels = x.shape[1], weight.shape[0]
    if channels % groups or out_channels % groups or weight.shape[1] * groups != channels:
        raise ShapeError(
            f"{op_name}: input with {channels} channels, weight of shape {weight.shape} and "
            f"groups={groups} do not fit: in_channels and out_channels must divide by groups "
            f"and weight.shape[1] must be in_channels / groups"
        )
    if bias is not None and bias.shape != (out_channels,):
        raise ShapeError(f"{op_name}: bias must have shape ({out_channels},), got {bias.shape}")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation as PyTorch's: input (N, C, H, W) or (C, H, W), weight
    (O, C / groups, kH, kW), bias (O,); padding an int, a pair, 'valid' or 'same' (zeros).

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor(np.arange(9.0).reshape(1, 1, 3, 3), dtype=np.float32)
    >>> conv2d(x, tg.ones(1, 1, 2, 2)).numpy()
    array([[[[ 8., 12.],
             [20., 24.]]]], dtype=float32)
    """
    x, weight, bias = (_as_tensor(value, name, "conv2d") for value, name in (
        (input, "input"), (weight, "weight"), (bias, "bias")
    ))  # fmt: skip
    x, unbatched = with_batch(x, 2, "conv2d")
    check_conv(x, weight, bias, groups, "conv2d")
    kernel = weight.shape[2:]
    stride = spatial_tuple(stride, 2, "stride", "conv2d")
    dilation = spatial_tuple(dilation, 2, "dilation", "conv2d")
    widths = conv_padding(padding, kernel, stride, dilation, "conv2d")
    for size, (before, after), k, d, name in zip(x.shape[2:], widths, kernel, dilation, "HW"):
        if size + before + after < d * (k - 1) + 1:
            raise ShapeError(
                f"conv2d: the padded input ({name} = {size + before + after}) is smaller than "
                f"the dilated kernel ({d * (k - 1) + 1}); input shape {x.shape}, weight "
                f"shape {weight.shape}"
            )
    out = Conv2d.apply(
        x, weight, bias, stride=stride, padding=widths, dilation=dilation, groups=int(groups)
    )
    return out.reshape(out.shape[1:]) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation as PyTorch's: input (N, C, L) or (C, L), weight (O, C / groups,
    k), bias (O,); computed as conv2d over a height of 1.

    >>> import tinygrad_ops as tg
    >>> conv1d(tg.Tensor([[[1.0, 2.0, 3.0]]]), tg.Tensor([[[1.0, -1.0]]])).numpy()
    array([[[-1., -1.]]], dtype=float32)
    """
    x, weight = _as_tensor(input, "input", "conv1d"), _as_tensor(weight, "weight", "conv1d")
    x, unbatched = with_batch(x, 1, "conv1d")
    if weight.ndim != 3:
        raise ShapeError(
            f"conv1d: weight must be (out_channels, in_channels / groups, k), got {weight.shape}"
        )
    if not isinstance(padding, str):
        padding = (0, spatial_tuple(padding, 1, "padding", "conv1d", 0)[0])
    out = conv2d(
        x.reshape((x.shape[0], x.shape[1], 1, x.shape[2])),
        weight.reshape((weight.shape[0], weight.shape[1], 1, weight.shape[2])),
        bias,
        stride=(1, spatial_tuple(stride, 1, "stride", "conv1d")[0]),
        padding=padding,
        dilation=(1, spatial_tuple(dilation, 1, "dilation", "conv1d")[0]),
        groups=groups,
    )
    out = out.reshape((out.shape[0], out.shape[1], out.shape[3]))
    return out.reshape(out.shape[1:]) if unbatched else out


def _as_tensor(value, name, op_name):
    if value is None or is_tensor(value):
        return value
    if isinstance(value, np.ndarray):
        return new_tensor(value)
    raise TypeError(f"{op_name}: {name} must be a Tensor, got {type(value).__name__}")
