"""`conv_transpose2d`: the transpose (adjoint) of conv2d in its input, as PyTorch's: each
input element adds weight[c_in] times itself into a kH x kW window of the output, the
windows `stride` apart. Composed, as the convolution arithmetic guide derives it (Dumoulin &
Visin 2016, section 4): the input spread out with stride - 1 zeros between its elements,
padded by dilation (k - 1) - padding on each side (output_padding more at the end), then a
stride-1 conv2d with the kernel flipped and its in and out channels swapped. Its gradients
are then Pad's, Reshape's and Conv2d's rules.
"""

import numpy as np

from .conv import check_conv, conv2d
from .windows import Pad, spatial_tuple, with_batch


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """out[n, o] = Σ_c input[n, c] scattered through weight[c, o] (a transposed convolution,
    the gradient of conv2d with respect to its input), as
    `torch.nn.functional.conv_transpose2d`: input (N, C_in, H, W) or (C_in, H, W), weight
    (C_in, C_out / groups, kH, kW), bias (C_out,); out H = (H - 1) stride - 2 padding +
    dilation (kH - 1) + output_padding + 1.

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([[[[1.0, 2.0]]]])
    >>> conv_transpose2d(x, tg.ones(1, 1, 1, 2), stride=2).tolist()
    [[[[1.0, 1.0, 2.0, 2.0]]]]
    """
    name = "conv_transpose2d"
    x, unbatched = with_batch(input, 2, name)
    if weight.ndim != 4:
        raise RuntimeError(
            f"{name}: weight must be (in_channels, out_channels / groups, kH, kW), got shape "
            f"{weight.shape}"
        )
    stride = spatial_tuple(stride, 2, "stride", name)
    dilation = spatial_tuple(dilation, 2, "dilation", name)
    padding = spatial_tuple(padding, 2, "padding", name, minimum=0)
    output_padding = spatial_tuple(output_padding, 2, "output_padding", name, minimum=0)
    for extra, step, spacing in zip(output_padding, stride, dilation, strict=True):
        if extra >= max(step, spacing):
            raise RuntimeError(
                f"{name}: output padding must be smaller than either stride or dilation, got "
                f"output_padding={output_padding}, stride={stride}, dilation={dilation}"
            )
    kernel = _as_forward_kernel(weight, groups, x, name)
    check_conv(x, kernel, bias, groups, name)
    spread = _spread(x, stride)
    widths = [
        (d * (k - 1) - p, d * (k - 1) - p + extra)
        for k, d, p, extra in zip(weight.shape[2:], dilation, padding, output_padding, strict=True)
    ]
    out = conv2d(_pad_or_crop(spread, widths), kernel, bias, dilation=dilation, groups=groups)
    return out.reshape(out.shape[1:]) if unbatched else out


def _as_forward_kernel(weight, groups, x, name):
    """The (C_out, C_in / groups, kH, kW) kernel of the equivalent conv2d: each group's in and
    out channels swapped, the taps flipped in both spatial dims."""
    channels, per_group_out, height, width = weight.shape
    if not isinstance(groups, (int, np.integer)) or groups < 1 or channels % groups:
        raise RuntimeError(
            f"{name}: groups={groups!r} must be a positive int dividing the weight's "
            f"{channels} input channels"
        )
    if x.shape[1] != channels:
        raise RuntimeError(
            f"{name}: the input has {x.shape[1]} channels, the weight {weight.shape} expects "
            f"{channels}"
        )
    grouped = weight.reshape((groups, channels // groups, per_group_out, height, width))
    swapped = grouped.transpose(0, 2, 1, 3, 4)
    kernel = swapped.reshape((groups * per_group_out, channels // groups, height, width))
    return kernel[:, :, ::-1, ::-1]


def _spread(x, stride):
    """x with stride - 1 zeros between neighbours along H and W (a Pad of the reshaped
    (N, C, H, 1, W, 1), then the trailing zeros cut)."""
    if stride == (1, 1):
        return x
    batch, channels, height, width = x.shape
    (step_h, step_w) = stride
    cells = x.reshape((batch, channels, height, 1, width, 1))
    widths = ((0, 0), (0, 0), (0, 0), (0, step_h - 1), (0, 0), (0, step_w - 1))
    spread = Pad.apply(cells, widths=widths, value=0.0)
    spread = spread.reshape((batch, channels, height * step_h, width * step_w))
    return spread[:, :, : (height - 1) * step_h + 1, : (width - 1) * step_w + 1]


def _pad_or_crop(x, widths):
    """x padded with zeros by the positive (before, after) widths of H and W, cut by the
    negative ones (padding larger than dilation (k - 1) crops the spread input)."""
    positive = [(max(before, 0), max(after, 0)) for before, after in widths]
    if any(before or after for before, after in positive):
        x = Pad.apply(x, widths=((0, 0), (0, 0), *positive), value=0.0)
    cuts = tuple(
        slice(-min(before, 0), x.shape[axis] + min(after, 0))
        for axis, (before, after) in zip((2, 3), widths, strict=True)
    )
    if any(before < 0 or after < 0 for before, after in widths):
        x = x[(slice(None), slice(None), *cuts)]
    return x
