"""Local Jacobians of the ops that can sit on a chain, kept structured (docs/scan.md section 5).

A chain tensor of shape (*rows, d) is treated as a stack of row vectors: the ops allowed
on a chain never mix rows, so its Jacobian is one d x d matrix per row. We write
gradients as row vectors, `g_input = g_output J`, and keep J in one of two forms:

- `Diagonal(values)`: an elementwise op; `values` broadcasts to the tensor's shape
  (a scalar for add/sub/neg: the identity or minus it).
- `Dense(matrix)`: (..., d_out, d_in), broadcasting over the rows; `x @ W` by a weight
  shared by every row is `Dense(W^T)`, one matrix for the whole batch.

Rules are keyed by op class (`JACOBIAN_RULES`) and read the same saved values as the
op's backward rule. They run on *batched* nodes: the saved values of many isomorphic
steps stacked on a leading axis, so one call builds the Jacobians of every step.
Composition (`compose`) and sums (`add`) stay structured and become dense only when a
dense factor is involved.
"""

import numpy as np

from ..ops import (
    Abs,
    Add,
    Clip,
    Div,
    Exp,
    Log,
    MatMul,
    Maximum,
    Mul,
    Neg,
    Pow,
    PowScalar,
    Relu,
    Sigmoid,
    Sqrt,
    Sub,
    Tanh,
    Where,
)


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


def compose(first, second):
    """The Jacobian of applying `first` then `second` to a gradient row: J1 J2."""
    if isinstance(first, Diagonal):
        if isinstance(second, Diagonal):
            return Diagonal(first.values * second.values)
        if np.ndim(first.values) == 0:
            return Dense(first.values * second.matrix)
        return Dense(np.expand_dims(first.values, -1) * second.matrix)
    if isinstance(second, Diagonal):
        if np.ndim(second.values) == 0:
            return Dense(first.matrix * second.values)
        return Dense(first.matrix * np.expand_dims(second.values, -2))
    return Dense(np.matmul(first.matrix, second.matrix))


def add(first, second):
    """J1 + J2 (two paths through a step, e.g. the residual I + J of h + f(h))."""
    if first is None:
        return second
    if isinstance(first, Diagonal) and isinstance(second, Diagonal):
        return Diagonal(first.values + second.values)
    if isinstance(first, Diagonal):
        first, second = second, first
    if isinstance(second, Dense):
        return Dense(first.matrix + second.matrix)
    # dense + diagonal: add the diagonal values onto the matrix diagonal
    matrix = first.matrix
    size = matrix.shape[-1]
    values = np.broadcast_to(second.values, np.broadcast_shapes(np.shape(second.values), (size,)))
    shape = np.broadcast_shapes(matrix.shape, values.shape[:-1] + (size, size))
    result = np.array(np.broadcast_to(matrix, shape), dtype=np.result_type(matrix, values))
    diagonal = np.arange(size)
    result[..., diagonal, diagonal] += values
    return Dense(result)


def as_dense(jacobian, state_shape, count, dtype):
    """Stacked dense matrices (count, *rows, d, d) for a chain tensor of `state_shape`."""
    size = state_shape[-1]
    if isinstance(jacobian, Dense):
        matrix = jacobian.matrix
    else:
        values = np.broadcast_to(jacobian.values, (count,) + tuple(state_shape))
        matrix = np.zeros((count,) + tuple(state_shape) + (size,), dtype=dtype)
        diagonal = np.arange(size)
        matrix[..., diagonal, diagonal] = values
    return np.ascontiguousarray(
        np.broadcast_to(matrix, (count,) + tuple(state_shape) + (size,)), dtype=dtype
    )


def as_diagonal(jacobian, state_shape, count, dtype):
    """Stacked diagonals (count, *state_shape) of a Diagonal Jacobian."""
    return np.ascontiguousarray(
        np.broadcast_to(jacobian.values, (count,) + tuple(state_shape)), dtype=dtype
    )


# ----------------------------------------------------------------------------------------------
# Rules: rule(node, index) -> Jacobian of the node's output with respect to input `index`,
# or None when the op cannot sit on a chain through that input.


def _elementwise_from_vjp(node, index):
    """The diagonal of any elementwise op: its (linear, diagonal) vjp applied to ones."""
    grads = node.backward(np.ones(node.output_shape, dtype=node.output_dtype))
    return Diagonal(grads[index])


def _unit(node, index):
    return IDENTITY


def _sub(node, index):
    return IDENTITY if index == 0 else Diagonal(np.float64(-1.0))


def _neg(node, index):
    return Diagonal(np.float64(-1.0))


def _mul(node, index):
    a, b = node.saved_tensors
    return Diagonal(b if index == 0 else a)


def _saved_output_rule(derivative):
    def rule(node, index):
        (out,) = node.saved_tensors
        return Diagonal(derivative(out))

    return rule


def _matmul(node, index):
    """x @ W through x: g_x = g W^T, the same matrix for every row (Dense(W^T))."""
    if index != 0:
        return None  # W @ x mixes the rows of x: not a row-wise chain
    _, b = node.saved_tensors
    if np.ndim(b) < 2:
        return None
    # A C-ordered copy (a small weight): products with it then come out C-ordered too,
    # and the scan does not copy them again.
    matrix = np.ascontiguousarray(np.swapaxes(b, -1, -2))
    if matrix.ndim > 2:
        # Batch dims of b line up with the rows of x that precede the matrix row axis.
        matrix = np.expand_dims(matrix, -3)
    return Dense(matrix)


JACOBIAN_RULES = {
    Add: _unit,
    Sub: _sub,
    Neg: _neg,
    Mul: _mul,
    Tanh: _saved_output_rule(lambda out: 1 - out * out),
    Sigmoid: _saved_output_rule(lambda out: out * (1 - out)),
    Exp: _saved_output_rule(lambda out: out),
    Relu: _elementwise_from_vjp,
    Div: _elementwise_from_vjp,
    Log: _elementwise_from_vjp,
    Sqrt: _elementwise_from_vjp,
    Abs: _elementwise_from_vjp,
    PowScalar: _elementwise_from_vjp,
    Pow: _elementwise_from_vjp,
    Maximum: _elementwise_from_vjp,
    Where: _elementwise_from_vjp,
    Clip: _elementwise_from_vjp,
    MatMul: _matmul,
}
"""Op class -> rule(batched node, input index) -> Diagonal | Dense | None."""

ELEMENTWISE = frozenset(JACOBIAN_RULES) - {MatMul}
"""Ops whose Jacobian is diagonal: the chain input must have the output's shape."""


def _matmul_kind(node, index, output_shape):
    """x @ W is row-wise through x (one dense matrix, W^T); W @ x mixes the rows of x."""
    return "dense" if index == 0 else None


def _matmul_batchable(node):
    """A matmul whose operands are both matrices (or stacks): stacking its steps keeps
    the meaning of every axis (a vector operand would not)."""
    return np.ndim(node.inputs[0]) >= 2 and np.ndim(node.inputs[1]) >= 2


_KINDS = {MatMul: _matmul_kind}
_BATCHABLE = {MatMul: _matmul_batchable}


def has_rule(node):
    """Whether the op of `node` can sit in a scanned step (it has a Jacobian rule and its
    saved values can be stacked over the steps)."""
    op_class = type(node)
    if op_class not in JACOBIAN_RULES:
        return False
    batchable = _BATCHABLE.get(op_class)
    return batchable is None or batchable(node)


def chain_kind(node, index, output_shape):
    """The kind of the Jacobian of `node`'s output with respect to input `index` when that
    input is on the chain: "diagonal", "dense", or None when the op is not row-wise
    through it (an elementwise op whose input is broadcast mixes the rows' gradients)."""
    kind = _KINDS.get(type(node))
    if kind is not None:
        return kind(node, index, output_shape)
    if type(node) in ELEMENTWISE:
        return "diagonal" if node.inputs[index].shape == output_shape else None
    return None


def is_diagonal(op_class):
    """Whether the op's Jacobian through a chain input is diagonal (elementwise)."""
    return op_class in ELEMENTWISE


def rule_for(op_class):
    """rule(batched node, input index) -> Diagonal | Dense for an op with a rule."""
    return JACOBIAN_RULES[op_class]


def register_jacobian(op_class, rule, elementwise=True):
    """Teach the scan schedulers the Jacobian of a new op (`rule(node, index)`)."""
    global ELEMENTWISE
    JACOBIAN_RULES[op_class] = rule
    if elementwise:
        ELEMENTWISE = ELEMENTWISE | {op_class}
    return rule
