"""Convolution and pooling layers with PyTorch's names, weight layout and default init, so a
PyTorch state dict of a CNN loads as it is."""

import math

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..ops.conv import conv_padding
from ..ops.windows import spatial_tuple
from ..tensor import DEFAULT_DTYPE
from .init import fan_in_bound, uniform
from .module import Module, Parameter

# PyTorch's padding modes and the F.pad mode each one is.
PADDING_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "replicate",
                 "circular": "circular"}  # fmt: skip


class _ConvNd(Module):
    """The parameters of Conv1d/Conv2d: weight (out, in / groups, *kernel), bias (out,).

    PyTorch's default init (torch.nn.modules.conv reset_parameters): kaiming_uniform with
    a = sqrt(5) for the weight, which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with
    fan_in = in / groups * prod(kernel), and the same bound for the bias.
    """

    dims = 2
    op_name = "Conv2d"

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        dtype=DEFAULT_DTYPE,
        generator=None,
    ):
        super().__init__()
        name = self.op_name
        if padding_mode not in PADDING_MODES:
            raise ValueError(
                f"{name}: padding_mode must be one of {', '.join(PADDING_MODES)}, "
                f"got {padding_mode!r}"
            )
        self.padding_mode = padding_mode
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"both divide by groups ({groups})"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = spatial_tuple(kernel_size, self.dims, "kernel_size", name)
        self.stride = spatial_tuple(stride, self.dims, "stride", name)
        self.dilation = spatial_tuple(dilation, self.dims, "dilation", name)
        self.padding = (
            padding
            if isinstance(padding, str)
            else spatial_tuple(padding, self.dims, "padding", name, minimum=0)
        )
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        bound = fan_in_bound(in_channels // groups * math.prod(self.kernel_size))
        self.weight = Parameter(uniform(shape, bound, dtype, generator))
        if bias:
            self.bias = Parameter(uniform((out_channels,), bound, dtype, generator))
        else:
            self.register_parameter("bias", None)

    def _convolve(self, conv, x):
        """conv(x) with this layer's options; a padding mode other than zeros pads x first
        (F.pad, as PyTorch does) and convolves without padding."""
        padding = self.padding
        if self.padding_mode != "zeros":
            widths = conv_padding(
                padding, self.kernel_size, self.stride, self.dilation, self.op_name
            )
            pairs = tuple(size for pair in reversed(widths) for size in pair)  # last dim first
            x = F.pad(x, pairs, mode=PADDING_MODES[self.padding_mode])
            padding = 0
        return conv(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)

    def extra_repr(self):
        """The arguments as PyTorch prints them: stride, and the others that are not defaults."""
        dims = self.dims
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        text += f", stride={self.stride}"
        text += f", padding={self.padding!r}" if self.padding not in ((0,) * dims, "valid") else ""
        text += f", dilation={self.dilation}" if self.dilation != (1,) * dims else ""
        text += f", groups={self.groups}" if self.groups != 1 else ""
        text += ", bias=False" if self.bias is None else ""
        return text + (
            "" if self.padding_mode == "zeros" else f", padding_mode={self.padding_mode}"
        )


class Conv2d(_ConvNd):
    """2-D convolution layer: input (N, C_in, H, W) -> (N, C_out, H_out, W_out).

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.Conv2d(1, 4, 3, padding=1)
    >>> layer.weight.shape, layer(tg.zeros(2, 1, 8, 8)).shape
    ((4, 1, 3, 3), (2, 4, 8, 8))
    """

    def forward(self, x):
        return self._convolve(F.conv2d, x)


class Conv1d(_ConvNd):
    """1-D convolution layer: input (N, C_in, L) -> (N, C_out, L_out).

    >>> import tinygrad_ops as tg
    >>> tg.nn.Conv1d(2, 3, 2)(tg.zeros(1, 2, 5)).shape
    (1, 3, 4)
    """

    dims = 1
    op_name = "Conv1d"

    def forward(self, x):
        return self._convolve(F.conv1d, x)


class MaxPool2d(Module):
    """The maximum of each kernel_size window (stride defaults to kernel_size).

    >>> import tinygrad_ops as tg
    >>> tg.nn.MaxPool2d(2)(tg.zeros(1, 3, 8, 8)).shape
    (1, 3, 4, 4)
    """

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False
    ):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x):
        return self._pool(F.max_pool2d, x)

    def _pool(self, function, x):
        # MaxPool1d shares these settings and calls max_pool1d here instead.
        return function(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
            self.return_indices,
        )

    def extra_repr(self):
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(MaxPool2d):
    """max_pool1d as a layer: input (N, C, L).

    >>> import tinygrad_ops as tg
    >>> tg.nn.MaxPool1d(2)(tg.zeros(1, 3, 8)).shape
    (1, 3, 4)
    """

    def forward(self, x):
        return self._pool(F.max_pool1d, x)


class AvgPool2d(Module):
    """The mean of each kernel_size window (stride defaults to kernel_size).

    >>> import tinygrad_ops as tg
    >>> tg.nn.AvgPool2d(2)(tg.ones(1, 3, 8, 8)).shape
    (1, 3, 4, 4)
    """

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x):
        return F.avg_pool2d(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(AvgPool2d):
    """avg_pool1d as a layer: input (N, C, L).

    >>> import tinygrad_ops as tg
    >>> tg.nn.AvgPool1d(2)(tg.ones(1, 3, 8)).shape
    (1, 3, 4)
    """

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)

    def forward(self, x):
        return F.avg_pool1d(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad
        )


class AdaptiveAvgPool2d(Module):
    """adaptive_avg_pool2d as a layer: the mean over output_size bins of each plane, as
    torch.nn.AdaptiveAvgPool2d; `AdaptiveAvgPool2d(1)` is global average pooling.

    >>> import tinygrad_ops as tg
    >>> tg.nn.AdaptiveAvgPool2d((1, 1))(tg.ones(2, 3, 7, 5)).shape
    (2, 3, 1, 1)
    """

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    """adaptive_max_pool2d as a layer: the max over output_size bins of each plane, as
    torch.nn.AdaptiveMaxPool2d (with return_indices, also where each max is).

    >>> import tinygrad_ops as tg
    >>> tg.nn.AdaptiveMaxPool2d((2, 1))(tg.ones(2, 3, 7, 5)).shape
    (2, 3, 2, 1)
    """

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x):
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


__all__ = [
    "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d", "Conv1d", "Conv2d",
    "MaxPool1d", "MaxPool2d",
]  # fmt: skip
