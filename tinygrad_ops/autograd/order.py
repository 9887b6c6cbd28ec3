"""The order of a backward pass: which tensors need a gradient, parents before children."""

from __future__ import annotations

import operator

from ..ops.base import is_tensor


def as_recorded(operand, node):
    """The tensor `node` consumed as `operand`, with the history it had then.

    An in-place op on a tensor that requires grad gives that tensor a new node, created
    after every node that consumed it before; its old history moves to a 'shadow' tensor,
    the in-place node's first input. So a node whose input's history is younger than the
    node itself follows it back to that shadow: `y = x * 2; z = y * 3; y.mul_(5)` still
    sends z's gradient to x through `x * 2` alone, as in PyTorch.
    """
    history = operand._ctx
    while history is not None and history.sequence > node.sequence:
        operand = history.inputs[0]
        history = operand._ctx
    return operand


def recorded_inputs(node):
    """`node.inputs`, each Tensor as `node` consumed it (see `as_recorded`)."""
    return [
        as_recorded(operand, node) if is_tensor(operand) else operand for operand in node.inputs
    ]


_sequence_of = operator.attrgetter("_ctx.sequence")


def topological_order(roots, wanted=None):
    """Tensors that require grad reachable from `roots`, parents before children.

    An iterative search collects the tensors (no recursion limit); sorting the non-leaves
    by their node's creation number orders them, since a node is always created after
    the nodes of its inputs. Leaves come first. With `wanted` (a set of ids), only tensors
    on a path to a wanted tensor are kept: the rest need no gradient.
    """
    seen = set()
    leaves = []
    interior = []
    stack = []
    for root in roots:
        if id(root) not in seen:
            seen.add(id(root))
            stack.append(root)
    while stack:
        tensor = stack.pop()
        node = tensor._ctx
        if node is None:
            leaves.append(tensor)
            continue
        interior.append(tensor)
        for operand, needs in zip(recorded_inputs(node), node.needs_input_grad):
            if needs and id(operand) not in seen:
                seen.add(id(operand))
                stack.append(operand)
    interior.sort(key=_sequence_of)
    order = leaves + interior
    if wanted is None:
        return order
    reaching = set()
    kept = []
    for tensor in order:
        node = tensor._ctx
        key = id(tensor)
        if key in wanted or (
            node is not None
            and any(
                needs and id(operand) in reaching
                for operand, needs in zip(recorded_inputs(node), node.needs_input_grad)
            )
        ):
            reaching.add(key)
            kept.append(tensor)
    return kept
