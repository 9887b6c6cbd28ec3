"""numpy speed helpers for the fused ops (activations, norms, losses, linear).

They take numpy arrays (`column_sum` also a Tensor, for the create_graph path) and exist for
speed: a (rows, n) view of an array, row and column sums through BLAS, the ufunc buffer sized
to one row, small read-only vectors cached between calls. Each says what it saves, measured.
"""

import math

import numpy as np

from .checks import pure

_LOG2_E = 1.4426950408889634


# From this many elements exp_of_shifted's exp2 route is faster than np.exp (measured:
# 1.5 us against 0.6 us at 640 elements, 6 us against 7.8 us at 16,384).
_EXP2_FROM = 4096


def exp_of_shifted(values, out=None):
    """exp(values) for values <= 0 (logits minus their maximum), into `out` if given.

    float32 goes through exp(t) = 2^(t·log2 e): numpy's float32 exp2 runs about twice as
    fast as its exp. The extra rounding of t·log2 e costs a relative error of about
    |t|·1e-7, the same size as the rounding already in t = x - max(x) (so a probability
    near 1 is still exact to an ulp, and a tiny one to a few ulps). float64, and arrays
    below `_EXP2_FROM` elements, where the second call costs more than it saves, use exp.
    """
    if values.dtype != np.float32 or values.size < _EXP2_FROM:
        return np.exp(values, out=out)
    scaled = np.multiply(values, np.float32(_LOG2_E), out=out)
    return np.exp2(scaled, out=scaled)


_SIZED = range(512, 8192)  # the row lengths RowBuffers sizes the buffer for (default 8192)


class RowBuffers:
    """`np.errstate(**error_handling)` in which numpy's ufunc buffer is at most one row long.

    For rows of 512 to 8191 elements this makes the broadcast updates of the fused ops
    (per-row statistics such as `out -= mean`, per-column parameters such as `out *= w`)
    run about 1.5 times faster: with a buffer longer than a row, numpy's iterator copies
    the broadcast operand row after row into its buffer to make longer inner loops, an
    extra pass over the data; with a buffer of at most one row it runs each row directly.
    Measured on (256, 1024) float32: 52 us per update with the default buffer of 8192,
    33 us with 1024, the cost of a plain `a * b` of two full arrays. Reductions along rows
    (`np.maximum.reduce`) are a little slower with it, so they run before entering.
    The previous buffer size is restored on exit (numpy 2's errstate would restore it too,
    numpy 1's would not).
    """

    __slots__ = ("length", "state", "previous")

    def __init__(self, length, **error_handling):
        self.length = length
        # Nothing to set for short rows without error handling: then this costs ~0.3 us.
        self.state = np.errstate(**error_handling) if error_handling else None
        self.previous = None

    @staticmethod
    @pure
    def inert(length, **error_handling):
        """Whether entering changes nothing: no error handling and rows outside 512 to 8191
        (tg.compile then replays the block without the context)."""
        return not error_handling and length not in _SIZED

    def __enter__(self):
        if self.state is not None:
            self.state.__enter__()
        if self.length in _SIZED:
            self.previous = np.setbufsize(self.length - self.length % 16)  # a multiple of 16
        return self

    def __exit__(self, *exception):
        if self.previous is not None:
            np.setbufsize(self.previous)
        if self.state is not None:
            self.state.__exit__(*exception)


_VECTORS = {}  # (kind, *arguments) -> a read-only vector (see `_cached_vector`)


def _cached_vector(key, length, make):
    """`make()`, made read-only and kept for the next call with the same `key`: building
    a small vector costs a microsecond of Python per call, as much as the BLAS product it
    feeds for a small layer. Vectors longer than 65,536 are made afresh each time, and the
    cache is emptied when it holds 128 (a few shapes recur in a training loop)."""
    vector = _VECTORS.get(key)
    if vector is None:
        vector = make()
        if length <= 65536:
            if len(_VECTORS) >= 128:
                _VECTORS.clear()
            vector.flags.writeable = False
            _VECTORS[key] = vector
    return vector


def ones_vector(length, dtype):
    """A read-only vector of `length` ones, cached (see `_cached_vector`)."""
    return _cached_vector(("ones", length, dtype), length, lambda: np.ones(length, dtype=dtype))


def row_starts(rows, columns):
    """0, columns, 2·columns, ...: where each row of a flattened (rows, columns) array
    starts; read-only and cached (see `_cached_vector`)."""
    return _cached_vector(
        ("row starts", rows, columns), rows, lambda: np.arange(0, rows * columns, columns)
    )


def row_sum(matrix):
    """Sums of the rows of a C-contiguous 2-D array, shape (rows, 1).

    A matrix-vector product with a vector of ones runs in BLAS, about three times faster
    than `np.add.reduce` along the last axis for the (256, 1024) shapes of a small model.
    """
    rows, columns = matrix.shape
    if rows == 0 or columns == 0:
        return np.add.reduce(matrix, axis=1, keepdims=True)
    return np.matmul(matrix, ones_vector(columns, matrix.dtype)).reshape(rows, 1)


def column_sum(matrix):
    """Sums of the columns of a 2-D array, shape (columns,): a BLAS product with ones (as
    row_sum; twice as fast as `np.add.reduce` at (64, 128)) for C-contiguous float32 and
    float64, `np.add.reduce` otherwise, a recorded sum for a Tensor (create_graph)."""
    if type(matrix) is not np.ndarray:
        return matrix.sum(axis=0)
    rows, columns = matrix.shape
    if rows == 0 or columns == 0 or matrix.dtype == np.float16 or not matrix.flags.c_contiguous:
        return np.add.reduce(matrix, axis=0)
    return np.matmul(ones_vector(rows, matrix.dtype), matrix)


@pure
def as_matrix(array):
    """`array` as (rows, last dim): itself when it is 2-D already (no reshape call)."""
    return array if array.ndim == 2 else array.reshape((-1, array.shape[-1]))


_vecdot = getattr(np, "vecdot", None)  # numpy >= 2.0: twice as fast as einsum here


def row_dot(a, b):
    """sum_j a[i, j] * b[i, j] for every row i, shape (rows, 1), without a temporary."""
    if _vecdot is not None:
        return _vecdot(a, b).reshape(a.shape[0], 1)
    return np.einsum("ij,ij->i", a, b).reshape(a.shape[0], 1)


def column_dot(a, b):
    """sum_i a[i, j] * b[i, j] for every column j, shape (columns,), without a temporary."""
    return np.einsum("ij,ij->j", a, b)


def as_rows(array, axis):
    """`array` with `axis` moved last and the rest flattened: a C-contiguous (rows, n) array."""
    if array.ndim == 2 and axis == 1 and array.flags.c_contiguous:
        return array  # already rows: no calls
    if array.ndim and axis != array.ndim - 1:
        array = np.moveaxis(array, axis, -1)
    length = array.shape[-1] if array.ndim else 1
    return np.ascontiguousarray(array).reshape(math.prod(array.shape[:-1]), length)


def row_max(rows):
    """The maximum of each row, shape (rows, 1) (zeros for rows of length 0)."""
    if rows.shape[1] == 0:
        return np.zeros((rows.shape[0], 1), dtype=rows.dtype)
    return np.maximum.reduce(rows, axis=1, keepdims=True)


def trailing_rows(array, k):
    """`array` as a (rows, n) matrix, n the product of its last k dims (a view if possible)."""
    return array.reshape(math.prod(array.shape[: array.ndim - k]), math.prod(array.shape[-k:]))


@pure
def reshaped(array, shape):
    """`array` with `shape`; itself (not a view) when it has that shape already, so that the
    engine can treat a returned gradient as its own (no defensive copy for a leaf's .grad)."""
    return array if array.shape == shape else array.reshape(shape)


@pure
def from_rows(rows, shape, axis):
    """Undo `as_rows`: back to `shape` with the last axis moved to `axis` (C-contiguous).

    Returns `rows` itself when no reshape is needed (see `reshaped`).
    """
    last = len(shape) - 1
    if axis == last and rows.shape == shape:
        return rows
    moved = shape[:axis] + shape[axis + 1 :] + (shape[axis],) if shape else ()
    array = rows.reshape(moved)
    if shape and axis != last:
        array = np.ascontiguousarray(np.moveaxis(array, -1, axis))
    return array
