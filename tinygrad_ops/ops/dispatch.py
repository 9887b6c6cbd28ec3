"""The few functions a backward rule needs beyond operators, for arrays and Tensors alike.

Backward rules run on numpy arrays in a plain backward and on Tensors under
`create_graph=True` (see the autograd module docstring). Operators and methods such as
`.sum`, `.reshape` and `.swapaxes` exist on both; these helpers cover the rest.
"""

import math

import numpy as np

from .base import is_tensor as _is_tensor

# Below this many elements a broadcast gradient is materialised: np.broadcast_to costs
# about 2 us of Python, more than copying a small array (and the copy is then the walk's
# own, so a leaf can keep it). Larger arrays stay read-only views: no extra pass.
SMALL_BROADCAST = 4096


def where(condition, x, y):
    """`np.where` for arrays; the differentiable `tg.where` when `x` or `y` is a Tensor."""
    if _is_tensor(x) or _is_tensor(y):
        from .elementwise import Where

        return Where.apply(condition, x, y)
    return np.where(condition, x, y)


def log(x):
    return x.log() if _is_tensor(x) else np.log(x)


def broadcast_to(x, shape):
    if _is_tensor(x):
        return x.broadcast_to(shape)
    if math.prod(shape) <= SMALL_BROADCAST:
        out = np.empty(shape, dtype=x.dtype)
        out[...] = x
        return out
    return np.broadcast_to(x, shape)


def scatter_add(grad, index, shape, basic):
    """A zero array of `shape` with `grad` added at `index` (repeated indices add up)."""
    if _is_tensor(grad):
        from .shape import ScatterAdd

        return ScatterAdd.apply(grad, index=index, shape=shape, basic=basic)
    return scatter_add_array(grad, index, shape, basic)


def scatter_add_array(grad, index, shape, basic):
    out = np.zeros(shape, dtype=grad.dtype)
    if basic:
        out[index] = grad  # basic indexing never repeats an element
    else:
        np.add.at(out, index, grad)
    return out
