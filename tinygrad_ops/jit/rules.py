"""The fused rules: for each common op, its forward and backward as lines of numpy.

Each `Fused` gives an op's forward statements and, for each input, the expression of
its gradient, in these names: `{0}`, `{1}`, ... the inputs' slots, `{out}` the output's,
`{g}` the output's gradient, and the parameters the rule's `parameters` adds. The lines
are the ops' own formulas, numpy call for numpy call (see each op's docstring in
`ops/`), so a replay stays bit for bit the eager step. `saves` says what the op's rule
keeps on the node (`save_for_backward`), for the nodes whose backward stays the op's
own (a scanned chain's steps, or an op without gradient expressions here).
`fused.py` applies them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..ops import dual
from ..ops.kernels import row_starts
from ..ops.losses import _UNSIGNED, drop_ignored, softmax_losses


def cross_entropy_forward(logits, target, reduction, ignore_index):
    """`CrossEntropy.compute` (ops/losses.py) for (N, C) float32 or float64 logits with
    0 < C < 512 (where its `RowBuffers` changes nothing) and a mean or a sum: the same numpy
    calls in the same order, without the general path's reshapes. Returns the loss and
    what the backward reads."""
    count, classes = logits.shape
    # One reduction checks both bounds: viewed as unsigned, a negative index is huge.
    unsigned = target.view(_UNSIGNED.get(target.dtype, target.dtype))
    kept = None
    if count and np.maximum.reduce(unsigned) >= classes:
        kept, target = drop_ignored(target, classes, ignore_index)
    positions = row_starts(count, classes) + target.astype(np.intp, copy=False)
    shifted = np.subtract(logits, np.maximum.reduce(logits, axis=1, keepdims=True))
    exponentials, total, losses = softmax_losses(shifted, positions, kept)
    divisor = 1
    if reduction == "sum":
        loss = np.add.reduce(losses)
    else:
        divisor = count if kept is None else int(np.count_nonzero(kept))
        loss = np.add.reduce(losses) / divisor if divisor else np.full((), np.nan, losses.dtype)
    state = (exponentials, total.reshape(count, 1), positions, kept, divisor)
    return np.asarray(loss), state


def cross_entropy_backward(grad_output, reduction, state):
    """`CrossEntropy.backward` for what `cross_entropy_forward` returned."""
    exponentials, total, positions, kept, divisor = state
    scale = grad_output if reduction == "sum" else grad_output * (1.0 / max(divisor, 1))
    grad = np.multiply(exponentials, scale / total)  # softmax times the scale
    grad.reshape(-1)[positions] -= scale.reshape(-1) if scale.ndim else scale
    if kept is not None:
        grad[~kept] = 0.0  # an ignored sample's row: no gradient at all
    return grad


NAMESPACE = {
    "cross_entropy_forward": cross_entropy_forward,
    "cross_entropy_backward": cross_entropy_backward,
    "tanh": np.tanh,
    "maximum": np.maximum,
    "multiply": np.multiply,
    "matmul": np.matmul,
    "sum_reduce": np.add.reduce,
    "broadcast_to": dual.broadcast_to,
}


def _always(kernel, slots):
    return True


def _no_parameters(kernel, code):
    return {}


def _saves_nothing(kernel):
    return "()"


class Fused(NamedTuple):
    forward: tuple  # statements
    gradients: dict | None  # input index -> expression (None: the op's own backward runs)
    fits: Callable = _always
    parameters: Callable = _no_parameters
    # kernel -> the tuple the op's rule saves, as an expression (None: cannot be said)
    saves: Callable | None = _saves_nothing
    after_backward: tuple = ()  # statements (deleting what only the backward read)
    # input index -> the gradient computed into {g}'s own array (out=), used when the
    # replay owns that array: the same numbers, one allocation fewer
    in_place: dict = {}  # noqa: RUF012 (a NamedTuple field's default, never mutated)


def _linear_fits(kernel, slots):
    # x as a matrix, and a bias: `Linear.compute` then is matmul and +=, its backward 3 products.
    x, _, bias = (slots[slot] for slot in kernel.inputs)
    return len(x.shape) == 2 and bias.shape is not None


def _cross_entropy_fits(kernel, slots):
    logits, target = (slots[slot] for slot in kernel.inputs)
    return (
        kernel.options.get("reduction") in ("mean", "sum")
        and len(logits.shape) == 2
        and 0 < logits.shape[1] < 512
        and logits.dtype in (np.float32, np.float64)
        and target.dtype is not None
        and target.dtype.kind in "iu"
    )


def _cross_entropy_parameters(kernel, code):
    options = {"ignore_index": -100, **kernel.options}
    return {"state": f"state{kernel.output}", **options}


def _sum_fits(kernel, slots):
    return kernel.options.get("axis") is None and slots[kernel.inputs[0]].dtype.kind == "f"


def _sum_parameters(kernel, code):
    shape = code.slots[kernel.inputs[0]].shape
    options = {"keepdims": False, **kernel.options}
    return {"shape": repr(shape), "kept": repr((1,) * len(shape)), **options}


def _saved_where_needed(kernel):
    """(a if b needs a gradient, b if a does): what Mul and Linear's forward save."""
    needs = kernel.node.needs_input_grad
    return f"({'{0}' if needs[1] else 'None'}, {'{1}' if needs[0] else 'None'})"


def _matmul_fits(kernel, slots):
    # Both operands matrices (or stacks of them): the rule's backward is its two products.
    return all(len(slots[slot].shape) >= 2 for slot in kernel.inputs)


def _getitem_fits(kernel, slots):
    # Basic indexing (ints, slices): the normalized index is a constant of the node.
    return kernel.node.basic


def _getitem_parameters(kernel, code):
    return {"index": code.bind(kernel.node.index, "index")}


RULES = {
    # ops/elementwise.py and ops/unary.py: the same expressions as the rules there.
    "Add": Fused(("{out} = {0} + {1}",), {0: "{g}", 1: "{g}"}),
    "Sub": Fused(("{out} = {0} - {1}",), {0: "{g}", 1: "-{g}"}),
    "Mul": Fused(
        ("{out} = {0} * {1}",),
        {0: "{g} * {1}", 1: "{g} * {0}"},
        saves=_saved_where_needed,
        in_place={0: "multiply({g}, {1}, out={g})", 1: "multiply({g}, {0}, out={g})"},
    ),
    "Neg": Fused(("{out} = -{0}",), {0: "-{g}"}),
    "Tanh": Fused(
        ("{out} = tanh({0})",),
        {0: "{g} * (1 - {out} * {out})"},
        saves=lambda kernel: "({out},)",
        in_place={0: "multiply({g}, 1 - {out} * {out}, out={g})"},
    ),
    # Relu's mask, out != 0 (a NaN passes its gradient, as in PyTorch), is made in the
    # backward from the output (the eager op makes it in its forward): the forward is one
    # call, the mask one. Into g when the replay owns it.
    "Relu": Fused(
        ("{out} = maximum({0}, 0)",),
        {0: "{g} * ({out} != 0)"},
        saves=None,
        in_place={0: "multiply({g}, {out} != 0, out={g})"},
    ),
    # ops/reduce.py Sum over all axes (a loss) of a float tensor.
    "Sum": Fused(
        ("{out} = sum_reduce({0}, axis=None, keepdims={keepdims})",),
        {0: "broadcast_to({g}.reshape({kept}), {shape})"},
        _sum_fits,
        _sum_parameters,
    ),
    # ops/losses.py CrossEntropy: two functions above (the loss is about ten numpy calls).
    "CrossEntropy": Fused(
        ("{out}, {state} = cross_entropy_forward({0}, {1}, {reduction!r}, {ignore_index})",),
        {0: "cross_entropy_backward({g}, {reduction!r}, {state})"},
        _cross_entropy_fits,
        _cross_entropy_parameters,
        None,
        ("del {state}",),
    ),
    # ops/linalg.py Linear.compute and backward, for a 2-D input with a bias.
    "Linear": Fused(
        ("{out} = matmul({0}, {1}.T)", "{out} += {2}"),
        {0: "{g} @ {1}", 1: "{g}.T @ {0}", 2: "column_sum({g})"},
        _linear_fits,
        saves=_saved_where_needed,
    ),
    # ops/linalg.py MatMul for matrices (a 1-D operand takes the general kernels).
    "MatMul": Fused(
        ("{out} = matmul({0}, {1})",),
        {0: "{g} @ {1}.swapaxes(-1, -2)", 1: "{0}.swapaxes(-1, -2) @ {g}"},
        _matmul_fits,
        saves=lambda kernel: "({0}, {1})",
    ),
    # ops/shape.py GetItem with a basic index (x[t]): its backward reads only the node's
    # index and input shape, which the capture set, so it stays the op's own.
    "GetItem": Fused(("{out} = {0}[{index}]",), None, _getitem_fits, _getitem_parameters),
}
