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

from .fused_optim import fuse_call
from .kernels import Backward, Call, ForgetGrad, Forward, Kernel, LeafWrite, SetGrad, _sends
from .rules import RULES


def _names(forward, code, rule):
    """The template names: the forward kernel's input slots (positional, `{0}`), its
    output's and its rule's parameters (by name)."""
    inputs = [code.slot(slot) for slot in forward.inputs]
    names = {"out": code.slot(forward.output), **rule.parameters(forward, code)}
    return inputs, names


class FusedForward(Kernel):
    """A fused op's forward: its rule's statements (see rules.py). With `saving`, also the
    values the op's rule would save on the node, for a backward that stays the op's own
    (a generic Backward kernel, or a scan); `release` (set by the memory plan) drops
    them at once when no backward reads them."""

    __slots__ = ("kernel", "rule", "saving", "release")

    def __init__(self, kernel, rule, saving=False):
        self.kernel = kernel  # the generic Forward it replaces (for its slots and listing)
        self.rule = rule
        self.saving = saving
        self.release = False
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
        if self.saving and not self.release:
            saved = self.rule.saves(self.kernel).format(*inputs, **names)
            code.line(f"{code.bind(self.kernel.node, 'node')}.saved = {saved}")

    def reads(self):
        return self.kernel.inputs

    def writes(self):
        return self.kernel.writes()

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

    def writes(self):
        return self.kernel.writes()

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
    and zero_grad() and plain SGD's step() by theirs (fused_optim.py). The nodes in
    `scanned` (a scan reads their saved values from the node) get a saving forward."""
    fused = {}  # id(node) -> (its FusedForward's Forward, rule)
    grads = {}  # id(leaf) -> the slot of the gradient this program wrote into it
    result = []
    for kernel in kernels:
        replacement = kernel
        if isinstance(kernel, Forward) and not kernel.conversions:
            rule = RULES.get(type(kernel.node).__name__)
            if rule is not None and rule.fits(kernel, slots):
                # A scanned step's node, or an op whose backward stays its own: the fused
                # forward saves on the node what its rule would.
                saving = id(kernel.node) in scanned or rule.gradients is None
                if not saving:
                    fused[id(kernel.node)] = (kernel, rule)
                if not saving or rule.saves is not None:
                    replacement = FusedForward(kernel, rule, saving)
        elif isinstance(kernel, Backward) and id(kernel.node) in fused:
            forward, rule = fused[id(kernel.node)]
            replacement = FusedBackward(kernel, forward, rule)
        elif isinstance(kernel, LeafWrite) and kernel.tensor is not None:
            grads[id(kernel.tensor)] = kernel.result
        elif isinstance(kernel, SetGrad) and kernel.tensor is not None:
            grads[id(kernel.tensor)] = kernel.slot
        elif isinstance(kernel, (ForgetGrad, SetGrad)):
            grads.pop(id(kernel.tensor), None)
        elif isinstance(kernel, Call):
            replacement = fuse_call(kernel, grads) or kernel
            grads.clear()  # (what a call did to the gradients, the lines do not know)
        result.append(replacement)
    return result
