"""The functions of several tensors that `tinygrad_ops` exports beside `Tensor`: stack,
concatenate, where, maximum (each over one op, its operands coerced as the operators' are).
"""

import numpy as np

from .ops.base import as_operand, is_tensor, new_tensor
from .ops.elementwise import Maximum, Where
from .ops.shape import Concatenate, Stack


def constant(array):
    """A Tensor of a result that has no gradient (indices, masks), outside the tape."""
    return new_tensor(np.asarray(array))


def stack(tensors, axis=0):
    """Join tensors of the same shape along a new axis.

    >>> import tinygrad_ops as tg
    >>> tg.stack([tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0])]).shape
    (2, 2)
    """
    return Stack.apply(*(_as_tensor_operand(t) for t in tensors), axis=axis)


def concatenate(tensors, axis=0):
    """Join tensors along an existing axis.

    >>> import tinygrad_ops as tg
    >>> tg.concatenate([tg.Tensor([1.0]), tg.Tensor([2.0, 3.0])]).shape
    (3,)
    """
    return Concatenate.apply(*(_as_tensor_operand(t) for t in tensors), axis=axis)


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


def _as_tensor_operand(value):
    operand = as_operand(value)
    if operand is None:
        raise TypeError(f"expected a Tensor, array or number, got {type(value).__name__}")
    return operand
