"""The helpers a backward rule needs beyond operators, for a numpy array or a Tensor alike.

Backward rules run on numpy arrays in a plain backward and on Tensors under
`create_graph=True` (see `ops/base.py`). Operators and methods such as `.sum`, `.reshape`
and `.swapaxes` exist on both; these helpers cover the rest (`log`, `exp`,
`broadcast_to`, `zeros_like`, `raw`, the float16 casts); the helpers that record an op
under create_graph sit beside that op (`elementwise.where` and `masked`, `shape.scatter_add`).

How the two kinds of backward work in the fused ops
    A plain backward receives numpy arrays. The rules then take a fast path: they reuse the
    intermediates saved in forward (the normalised input, 1/std, the softmax output) and
    write into arrays they own (`out=`, in-place updates), float32 end to end.
    Under `create_graph=True` the rule receives Tensors, and saved intermediates would be
    constants of the new graph, which is wrong for everything that depends on the input
    (x-hat and 1/std depend on x). So in that mode (`self.graph_mode` true) each rule
    evaluates the *same formula* with operations that numpy arrays and Tensors both
    support, recomputing those intermediates from the input Tensors (or reading the output
    Tensor, for softmax): the result is differentiable again (double backward,
    Hessian-vector products) at the cost of speed. Values that do not depend on any input
    (the dropout mask, one-hot targets, running statistics in eval mode) stay saved
    constants. `docs/derivations.md` ends with the same explanation.

float16
    softmax, log_softmax and the norms compute in float32 inside and return float16: the
    statistics (sums of exponentials, variances) overflow or lose all precision in half
    precision. float32 and float64 inputs are computed in their own dtype, never upcast.
"""

import math

import numpy as np

from .base import is_tensor as _is_tensor
from .checks import pure

# Below this many elements a broadcast gradient is materialised: np.broadcast_to costs
# about 2 us of Python, more than copying a small array (and the copy is then the walk's
# own, so a leaf can keep it). Larger arrays stay read-only views: no extra pass.
SMALL_BROADCAST = 4096


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


def zeros_like(value):
    """Zeros of `value`'s shape and dtype: the gradient of a step function (floor, sign, a
    rounded quotient), 0 also where the upstream gradient is NaN or inf, as PyTorch's
    (`g * 0.0` is NaN there). Under create_graph a constant: its own gradient is 0."""
    if _is_tensor(value):
        return value.new_zeros(value.shape)
    return np.zeros_like(value)


def raw(value):
    """The numpy array of a Tensor, or an array itself: for masks and other constants of a
    rule (a comparison's result has no gradient)."""
    return value.data if _is_tensor(value) else value


def sign(value):
    """`np.sign` for arrays, `Tensor.sign` for Tensors (its gradient is zero)."""
    return value.sign() if _is_tensor(value) else np.sign(value)


def exp(value):
    """`np.exp` for arrays, `Tensor.exp` for Tensors (a backward rule may get either)."""
    return value.exp() if _is_tensor(value) else np.exp(value)


def compute_dtype(dtype):
    """The dtype an op computes in: float32 for float16 inputs, else the input's own."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


@pure
def upcast(value):
    """float16 arrays or Tensors as float32; everything else unchanged."""
    if value is not None and value.dtype == np.float16:
        return value.astype(np.float32)
    return value


def like_inputs(node, grads):
    """`grads` cast to their inputs' dtypes, for the create_graph path: a plain backward's
    arrays are cast by the engine, but Tensors are not (float16 ops compute in float32)."""
    cast = []
    for grad, operand in zip(grads, node.inputs):
        dtype = getattr(operand, "dtype", None)
        if grad is not None and dtype is not None and grad.dtype != dtype:
            grad = grad.astype(dtype)
        cast.append(grad)
    return tuple(cast)
