"""Type promotion as in PyTorch: the dtype an op computes in, and so returns.

numpy and PyTorch agree within a category (bool < integer < floating: int8 with int32 is
int32, float16 with float32 is float32) and differ across them, where numpy widens to a
dtype that holds both (int64 with float32 is float64) and PyTorch keeps the floating one.
The rule here is PyTorch's `torch.result_type`:

1. Operands fall in three groups: arrays with dims, 0-d arrays, Python numbers.
2. Within a group dtypes promote as above; across categories the higher category's dtype
   wins (int32 with float16 is float16).
3. A later group matters only if it brings a higher category: a 0-d float64 does not widen
   a float32 tensor, nor a Python float a float16 one; a Python float makes an integer
   tensor float32 (the default float dtype), a Python int makes a bool tensor int64.
4. An op whose result is a float (division, exp, sigmoid, ...) makes an integer or bool
   result float32.

An op opts in with its `promotion` attribute (`promote`, `promote_float`); `Op.apply` then
passes the operands through it before `forward`, so every op promotes by this one rule.
A Tensor that requires grad is converted by a recorded cast (`Tensor.astype`), so the
gradient flows back in its own dtype and a create_graph backward still reaches it; arrays
are converted as they are; Python numbers stay Python numbers: once the arrays share the
result dtype, numpy's own rule for them (NEP 50: a Python number is "weak") agrees.
"""

import numpy as np

from . import base

DEFAULT_FLOAT = np.dtype(np.float32)
_PYTHON_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64), float: DEFAULT_FLOAT}
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}
FLOATS = frozenset(np.dtype(dtype) for dtype in (np.float16, np.float32, np.float64))


def _join(first, second):
    """The dtype of one group: numpy's promotion within a category, else the higher one's."""
    if first is None or first == second:
        return second
    first_category, second_category = _CATEGORY[first.kind], _CATEGORY[second.kind]
    if first_category == second_category:
        return np.promote_types(first, second)
    return first if first_category > second_category else second


def _combine(higher, lower):
    """A group's dtype, changed by a later group only where that brings a higher category."""
    if higher is None:
        return lower
    if lower is None or _CATEGORY[higher.kind] >= _CATEGORY[lower.kind]:
        return higher
    return lower


def result_dtype(values, to_float=False):
    """The dtype PyTorch gives an op over `values` (arrays and Python numbers; None skipped).

    >>> ints, halves = np.arange(3), np.ones(3, np.float16)
    >>> result_dtype([ints, 1.5]), result_dtype([ints, halves]), result_dtype([halves, 1.5])
    (dtype('float32'), dtype('float16'), dtype('float16'))
    >>> result_dtype([ints, ints], to_float=True), result_dtype([ints, np.float64(2.0)])
    (dtype('float32'), dtype('float64'))
    """
    dimensioned = zero_dim = number = None
    for value in values:
        if value is None:
            continue
        python_dtype = _PYTHON_DTYPES.get(type(value))
        if python_dtype is not None:
            number = _join(number, python_dtype)
        elif np.ndim(value):
            dimensioned = _join(dimensioned, value.dtype)
        else:
            zero_dim = _join(zero_dim, np.asarray(value).dtype)
    dtype = _combine(dimensioned, _combine(zero_dim, number))
    if to_float and dtype is not None and dtype.kind != "f":
        return DEFAULT_FLOAT
    return dtype


def promote(operands):
    """`operands` with every array and Tensor converted to their `result_dtype`.

    This runs before every arithmetic op, so the common case returns `operands` itself at
    once: two Tensors of one dtype, or a float Tensor and a Python number.

    >>> a, b = promote((np.arange(2), np.ones(2, np.float32)))
    >>> a.dtype, b.dtype
    (dtype('float32'), dtype('float32'))
    """
    if len(operands) == 2:
        first, second = operands
        first_type, second_type = type(first), type(second)
        tensor_type = base.Tensor
        if first_type is tensor_type:
            if second_type is tensor_type:
                if first._data.dtype is second._data.dtype:
                    return operands  # one dtype: nothing to promote
            elif (second_type is float or second_type is int) and first._data.dtype in FLOATS:
                return operands  # a Python number never widens a float tensor
        elif (
            second_type is tensor_type
            and (first_type is float or first_type is int)
            and second._data.dtype in FLOATS
        ):
            return operands
    return _promote(operands, False)


def promote_float(operands):
    """`promote` for ops whose result is a float (integer and bool inputs become float32).

    >>> (out,) = promote_float((np.arange(2),))
    >>> out.dtype
    dtype('float32')
    """
    for value in operands:
        if type(value) is base.Tensor:
            # A float Tensor, and nothing to promote: the result is that float dtype.
            if value._data.dtype in FLOATS and (
                len(operands) == 1 or promote(operands) is operands
            ):
                return operands
            break
    return _promote(operands, True)


def _promote(operands, to_float):
    arrays = [value._data if isinstance(value, base.Tensor) else value for value in operands]
    dtype = result_dtype(arrays, to_float)
    return tuple(_convert(value, dtype) for value in operands)


def promote_branches(operands):
    """`promote` for `where`: the condition stays as it is; x and y promote."""
    condition, *branches = operands
    branches = promote(branches)
    if all(type(value) in _PYTHON_DTYPES for value in branches):
        # two numbers (`where(mask, 1, 0.5)`): PyTorch's dtype of them (float32, not float64)
        dtype = result_dtype(branches)
        branches = [np.asarray(value, dtype=dtype) for value in branches]
    return (condition, *branches)


def _convert(value, dtype):
    if isinstance(value, base.Tensor):
        return value if value.dtype == dtype else value.astype(dtype)
    if isinstance(value, np.ndarray) and value.dtype != dtype:
        return value.astype(dtype)
    if isinstance(value, np.generic):
        return np.asarray(value, dtype=dtype)
    return value
