"""The functions of several tensors that `tinygrad_ops` exports beside `Tensor`: stack,
concatenate (and PyTorch's `cat`), where, maximum, minimum (each over one op, its operands
coerced as the operators' are), and PyTorch's names for products: bmm, dot, outer.
"""

import numpy as np

from .ops.base import as_operand, is_tensor, new_tensor
from .ops.elementwise import Maximum, Minimum, Where
from .ops.shape import Concatenate, Stack


def constant(array):
    """A Tensor of a result that has no gradient (indices, masks), outside the tape."""
    return new_tensor(np.asarray(array))


def stack(tensors, axis=None, *, dim=None):
    """Join tensors of the same shape along a new axis (`axis`, or PyTorch's `dim`; 0).

    >>> import tinygrad_ops as tg
    >>> tg.stack([tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0])], dim=1).shape
    (2, 2)
    """
    axis = _axis_or_dim("stack", axis, dim)
    return Stack.apply(*(_as_tensor_operand(t) for t in tensors), axis=axis)


def concatenate(tensors, axis=None, *, dim=None):
    """Join tensors along an existing axis (`axis`, or PyTorch's `dim`; 0 by default).

    >>> import tinygrad_ops as tg
    >>> tg.concatenate([tg.Tensor([1.0]), tg.Tensor([2.0, 3.0])]).shape
    (3,)
    """
    axis = _axis_or_dim("concatenate", axis, dim)
    return Concatenate.apply(*(_as_tensor_operand(t) for t in tensors), axis=axis)


def cat(tensors, dim=0):
    """`concatenate` under PyTorch's name: `tg.cat([a, b], dim=1)`.

    >>> import tinygrad_ops as tg
    >>> tg.cat([tg.zeros((2, 1)), tg.ones((2, 2))], dim=1).shape
    (2, 3)
    """
    return concatenate(tensors, axis=dim)


def _axis_or_dim(op_name, axis, dim):
    if axis is not None and dim is not None:
        raise TypeError(f"{op_name}: pass axis or dim, not both")
    if axis is None:
        return 0 if dim is None else dim
    return axis


def where(condition, x, y):
    """Elements of `x` where `condition` holds, else of `y` (differentiable in x and y).

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([-1.0, 2.0])
    >>> tg.where(x > 0, x, 0.0).numpy()
    array([0., 2.], dtype=float32)
    """
    condition = condition.data if is_tensor(condition) else np.asarray(condition)
    return Where.apply(condition, _as_tensor_operand(x), _as_tensor_operand(y))


def maximum(a, b):
    """The elementwise maximum (ties share the gradient equally, as PyTorch).

    >>> import tinygrad_ops as tg
    >>> tg.maximum(tg.Tensor([1.0, 5.0]), tg.Tensor([3.0, 2.0])).numpy()
    array([3., 5.], dtype=float32)
    """
    return Maximum.apply(_as_tensor_operand(a), _as_tensor_operand(b))


def minimum(a, b):
    """The elementwise minimum (ties share the gradient equally, as PyTorch).

    >>> import tinygrad_ops as tg
    >>> tg.minimum(tg.Tensor([1.0, 5.0]), tg.Tensor([3.0, 2.0])).numpy()
    array([1., 2.], dtype=float32)
    """
    return Minimum.apply(_as_tensor_operand(a), _as_tensor_operand(b))


def bmm(input, mat2):
    """Batched matrix products (`input.bmm(mat2)`): both 3-D, one batch size, as PyTorch's.

    >>> import tinygrad_ops as tg
    >>> tg.bmm(tg.ones((2, 3, 4)), tg.ones((2, 4, 5))).shape
    (2, 3, 5)
    """
    return _as_tensor(input, "bmm").bmm(mat2)


def dot(input, other):
    """The dot product of two 1-D tensors (`input.dot(other)`), as PyTorch's.

    >>> import tinygrad_ops as tg
    >>> tg.dot(tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0])).item()
    11.0
    """
    return _as_tensor(input, "dot").dot(other)


def outer(input, vec2):
    """The outer product of two 1-D tensors (`input.outer(vec2)`).

    >>> import tinygrad_ops as tg
    >>> tg.outer(tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0, 5.0])).shape
    (2, 3)
    """
    return _as_tensor(input, "outer").outer(vec2)


def _as_tensor(value, op_name):
    operand = as_operand(value)  # (a Tensor as it is)
    if operand is None or isinstance(operand, (bool, int, float)):
        raise TypeError(f"{op_name}: expected a Tensor or an array, got {type(value).__name__}")
    return operand if is_tensor(operand) else new_tensor(np.asarray(operand))


def _as_tensor_operand(value):
    operand = as_operand(value)
    if operand is None:
        raise TypeError(f"expected a Tensor, array or number, got {type(value).__name__}")
    return operand
