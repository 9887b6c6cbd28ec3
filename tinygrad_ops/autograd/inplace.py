"""The in-place rule: how `x.add_(y)` (and `x += y`) writes into a tensor's own array.

Every in-place op bumps the tensor's version counter, so a node that saved the old values
refuses to backward through them. When recording, the tensor takes the op's node as its
own history; its old history moves to a 'shadow' tensor (sharing the array and the version
counter) that becomes the op's first input, as PyTorch rebases a tensor's grad_fn.
"""

from __future__ import annotations

import numpy as np

from ..mode import STATE, no_grad
from ..ops.base import bump_version, is_tensor, new_tensor, values_written


def apply_inplace(tensor, op_class, *operands, **options):
    """Apply `op_class` to `tensor` and `operands` and write the result into `tensor`'s array.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops.ops import Add
    >>> x = tg.Tensor([1.0, 2.0])
    >>> apply_inplace(x, Add, 1.0) is x, x.numpy()
    (True, array([2., 3.], dtype=float32))
    """
    recording = STATE.grad_enabled and (
        tensor._requires_grad
        or any(is_tensor(value) and value._requires_grad for value in operands)
    )
    if recording:
        _check_can_record(tensor, op_class)
        shadow = new_tensor(tensor.data, tensor._requires_grad, tensor._ctx)
        shadow._version = tensor._version
        if any(is_tensor(value) and value._requires_grad for value in operands):
            # The op saves the old values for the other operand's gradient (a in
            # d(a*b)/db), and the array is overwritten below: give it its own copy.
            shadow.data = tensor.data.copy()
            shadow._version = [0, -1]
        result = op_class.apply(shadow, *operands, **options)
    else:
        with no_grad():
            result = op_class.apply(tensor, *operands, **options)
    if result.shape != tensor.shape:
        raise ValueError(
            f"{op_class.__name__} in place: the result has shape {result.shape} but the "
            f"tensor has shape {tensor.shape}"
        )
    _check_can_cast(result.data.dtype, tensor.data.dtype, operands)
    np.copyto(tensor.data, result.data, casting="same_kind")
    bump_version(tensor)
    values_written(tensor, result)
    if recording:
        tensor._ctx = result._ctx
        tensor._requires_grad = True
    return tensor


def _check_can_record(tensor, op_class):
    if tensor._ctx is None and tensor._requires_grad:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. "
            f"({op_class.__name__} in place: the leaf's gradient would be wrong; use the "
            "out-of-place op, or wrap the update in tg.no_grad() as optimizers do)"
        )
    if tensor._ctx is not None and tensor._ctx.is_view and tensor.data.base is not None:
        # The new node would reach neither the viewed tensor's gradient nor, for a view of
        # a leaf, protect the leaf's data: refuse rather than give wrong gradients.
        raise RuntimeError(
            f"{op_class.__name__} in place: this tensor is a view (made by "
            f"{type(tensor._ctx).__name__}) of another tensor that requires grad; in-place "
            "ops on views are not supported. Use the out-of-place op, or copy the view"
        )


# PyTorch's names of the dtypes, for its in-place casting error.
_TORCH_NAMES = {
    "bool": "Bool",
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "float16": "Half",
    "float32": "Float",
    "float64": "Double",
}


def _check_can_cast(result_dtype, own_dtype, operands):
    """An in-place result is cast to the tensor's own dtype, within a kind (float64 into
    float32 is fine), never from float to integer or from integer to bool: PyTorch's rule.
    """
    if np.can_cast(result_dtype, own_dtype, casting="same_kind"):
        return
    result_name = _TORCH_NAMES.get(result_dtype.name, result_dtype.name)
    if result_dtype.kind == "f" and not any(
        getattr(value, "dtype", np.dtype(bool)).kind == "f" for value in operands
    ):
        result_name = "Float"  # only Python floats made it float: PyTorch's default dtype
    raise RuntimeError(
        f"result type {result_name} can't be cast to the desired output type "
        f"{_TORCH_NAMES.get(own_dtype.name, own_dtype.name)}"
    )
