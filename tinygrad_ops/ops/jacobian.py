"""The Jacobian kinds an op's `jacobian` rule returns, and the rules many ops share.

A scan scheduler (docs/scan.md sections 1 and 5) treats a chain tensor of shape
(*rows, d) as a stack of row vectors: the ops allowed on a chain never mix rows, so the
Jacobian of an op through a chain input is one d x d matrix per row. Gradients are row
vectors, `g_input = g_output J`, and J is kept in one of two forms:

- `Diagonal(values)`: an elementwise op; `values` broadcasts to the tensor's shape (a
  scalar for add/sub/neg: the identity or minus it).
- `Dense(matrix)`: (..., d_out, d_in), broadcasting over the rows; `x @ W` by a weight
  shared by every row is `Dense(W^T)`, one matrix for the whole batch.

An op that can sit on a chain says so with two methods (the defaults on `Op` say "walked,
not scanned"): `jacobian_kind(index)` on a recorded node, "diagonal", "dense" or None,
asked by the chain finder; and `jacobian(index)` on a *batched* node (its saved values
stacked over the steps on a leading axis, `output_shape` and `output_dtype` set), which
returns the Jacobian of every step in one call. `register_jacobian` sets both on a class
that cannot be edited.
"""

import numpy as np

from .base import Op


class Diagonal:
    """J = diag(values); `values` broadcasts to the chain tensor's shape."""

    kind = "diagonal"
    __slots__ = ("values",)

    def __init__(self, values):
        self.values = values

    def __repr__(self):
        return f"Diagonal{np.shape(self.values)}"


class Dense:
    """J as matrices (..., d_out, d_in) that broadcast over the rows of the chain tensor."""

    kind = "dense"
    __slots__ = ("matrix",)

    def __init__(self, matrix):
        self.matrix = matrix

    def __repr__(self):
        return f"Dense{np.shape(self.matrix)}"


IDENTITY = Diagonal(np.float64(1.0))
MINUS_IDENTITY = Diagonal(np.float64(-1.0))


def diagonal_kind(node, index):
    """`jacobian_kind` of an elementwise op: diagonal through every input."""
    return "diagonal"


def side_kind(node, index):
    """`jacobian_kind` of an op that reduces each step's values to a number (a loss at
    every step): "side", never on a chain (the finder refuses it there), but its backward
    runs on saved values stacked over the steps, the upstream gradient one number per
    step (shaped to broadcast over the leading axis)."""
    return "side"


def first_input_dense_kind(node, index):
    """`jacobian_kind` of an op that is row-wise (and dense) through its first input only
    (x @ W, linear, layer norm); the others (weights) are not on a chain."""
    return "dense" if index == 0 else None


def diagonal_from_vjp(node, index):
    """`jacobian` of any elementwise op: its (linear, diagonal) vjp applied to ones."""
    grads = node.backward(np.ones(node.output_shape, dtype=node.output_dtype))
    return Diagonal(grads[index])


def weight_matrix(matrix):
    """Dense(matrix) for a weight (d_out, d_in), or a stack of them (steps, d_out, d_in),
    broadcasting over the rows of the chain tensor."""
    # A C-ordered copy (a small weight): products with it then come out C-ordered too,
    # and the scan does not copy them again.
    matrix = np.ascontiguousarray(matrix)
    if matrix.ndim > 2:
        # Batch dims of the weight line up with the rows that precede the matrix row axis.
        matrix = np.expand_dims(matrix, -3)
    return Dense(matrix)


def has_rule(node):
    """Whether the op of `node` can sit in a scanned step: it has a Jacobian rule through
    one of its inputs at least (then its saved values can be stacked over the steps)."""
    if type(node).jacobian_kind is Op.jacobian_kind:
        return False
    return any(node.jacobian_kind(index) is not None for index in range(len(node.inputs)))


def chain_kind(node, index, output_shape):
    """The kind of the Jacobian of `node`'s output through input `index` when that input
    is on the chain: "diagonal", "dense", or None when the op is not row-wise through it
    (a diagonal Jacobian of a broadcast input would mix the rows' gradients)."""
    kind = node.jacobian_kind(index)
    if kind == "side":
        return None  # a per-step loss: beside a chain only
    if kind == "diagonal" and node.inputs[index].shape != output_shape:
        return None
    return kind


def register_jacobian(op_class, rule, elementwise=True):
    """Teach the scan schedulers the Jacobian of an op class that has none: `rule(node,
    index)` returns a `Diagonal` (`elementwise`) or a `Dense` (through input 0 only)."""
    op_class.jacobian = rule
    op_class.jacobian_kind = diagonal_kind if elementwise else first_input_dense_kind
    return rule
