"""`ConvTranspose2d`, as torch.nn.ConvTranspose2d: the weight laid out (in_channels,
out_channels / groups, kH, kW) and initialised as PyTorch's, so its state dict loads as it
is; the forward is `F.conv_transpose2d`, with PyTorch's `output_size=` to pick the
output padding."""

import math

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..ops.windows import spatial_tuple
from ..tensor import DEFAULT_DTYPE
from .init import fan_in_bound, uniform
from .module import Module, Parameter


class ConvTranspose2d(Module):
    """The transpose of a 2-D convolution (an upsampling layer): (N, C_in, H, W) ->
    (N, C_out, (H - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1, ...).
    Weight and bias start as U(-1/√fan_in, 1/√fan_in) with fan_in = out_channels / groups ·
    kH · kW (PyTorch's kaiming_uniform with a = √5 reads the weight's dim 1 as its fan-in).

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)
    >>> layer.weight.shape, layer(tg.zeros(1, 4, 5, 5)).shape
    ((4, 2, 3, 3), (1, 2, 10, 10))
    """

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        dtype=DEFAULT_DTYPE,
        generator=None,
    ):
        super().__init__()
        name = "ConvTranspose2d"
        if padding_mode != "zeros":
            raise ValueError(
                f'{name}: only "zeros" padding mode is supported, got {padding_mode!r}'
            )
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"both divide by groups ({groups})"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = spatial_tuple(kernel_size, 2, "kernel_size", name)
        self.stride = spatial_tuple(stride, 2, "stride", name)
        self.padding = spatial_tuple(padding, 2, "padding", name, minimum=0)
        self.output_padding = spatial_tuple(output_padding, 2, "output_padding", name, 0)
        self.dilation = spatial_tuple(dilation, 2, "dilation", name)
        self.padding_mode = padding_mode
        shape = (in_channels, out_channels // groups, *self.kernel_size)
        bound = fan_in_bound(out_channels // groups * math.prod(self.kernel_size))
        self.weight = Parameter(uniform(shape, bound, dtype, generator))
        if bias:
            self.bias = Parameter(uniform((out_channels,), bound, dtype, generator))
        else:
            self.register_parameter("bias", None)

    def forward(self, x, output_size=None):
        output_padding = self._output_padding(x, output_size)
        options = {"groups": self.groups, "dilation": self.dilation}
        return F.conv_transpose2d(
            x, self.weight, self.bias, self.stride, self.padding, output_padding, **options
        )

    def _output_padding(self, x, output_size):
        """The output padding that gives `output_size` (its last two entries), as PyTorch's:
        each size must lie between the smallest output and that plus stride - 1."""
        if output_size is None:
            return self.output_padding
        sizes = tuple(output_size)[-2:]
        extras = []
        for axis, size in enumerate(sizes):
            smallest = (
                (x.shape[axis - 2] - 1) * self.stride[axis]
                - 2 * self.padding[axis]
                + self.dilation[axis] * (self.kernel_size[axis] - 1)
                + 1
            )
            if not smallest <= size < smallest + self.stride[axis]:
                raise ValueError(
                    f"ConvTranspose2d: requested an output size of {sizes}, but valid sizes "
                    f"range from {smallest} to {smallest + self.stride[axis] - 1} in dim "
                    f"{axis} (for an input of {x.shape})"
                )
            extras.append(size - smallest)
        return tuple(extras)

    def extra_repr(self):
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        text += f", stride={self.stride}"
        text += f", padding={self.padding}" if self.padding != (0, 0) else ""
        text += f", output_padding={self.output_padding}" if self.output_padding != (0, 0) else ""
        text += f", dilation={self.dilation}" if self.dilation != (1, 1) else ""
        text += f", groups={self.groups}" if self.groups != 1 else ""
        return text + (", bias=False" if self.bias is None else "")


__all__ = ["ConvTranspose2d"]
