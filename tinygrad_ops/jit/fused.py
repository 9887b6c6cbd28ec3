"""Fused replay kernels: an op's forward and backward inlined into the replay's lines.

A generic kernel calls the op's `forward` and `backward` methods. A node whose op's
methods can be inlined (inline.py: most ops; the one statement of each rule is the op's
own method) is replayed instead by their bodies, written into the generated function:
the forward's saved values pass to the backward in a local of the program, not through
the node, and no call is made. The walk's decisions taken at capture (`Edge`) apply to
the results unchanged: the statements are the rule's own, so each makes a new array
exactly where the rule does.
"""

from __future__ import annotations

from .fused_optim import fuse_call
from .inline import rule_of, write
from .kernels import Backward, Call, ForgetGrad, Forward, Kernel, LeafWrite, SetGrad, _sends

FUSING = True  # False: every node replays by calling its op's methods (for the tests)


class FusedForward(Kernel):
    """An op's forward, inlined (its `compute` if it has one): the result into the
    output's slot, the saved values into `saved`, the program's local for the backward."""

    __slots__ = ("kernel", "body", "release")

    def __init__(self, kernel, body):
        self.kernel = kernel  # the generic Forward it replaces (for its slots and listing)
        self.body = body
        self.release = False  # (set by the memory plan: no backward reads the saved values)
        self.frees = ()

    def emit(self, code, number):
        kernel = self.kernel
        inputs = [code.slot(slot) for slot in kernel.inputs]
        for position, dtype in kernel.conversions:
            inputs[position] += f".astype({code.bind(dtype, 'dtype')})"
        arguments = dict(zip(self.body.parameters, inputs))
        for name in self.body.parameters[len(inputs) :]:
            value = kernel.options.get(name, self.body.defaults.get(name))
            arguments[name] = code.bind(value, "option")
        out = code.slot(kernel.output)
        node = code.bind(kernel.node, "node")
        op = type(kernel.node).__name__
        code.line(f"# {op}.forward (inlined)")
        needs = kernel.node.needs_input_grad
        names = write(
            code, self.body, f"f{number}", node, saved_name(kernel), out, arguments, needs
        )
        if code.slots[kernel.output].shape == ():  # a 0-d result may come back a numpy scalar
            code.line(f"{out} = asarray({out})")
        if self.release:
            names.append(saved_name(kernel))
        code.line(" = ".join([*names, "None"]))

    def reads(self):
        return self.kernel.inputs

    def writes(self):
        return self.kernel.writes()

    def describe(self, name):
        return self.kernel.describe(name) + "   (inlined)"


def saved_name(forward) -> str:
    """The program's local that holds a node's saved values between its two kernels."""
    return f"saved{forward.output}"


class FusedBackward(Kernel):
    """An op's backward, inlined: each input's gradient sent along its edge."""

    __slots__ = ("kernel", "forward", "body")

    def __init__(self, kernel, forward, body):
        self.kernel = kernel  # the generic Backward it replaces
        self.forward = forward  # the op's Forward (the saved values' local)
        self.body = body
        self.frees = ()

    def emit(self, code, number):
        kernel = self.kernel
        grad = code.slot(kernel.grad)
        code.consume(kernel.grad)
        node = code.bind(kernel.node, "node")
        code.line(f"# {type(kernel.node).__name__}.backward (inlined)")
        arguments = {self.body.parameters[0]: grad}
        saved = saved_name(self.forward)
        needs = kernel.node.needs_input_grad
        names = write(code, self.body, f"b{number}", node, saved, "r", arguments, needs)
        code.line(f"del {grad}")
        for edge in kernel.edges:
            code.send(edge, f"r[{edge.index}]", kernel.node)
        if kernel.release:
            names.append(saved)
        code.line(" = ".join([*names, "r", "None"]))

    def consumes(self):
        return (self.kernel.grad,)

    def writes(self):
        return self.kernel.writes()

    def reads(self):
        return (self.kernel.grad,)

    def describe(self, name):
        rule = f"{type(self.kernel.node).__name__}.backward({name(self.kernel.grad)})"
        return f"{_sends(self.kernel.edges, name)} <- {rule}   (inlined)"


def fuse(kernels, slots, scanned=()) -> list:
    """The kernels with every node whose op's methods can be inlined replaced by its
    inlined kernels (forward and backward both, or neither), and zero_grad() and the SGD
    and Adam steps by theirs (fused_optim.py). The nodes in `scanned` stay generic: a
    scan reads their saved values from the node."""
    backward_of = {}  # id(node) -> whether every backward kernel of the node is generic
    for kernel in kernels:
        if isinstance(kernel, Backward):
            backward_of[id(kernel.node)] = True
    fused = {}  # id(node) -> (its Forward, the backward's body)
    grads = {}  # id(leaf) -> the slot of the gradient this program wrote into it
    result = []
    for kernel in kernels:
        replacement = kernel
        if isinstance(kernel, Forward) and FUSING and id(kernel.node) not in scanned:
            forward = rule_of(kernel.node, "forward")
            backward = rule_of(kernel.node, "backward") if id(kernel.node) in backward_of else True
            if forward is not None and backward is not None:
                replacement = FusedForward(kernel, forward)
                fused[id(kernel.node)] = (kernel, backward)
        elif isinstance(kernel, Backward) and id(kernel.node) in fused:
            forward, body = fused[id(kernel.node)]
            replacement = FusedBackward(kernel, forward, body)
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
