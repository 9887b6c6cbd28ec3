"""`max_unpool2d`: max_pool2d's partial inverse, as PyTorch's: each pooled value written back
at the position its `indices` name (from max_pool2d(..., return_indices=True)), zeros
everywhere else. Composed: one `scatter` into zeros over each flattened (H W) plane, so the
gradient is scatter's, g gathered at the indices.
"""

import numpy as np

from .base import new_tensor
from .indexing import as_index, scatter
from .windows import spatial_tuple, with_batch


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """out[n, c].flat[indices[n, c, i, j]] = input[n, c, i, j], zero elsewhere, over an output
    of (H - 1) stride - 2 padding + kernel (or `output_size`), as
    `torch.nn.functional.max_unpool2d`;  dinput = g read at the indices.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import functional as F
    >>> x = tg.Tensor([[[[1.0, 5.0], [3.0, 2.0]]]])
    >>> pooled, indices = F.max_pool2d(x, 2, return_indices=True)
    >>> max_unpool2d(pooled, indices, 2).tolist()
    [[[[0.0, 5.0], [0.0, 0.0]]]]
    """
    name = "max_unpool2d"
    x, unbatched = with_batch(input, 2, name)
    index = as_index(indices, name, "indices")
    if unbatched:
        index = index.reshape((1, *index.shape))
    if index.shape != x.shape:
        raise RuntimeError(
            f"{name}: indices must have the input's shape {x.shape}, got {index.shape}"
        )
    kernel = spatial_tuple(kernel_size, 2, "kernel_size", name)
    stride = kernel if stride is None else spatial_tuple(stride, 2, "stride", name)
    padding = spatial_tuple(padding, 2, "padding", name, minimum=0)
    height, width = _output_size(x.shape[2:], kernel, stride, padding, output_size)
    plane = height * width
    if index.size and (index.min() < 0 or index.max() >= plane):
        bad = index.min() if index.min() < 0 else index.max()
        raise RuntimeError(
            f"{name}: found an invalid max index {bad} (the output planes are {height}x{width})"
        )
    batch, channels = x.shape[:2]
    zeros = new_tensor(np.zeros((batch, channels, plane), dtype=x.dtype))
    flat = scatter(zeros, 2, index.reshape(batch, channels, -1), x.reshape((batch, channels, -1)))
    out = flat.reshape((batch, channels, height, width))
    return out.reshape(out.shape[1:]) if unbatched else out


def _output_size(sizes, kernel, stride, padding, output_size):
    """(H, W): PyTorch's default, or `output_size` (its last two entries) when each lies
    strictly within stride of the default."""
    default = [(size - 1) * s - 2 * p + k for size, k, s, p in zip(sizes, kernel, stride, padding)]
    if output_size is None:
        return tuple(default)
    wanted = tuple(int(size) for size in tuple(output_size)[-2:])
    for axis, (size, usual, step) in enumerate(zip(wanted, default, stride, strict=True)):
        if not usual - step < size < usual + step:
            raise ValueError(
                f'max_unpool2d: invalid output_size "{tuple(output_size)}" (dim {axis} must be '
                f"between {usual - step} and {usual + step})"
            )
    return wanted
