"""The algebra of the structured Jacobians on a chain (docs/scan.md section 5).

The kinds (`Diagonal`, `Dense`) and the rules themselves live with the ops
(`ops/jacobian.py`, each op's `jacobian_kind` and `jacobian`); here they are composed
over a step's ops (`compose`, in reverse, and `add` where two paths meet: the residual
I + J of h + f(h)) and made into the stacked arrays a scan combines (`stacked`). A
composition stays structured and becomes dense only when a dense factor is involved.
"""

import numpy as np

# (chain_kind, has_rule and register_jacobian, statements about an op's rule, are in
# ops/jacobian.py; the finder, auto and the tests of registering still reach them here)
from ..ops.jacobian import Dense, Diagonal, chain_kind, has_rule, register_jacobian  # noqa: F401


def compose(first, second):
    """The Jacobian of applying `first` then `second` to a gradient row: J1 J2."""
    if isinstance(first, Diagonal):
        if isinstance(second, Diagonal):
            return Diagonal(first.values * second.values)
        if np.ndim(first.values) == 0:
            return Dense(first.values * second.matrix)
        return Dense(_scaled_rows(np.expand_dims(first.values, -1), second.matrix))
    if isinstance(second, Diagonal):
        if np.ndim(second.values) == 0:
            return Dense(first.matrix * second.values)
        return Dense(first.matrix * np.expand_dims(second.values, -2))
    return Dense(np.matmul(first.matrix, second.matrix))


def _scaled_rows(column, matrix):
    """column * matrix (row i of each matrix times column[i]: diag(d) A), as one new
    array: the column broadcast into it, then multiplied in place. The same products,
    about twice as fast as `column * matrix` for a stack of small matrices (whose
    broadcast loop runs over rows of d elements; here the multiply runs over whole
    matrices)."""
    shape = np.broadcast_shapes(column.shape, np.shape(matrix))
    result = np.empty(shape, dtype=np.result_type(column, matrix))
    result[...] = column
    result *= matrix
    return result


def add(first, second):
    """J1 + J2 (two paths through a step, e.g. the residual I + J of h + f(h))."""
    if isinstance(first, Diagonal) and isinstance(second, Diagonal):
        return Diagonal(first.values + second.values)
    if isinstance(first, Diagonal):
        first, second = second, first
    if isinstance(second, Dense):
        return Dense(first.matrix + second.matrix)
    # dense + diagonal (a residual step's I + J): the diagonal values added onto a copy of
    # the matrices (never into an op's own matrix: a weight's)
    matrix = first.matrix
    size = matrix.shape[-1]
    values = np.broadcast_to(second.values, np.broadcast_shapes(np.shape(second.values), (size,)))
    shape = np.broadcast_shapes(matrix.shape, values.shape[:-1] + (size, size))
    dtype = np.result_type(matrix, values)
    result = np.array(np.broadcast_to(matrix, shape), dtype=dtype, order="C")
    # The diagonal as a strided view (every size + 1-th value of each flattened matrix):
    # an in-place add there, where indexing by arange pairs copies it out and back (2x).
    diagonal = result.reshape(shape[:-2] + (size * size,))[..., :: size + 1]
    diagonal += values
    return Dense(result)


def stacked(jacobian, kind, state_shape, count, dtype):
    """The Jacobians of `count` steps stacked as a scan combines them, for a chain tensor of
    `state_shape`: diagonals (count, *state_shape) on a "diagonal" chain, else dense
    matrices (count, *state_shape, d)."""
    shape = (count,) + tuple(state_shape)
    if kind == "diagonal":
        return np.ascontiguousarray(np.broadcast_to(jacobian.values, shape), dtype=dtype)
    if isinstance(jacobian, Diagonal):  # (diag(v) as a matrix: v times the rows of I)
        jacobian = compose(jacobian, Dense(np.eye(state_shape[-1], dtype=dtype)))
    shape += (state_shape[-1],)
    return np.ascontiguousarray(np.broadcast_to(jacobian.matrix, shape), dtype=dtype)
