"""`adaptive_max_pool2d`: the maximum over each of output_size bins covering the plane, as
PyTorch's (the bins adaptive_avg_pool2d uses). Composed: the position of each bin's first
maximum is found in numpy, then gathered from the flattened plane, so the gradient goes to
that one element, as PyTorch's (not shared among ties).
"""

import numpy as np

from .base import new_tensor, values_read
from .pool import _bins, _float_tensor, _output_size
from .windows import with_batch


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """out[n, c, i, j] = the max over bin (i, j) (bin i of n over a length L spans
    [floor(i L / n), ceil((i + 1) L / n))), as torch.nn.functional.adaptive_max_pool2d;
    with return_indices also each max's position h W + w in its plane. NaN wins.

    >>> import tinygrad_ops as tg
    >>> adaptive_max_pool2d(tg.Tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    name = "adaptive_max_pool2d"
    x, unbatched = with_batch(_float_tensor(input, name), 2, name)
    batch, channels, height, width = x.shape
    out_height, out_width = _output_size(output_size, (height, width), name)
    values_read(x, f"{name}: where each maximum is")
    index = np.empty((batch, channels, out_height, out_width), dtype=np.int64)
    for row, (top, bottom) in enumerate(_bins(out_height, height)):
        for column, (left, right) in enumerate(_bins(out_width, width)):
            window = x.data[:, :, top:bottom, left:right].reshape(batch, channels, -1)
            filled = np.where(np.isnan(window), np.inf, window)  # (a NaN is the maximum)
            first = np.argmax(filled, axis=2)  # (the first maximum, in row-major order)
            span = right - left
            index[:, :, row, column] = (top + first // span) * width + left + first % span
    flat = x.reshape((batch, channels, height * width))
    out = flat.gather(2, index.reshape(batch, channels, -1))
    out = out.reshape((batch, channels, out_height, out_width))
    if unbatched:
        out, index = out.reshape(out.shape[1:]), index.reshape(index.shape[1:])
    if not return_indices:
        return out
    return out, new_tensor(index)
