"""Fused replay kernels: the common ops' rules written straight into the replay's lines.

A generic kernel calls the op's `forward` and `backward` methods, which keep what
backward needs on the node (`save_for_backward`) and pay a few Python calls each for
that. For the ops of a typical training step, the replay can do better with the same
numbers: the forward writes one line of numpy, and the backward reads what it needs
from the forward's own slots (its inputs, its output) instead of from the node. The
lines are the ops' own formulas, numpy call for numpy call (see each op's docstring in
`ops/`), so the results stay bit for bit the eager ones; the walk's decisions taken at
capture (`Edge`) apply to them unchanged, because each expression makes a new array
exactly where the op's rule makes one.

A rule is a `Fused`: its forward statements and, for each input, the expression of its
gradient, in these names: `{0}`, `{1}`, ... the inputs' slots, `{out}` the output's,
`{g}` the output's gradient, and the parameters the rule's `parameters` adds. A node is
fused when its op has a rule here and `fits` holds for the shapes and dtypes at capture
(the guards keep them); then its forward and all its backward kernels are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..ops import dual
from ..ops.kernels import exp_of_shifted, row_starts, row_sum
from ..ops.losses import _UNSIGNED, drop_ignored
from .fused_optim import fuse_call
from .kernels import Backward, Call, ForgetGrad, Forward, Kernel, LeafWrite, _sends


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
    picked = shifted.reshape(-1).take(positions)
    exponentials = exp_of_shifted(shifted, out=shifted)
    total = row_sum(exponentials).reshape(count)
    losses = np.log(total)
    losses -= picked
    if kept is not None:
        losses[~kept] = 0.0
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


def _no_parameters(kernel, slots):
    return {}


class Fused(NamedTuple):
    forward: tuple  # statements
    gradients: dict  # input index -> expression
    fits: Callable = _always
    parameters: Callable = _no_parameters
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


def _cross_entropy_parameters(kernel, slots):
    options = {"ignore_index": -100, **kernel.options}
    return {"state": f"state{kernel.output}", **options}


def _sum_fits(kernel, slots):
    return kernel.options.get("axis") is None and slots[kernel.inputs[0]].dtype.kind == "f"


def _sum_parameters(kernel, slots):
    shape = slots[kernel.inputs[0]].shape
    options = {"keepdims": False, **kernel.options}
    return {"shape": repr(shape), "kept": repr((1,) * len(shape)), **options}


RULES = {
    # ops/elementwise.py and ops/unary.py: the same expressions as the rules there.
    "Add": Fused(("{out} = {0} + {1}",), {0: "{g}", 1: "{g}"}),
    "Sub": Fused(("{out} = {0} - {1}",), {0: "{g}", 1: "-{g}"}),
    "Mul": Fused(("{out} = {0} * {1}",), {0: "{g} * {1}", 1: "{g} * {0}"}),
    "Neg": Fused(("{out} = -{0}",), {0: "-{g}"}),
    "Tanh": Fused(("{out} = tanh({0})",), {0: "{g} * (1 - {out} * {out})"}),
    # Relu's mask, not(out <= 0) (a NaN passes its gradient, as in PyTorch), is made in
    # the backward from the output, as out != 0 (the same for out = max(a, 0), which is
    # never below 0): the forward is one call, the mask one. Into g when the replay owns it.
    "Relu": Fused(
        ("{out} = maximum({0}, 0)",),
        {0: "{g} * ({out} != 0)"},
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
        ("del {state}",),
    ),
    # ops/linalg.py Linear.compute and backward, for a 2-D input with a bias.
    "Linear": Fused(
        ("{out} = matmul({0}, {1}.T)", "{out} += {2}"),
        {0: "{g} @ {1}", 1: "{g}.T @ {0}", 2: "column_sum({g})"},
        _linear_fits,
    ),
}


def _names(forward, code, rule):
    """The template names: the forward kernel's input slots (positional, `{0}`), its
    output's and its rule's parameters (by name)."""
    inputs = [code.slot(slot) for slot in forward.inputs]
    names = {"out": code.slot(forward.output), **rule.parameters(forward, code.slots)}
    return inputs, names


class FusedForward(Kernel):
    """A fused op's forward: its rule's statements (see the module docstring)."""

    __slots__ = ("kernel", "rule")

    def __init__(self, kernel, rule):
        self.kernel = kernel  # the generic Forward it replaces (for its slots and listing)
        self.rule = rule
        self.frees = ()

    def emit(self, code, number):
        inputs, names = _names(self.kernel, code, self.rule)
        op = type(self.kernel.node).__name__
        for statement in self.rule.forward:
            line = statement.format(*inputs, **names)
            assignment = f"{names['out']} = "
            if code.slots[self.kernel.output].shape == () and line.startswith(assignment):
                # (a 0-d result may come back a numpy scalar: an array, as Op.apply makes it)
                line = f"{assignment}asarray({line[len(assignment) :]})"
            code.line(f"{line}  # {op} (fused)")

    def reads(self):
        return self.kernel.inputs

    def describe(self, name):
        return self.kernel.describe(name) + "   (fused)"


class FusedBackward(Kernel):
    """A fused op's backward: each input's gradient expression, sent along its edge."""

    __slots__ = ("kernel", "forward", "rule")

    def __init__(self, kernel, forward, rule):
        self.kernel = kernel  # the generic Backward it replaces
        self.forward = forward  # the op's Forward: the slots the expressions read
        self.rule = rule
        self.frees = ()

    def emit(self, code, number):
        inputs, names = _names(self.forward, code, self.rule)
        names["g"] = code.slot(self.kernel.grad)
        owned = code.consume(self.kernel.grad)
        for edge in self.kernel.edges:
            template = self.rule.gradients[edge.index]
            if owned and len(self.kernel.edges) == 1:
                template = self.rule.in_place.get(edge.index, template)
            expression = template.format(*inputs, **names)
            code.send(edge, expression, self.kernel.node)
        code.line(f"del {names['g']}  # {type(self.kernel.node).__name__}.backward (fused)")
        for statement in self.rule.after_backward:
            code.line(statement.format(*inputs, **names))

    def consumes(self):
        return (self.kernel.grad,)

    def reads(self):
        """The gradient and whichever of the forward's slots the expressions name."""
        used = [self.kernel.grad]
        for edge in self.kernel.edges:
            expression = self.rule.gradients[edge.index]
            used.extend(
                slot
                for position, slot in enumerate(self.forward.inputs)
                if "{" + str(position) + "}" in expression
            )
            if "{out}" in expression:
                used.append(self.forward.output)
        return tuple(dict.fromkeys(used))

    def describe(self, name):
        rule = f"{type(self.kernel.node).__name__}.backward({name(self.kernel.grad)})"
        return f"{_sends(self.kernel.edges, name)} <- {rule}   (fused)"


def fuse(kernels, slots, scanned=()) -> list:
    """The kernels with every node that has a fitting rule replaced by its fused kernels,
    and zero_grad() and plain SGD's step() by theirs (fused_optim.py)."""
    fused = {}  # id(node) -> (its FusedForward's Forward, rule)
    grads = {}  # id(leaf) -> the slot of the gradient this program wrote into it
    result = []
    for kernel in kernels:
        replacement = kernel
        if (
            isinstance(kernel, Forward)
            and not kernel.conversions
            and id(kernel.node) not in scanned
        ):
            rule = RULES.get(type(kernel.node).__name__)
            if rule is not None and rule.fits(kernel, slots):
                fused[id(kernel.node)] = (kernel, rule)
                replacement = FusedForward(kernel, rule)
        elif isinstance(kernel, Backward) and id(kernel.node) in fused:
            forward, rule = fused[id(kernel.node)]
            replacement = FusedBackward(kernel, forward, rule)
        elif isinstance(kernel, LeafWrite) and kernel.tensor is not None:
            grads[id(kernel.tensor)] = kernel.result
        elif isinstance(kernel, ForgetGrad):
            grads.pop(id(kernel.tensor), None)
        elif isinstance(kernel, Call):
            replacement = fuse_call(kernel, grads) or kernel
            grads.clear()  # (what a call did to the gradients, the lines do not know)
        result.append(replacement)
    return result
