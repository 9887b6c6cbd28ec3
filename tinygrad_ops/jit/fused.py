"""Fused replay kernels: an op's forward and backward inlined into the replay's lines.

A generic kernel calls the op's `forward` and `backward` methods. A node whose op's
methods can be inlined (inline.py: most ops; the one statement of each rule is the op's
own method) is replayed instead by their bodies, written into the generated function:
the forward's saved values pass to the backward in names of the program, not through
the node, and no call is made. The walk's decisions taken at capture (`Edge`) apply to
the results unchanged: the statements are the rule's own, so each makes a new array
exactly where the rule does, but one: a backward's `g * x` is computed into g's own
array where the replay owns g and nothing else reads it (inline._into; the same values).
"""

from __future__ import annotations

import ast

import numpy as np

from .fused_optim import fuse_call
from .inline import binder, channel_names, prepare, rule_of, write
from .kernels import Backward, Call, ForgetGrad, Forward, Kernel, LeafWrite, SetGrad, _sends
from .specialise import Fact, array_fact, constant, frozen

FUSING = True  # False: every node replays by calling its op's methods (for the tests)


class FusedForward(Kernel):
    """An op's forward, inlined (its `compute` if it has one), specialised to what the
    capture fixed (specialise.py): the result into the output's slot, what the node keeps
    for its backward (`backward_body`, inlined by FusedBackward) into names of the program."""

    __slots__ = ("kernel", "body", "backward_body", "unstable", "shared", "release", "pair")

    def __init__(self, kernel, body, backward_body, unstable, shared=False):
        self.kernel = kernel  # the generic Forward it replaces (for its slots and listing)
        self.body = body
        self.backward_body = backward_body  # (None: the node has no backward kernel)
        self.unstable = unstable  # slots whose shapes the guards do not fix
        self.shared = shared  # other nodes hold this one (see inline.prepare)
        self.release = False  # (set by the memory plan: no backward reads the saved values)
        self.pair = None

    def prepare(self, code):
        """The forward's and the backward's statements, specialised once (inline.Pair)."""
        if self.pair is not None:
            return self.pair
        kernel = self.kernel
        converted = dict(kernel.conversions)
        facts, inputs = {}, []
        for name, slot in zip(self.body.parameters, kernel.inputs):
            fact = slot_fact(code, slot, self.unstable)
            if slot in converted.values() or kernel.inputs.index(slot) in converted:
                dtype = converted.get(kernel.inputs.index(slot))
                shape = None if fact is None else fact.shape
                fact = None if shape is None or dtype is None else array_fact(shape, dtype, True)
            inputs.append(fact)
            if fact is not None:
                facts[name] = fact
        for name in self.body.parameters[len(kernel.inputs) :]:
            value = kernel.options.get(name, self.body.defaults.get(name))
            if frozen(value):
                facts[name] = Fact(constant(value, binder(code)), value)
        grad = slot_fact(code, kernel.output, self.unstable)
        needs = kernel.node.needs_input_grad
        arguments = (self.body, self.backward_body, facts, grad, inputs, needs, binder(code))
        self.pair = prepare(code, *arguments, self.shared)
        return self.pair

    def emit(self, code, number):
        kernel = self.kernel
        pair = self.prepare(code)
        inputs = [code.slot(slot) for slot in kernel.inputs]
        for position, dtype in kernel.conversions:
            inputs[position] += f".astype({code.bind(dtype, 'dtype')})"
        arguments = dict(zip(self.body.parameters, inputs))
        for name in self.body.parameters[len(inputs) :]:
            value = kernel.options.get(name, self.body.defaults.get(name))
            arguments[name] = code.bind(value, "option")
        out = code.slot(kernel.output)
        node = code.bind(kernel.node, "node")
        code.line(f"# {type(kernel.node).__name__}.forward (inlined)")
        prefix = channel_prefix(kernel)
        names = write(code, self.body, pair.forward, f"f{number}", node, prefix, out, arguments)
        if code.slots[kernel.output].shape == ():  # a 0-d result may come back a numpy scalar
            code.line(f"{out} = asarray({out})")
        if self.release:
            names += channel_names(pair.channel, prefix)
        if names:
            code.line(" = ".join([*names, "None"]))

    def reads(self):
        return self.kernel.inputs

    def writes(self):
        return self.kernel.writes()

    def describe(self, name):
        return self.kernel.describe(name) + "   (inlined)"


def channel_prefix(forward) -> str:
    """The start of the program's names for what a node keeps between its two kernels."""
    return f"k{forward.output}_"


def slot_fact(code, slot, unstable):
    """What the guards fix of a slot's array (shape, dtype), or a constant's value."""
    info = code.slots[slot]
    name = code.slot(slot)
    if info.kind == "constant":
        value = code.namespace[name]
        if frozen(value):
            expression = ast.Name(name, ast.Load())
            expression.bound, expression.known = True, value
            return Fact(expression, value)
        if isinstance(value, np.ndarray):
            return array_fact(value.shape, value.dtype, False)
        return None
    if info.shape is None or slot in unstable:
        return None
    fact = array_fact(info.shape, info.dtype, info.kind != "input")
    if info.kind in ("input", "captured"):  # (one array all through the replay: its name)
        expression = ast.Name(name, ast.Load())
        expression.bound = True
        fact = fact._replace(expression=expression)
    return fact


class FusedBackward(Kernel):
    """An op's backward, inlined: each input's gradient sent along its edge."""

    __slots__ = ("kernel", "forward", "body")

    def __init__(self, kernel, forward, body):
        self.kernel = kernel  # the generic Backward it replaces
        self.forward = forward  # the node's FusedForward (what it kept, its names)
        self.body = body

    def emit(self, code, number):
        kernel = self.kernel
        pair = self.forward.prepare(code)
        grad = code.slot(kernel.grad)
        owned = code.consume(kernel.grad)
        node = code.bind(kernel.node, "node")
        code.line(f"# {type(kernel.node).__name__}.backward (inlined)")
        arguments = {self.body.parameters[0]: grad}
        prefix = channel_prefix(self.forward.kernel)
        output = code.slots[self.forward.kernel.output]
        stable = self.forward.kernel.output not in self.forward.unstable

        passed = set()  # the edge that g itself goes on to, read nowhere else

        def reuse(index, passed_on=False):  # (g's array is the replay's and fits this result)
            edge = next((edge for edge in kernel.edges if edge.index == index), None)
            fits = (
                owned
                and stable
                and edge is not None
                and not (edge.wrap or edge.cast or edge.reduce)
                and edge.shape == output.shape
                and edge.dtype == output.dtype
            )
            if fits and passed_on:
                passed.add(index)
            return fits

        reuse.live = {edge.index for edge in kernel.edges}

        names, elements = write(
            code, self.body, pair.backward, f"b{number}", node, prefix, None, arguments, reuse
        )
        for edge in kernel.edges:
            value = f"r[{edge.index}]" if elements is None else f"({elements[edge.index]})"
            if edge.index in passed:  # (the replay's own array, on to its one reader)
                edge = edge._replace(owned=True)
            code.send(edge, value, kernel.node)
        code.line(f"del {grad}")
        if kernel.release:
            names += channel_names(pair.channel, prefix)
        if elements is None:
            names.append("r")
        if names:
            code.line(" = ".join([*names, "None"]))

    def consumes(self):
        return (self.kernel.grad,)

    def writes(self):
        return self.kernel.writes()

    def reads(self):
        return (self.kernel.grad,)

    def describe(self, name):
        rule = f"{type(self.kernel.node).__name__}.backward({name(self.kernel.grad)})"
        return f"{_sends(self.kernel.edges, name)} <- {rule}   (inlined)"


def _unstable(kernels) -> set:
    """The slots whose shapes the guards do not fix: those an op computes with an option
    that may change between calls (a mask, an index array: they can change its shape),
    and every slot computed from one."""
    unstable = set()
    for kernel in kernels:
        if isinstance(kernel, Forward) and (
            any(slot in unstable for slot in kernel.inputs)
            or not all(frozen(value) or _draws(value) for value in kernel.options.values())
        ):
            unstable.add(kernel.output)
    return unstable


def _held(kernels) -> set:
    """The ids of the objects other ops hold as options (a node among them: `Row`'s hub,
    the Unbind node its backward hands each row's gradient to)."""
    held = set()
    for kernel in kernels:
        if isinstance(kernel, Forward):
            for value in kernel.options.values():
                for part in value if isinstance(value, (tuple, list)) else (value,):
                    held.add(id(part))
    return held


def _draws(value) -> bool:
    return isinstance(value, np.random.Generator)


def fuse(kernels, slots, scanned=()) -> list:
    """The kernels with every node whose op's methods can be inlined replaced by its
    inlined kernels (forward and backward both, or neither), and zero_grad() and the SGD
    and Adam steps by theirs (fused_optim.py). The nodes in `scanned` stay generic: a
    scan reads their saved values from the node."""
    backward_of = {}  # id(node) -> whether every backward kernel of the node is generic
    for kernel in kernels:
        if isinstance(kernel, Backward):
            backward_of[id(kernel.node)] = True
    fused = {}  # id(node) -> its FusedForward
    unstable = _unstable(kernels)
    held = _held(kernels)
    grads = {}  # id(leaf) -> the slot of the gradient this program wrote into it
    result = []
    for kernel in kernels:
        replacement = kernel
        if isinstance(kernel, Forward) and FUSING and id(kernel.node) not in scanned:
            forward = rule_of(kernel.node, "forward")
            backward = rule_of(kernel.node, "backward") if id(kernel.node) in backward_of else True
            if forward is not None and backward is not None:
                backward = None if backward is True else backward
                shared = id(kernel.node) in held
                replacement = FusedForward(kernel, forward, backward, unstable, shared)
                fused[id(kernel.node)] = replacement
        elif isinstance(kernel, Backward) and id(kernel.node) in fused:
            forward = fused[id(kernel.node)]
            replacement = FusedBackward(kernel, forward, forward.backward_body)
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
