"""Argument checks of the fused ops: each raises a clear error naming the op and the argument.

The error classes are those a PyTorch `except` clause catches, where PyTorch raises: an axis
out of range is an IndexError, a shape or an argument an op cannot take a RuntimeError, a mode
it does not have a NotImplementedError. Each also subclasses the class numpy raises there
(ValueError, TypeError), so that `except ValueError` keeps catching what it caught.

>>> import tinygrad_ops as tg
>>> try:
...     tg.ones(2, 3) @ tg.ones(2, 3)
... except RuntimeError as error:
...     print(type(error).__name__, error)
ShapeError matmul: shapes (2, 3) and (2, 3) are not aligned (3 != 2)
"""

import numpy as np


def pure(function):
    """Mark `function` as pure: its result depends on its arguments alone (numbers,
    strings, tuples; of an array, its shape and dtype only), never on an array's values or
    on any state: an index normalised against a shape, the axes of a reduction, a check of
    shapes and dtypes. A helper that returns an array may be pure too when shapes and
    dtypes alone decide whether that array is one it was given, as it is (`as_matrix`: a
    2-D array itself, else a reshape). tg.compile calls such a helper once, when it writes
    the replay, wherever its arguments are what the capture fixed (an array then stands
    for itself by an array of its shape and dtype), and replays the result: a check that
    passed is not made again, a helper that handed back its argument is that argument.
    Eager calls it as any function.

    >>> @pure
    ... def rows(shape):
    ...     return shape[0]
    >>> rows.pure, rows((3, 4))
    (True, 3)
    """
    function.pure = True
    return function


class AxisError(IndexError, ValueError):
    """An axis (a dim) out of range for the tensor: PyTorch's IndexError."""


class ArgumentError(RuntimeError, ValueError):
    """An argument the op cannot take (a size, a step, a rounding mode): PyTorch's
    RuntimeError."""


class ShapeError(ArgumentError):
    """Shapes that do not fit together (matmul, reshape, broadcasting, conv): PyTorch's
    RuntimeError."""


class DtypeError(RuntimeError, TypeError):
    """A tensor of a dtype the op cannot take (float indices, mixed dtypes in scatter):
    PyTorch's RuntimeError."""


class UnsupportedError(NotImplementedError, ValueError):
    """A mode or a form the op does not have (pad's mode='typo'): PyTorch's
    NotImplementedError."""


@pure
def check_float(op_name, array, what="input"):
    if not isinstance(array, np.ndarray) or array.dtype.kind != "f":
        dtype = getattr(array, "dtype", type(array).__name__)
        raise TypeError(f"{op_name}: the {what} must be a floating-point tensor, got {dtype}")


@pure
def normalize_axis(axis, ndim, op_name, what="axis"):
    """`axis` (negatives counted from the end) as a non-negative int, checked against `ndim`.

    A bool is refused (True would silently mean axis 1); a 0-d tensor takes 0 and -1, as in
    numpy and PyTorch.

    >>> normalize_axis(-1, 3, "softmax")
    2
    """
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"{op_name}: {what} must be an int, got {axis!r}")
    bound = max(ndim, 1)
    if not -bound <= axis < bound:
        raise AxisError(
            f"{op_name}: {what} {axis} is out of range for a {ndim}-d tensor "
            f"(expected {-bound} to {bound - 1})"
        )
    return int(axis) % bound


@pure
def check_affine(op_name, name, parameter, expected_shape, x):
    if parameter is None:
        return
    check_float(op_name, parameter, name)
    if parameter.shape != tuple(expected_shape):
        raise ShapeError(
            f"{op_name}: {name} has shape {parameter.shape}, expected {tuple(expected_shape)}"
        )
    if parameter.dtype != x.dtype:
        raise TypeError(
            f"{op_name}: {name} has dtype {parameter.dtype} but the input has dtype {x.dtype}; "
            "convert one of them (mixing dtypes would silently change the output's dtype)"
        )


@pure
def check_normalized_shape(op_name, x, normalized_shape):
    normalized_shape = tuple(int(size) for size in normalized_shape)
    k = len(normalized_shape)
    if k == 0 or x.ndim < k or x.shape[x.ndim - k :] != normalized_shape:
        raise ShapeError(
            f"{op_name}: normalized_shape={normalized_shape} must be the last "
            f"{k} dims of the input, but the input has shape {x.shape}"
        )
    return normalized_shape


def reduction_arguments(op_name, axis, keepdims, dim=None, keepdim=None):
    """(axis, keepdims) from numpy's names or PyTorch's aliases `dim` and `keepdim`.

    >>> reduction_arguments("sum", None, False, dim=1, keepdim=True)
    (1, True)
    """
    if dim is not None:
        if axis is not None:
            raise TypeError(f"{op_name}: got both axis={axis!r} and dim={dim!r}; pass one")
        axis = dim
    if keepdim is not None:
        if keepdims:
            raise TypeError(f"{op_name}: got both keepdims and keepdim; pass one")
        keepdims = keepdim
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"{op_name}: keepdims must be True or False, got {keepdims!r}")
    return axis, bool(keepdims)


def ddof_argument(op_name, ddof, correction, unbiased=None):
    """The divisor's correction from numpy's `ddof`, PyTorch's `correction`, or PyTorch's
    older `unbiased` (True is 1, False is 0); at most one of them. None given: PyTorch's
    default, 1.

    >>> ddof_argument("var", None, correction=0), ddof_argument("var", None, None)
    (0, 1)
    """
    given = {
        name: value
        for name, value in (("ddof", ddof), ("correction", correction), ("unbiased", unbiased))
        if value is not None
    }
    if len(given) > 1:
        listed = " and ".join(f"{name}={value!r}" for name, value in given.items())
        raise TypeError(f"{op_name}: got both {listed}; pass one")
    if unbiased is not None:
        if not isinstance(unbiased, (bool, np.bool_)):
            raise TypeError(f"{op_name}: unbiased must be True or False, got {unbiased!r}")
        return int(unbiased)
    ddof = next(iter(given.values()), 1)
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, float, np.number)):
        raise TypeError(f"{op_name}: ddof (correction) must be a number, got {ddof!r}")
    return ddof


def varargs_shape(sizes):
    """A shape given as `f(2, 3)` or as `f((2, 3))` (PyTorch takes both): the tuple of sizes."""
    return tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes


def checked_shape(shape, op_name):
    """`shape` as a tuple of non-negative ints, or an error naming the op and the size
    (numpy's own says "negative dimensions are not allowed" without saying where).

    >>> checked_shape((2, 3), "zeros"), checked_shape(4, "zeros")
    ((2, 3), (4,))
    """
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for size in shape:
        if not isinstance(size, (int, np.integer)) or isinstance(size, (bool, np.bool_)):
            raise TypeError(f"{op_name}: sizes must be ints, got {size!r} in shape {shape}")
        if size < 0:
            raise ArgumentError(f"{op_name}: negative size {size} in shape {shape}")
    return tuple(int(size) for size in shape)


def check_number(op_name, value, what="value"):
    """A fill value must be a Python or numpy number (a bool counts), or a TypeError naming
    the op and the argument.

    >>> check_number("fill_", "one")
    Traceback (most recent call last):
    TypeError: fill_: value must be a number, got str
    """
    if not isinstance(value, (bool, int, float, np.bool_, np.number)):
        raise TypeError(f"{op_name}: {what} must be a number, got {type(value).__name__}")
