"""The kernels of a compiled program: each one a call the eager engine made, replayed.

A program is a flat list of these. Each reads and writes numbered *slots* (the arguments,
the captured tensors' arrays, the constants, every array the step computes) and does
exactly the numpy work its eager counterpart did, in the same order, with the same code:
the ops' own `forward` and `backward` rules, the engine's `unbroadcast` and leaf write,
the optimizer's own `step`. That is why a replayed step is bit for bit the eager one.

A kernel does not run itself: it writes the lines of Python that do its work (`emit`,
into a `codegen.Source`), and the program compiles all of them into one function. The
backward kernels' lines carry the walk's decisions, taken at capture: which gradient
must be cast or summed down to its input's shape (`Edge`), and which pending gradient
the replay owns and may add into in place (`Source.accumulate`).

"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ..ops.base import node_name


class Kernel:
    """One step of a program. `emit(code, number)` writes its lines; `frees`, set by the
    memory plan (program.plan_memory) before the lines are written, lists the slots nobody
    reads afterwards (deleted after its lines, so their memory goes back)."""

    __slots__ = ("frees",)

    def emit(self, code, number):  # pragma: no cover - every kernel overrides it
        raise NotImplementedError

    def reads(self) -> tuple:
        """The slots this kernel reads (for the liveness plan)."""
        return ()

    def consumes(self) -> tuple:
        """The pending gradients this kernel takes (and deletes itself)."""
        return ()

    def writes(self) -> tuple:
        """The slots this kernel writes (for drawing the program: viz.draw_program)."""
        return ()

    def describe(self, name) -> str:  # pragma: no cover - every kernel overrides it
        raise NotImplementedError


class Forward(Kernel):
    """out = node.forward(*inputs, **options): one op's forward rule on arrays.

    An op whose forward is `check` (shapes, dtypes and options only) then `compute` is
    replayed by its `compute` alone: the guards hold what `check` looked at fixed, so the
    capture's eager run has checked it for every replay.
    """

    __slots__ = (
        "node",
        "inputs",
        "options",
        "output",
        "conversions",
        "release",
        "function",
    )

    def __init__(self, node, inputs, options, output, conversions=()):
        self.node = node
        self.inputs = inputs  # slots
        self.options = options
        self.output = output
        self.conversions = conversions  # (position, dtype): numpy inputs type promotion casts
        self.release = False  # True when no backward kernel reads the node's saved values
        # The rule with its options bound once (a partial adds them in C at each call).
        function = getattr(node, "compute", node.forward)
        self.function = functools.partial(function, **options) if options else function

    def emit(self, code, number):
        arguments = [code.slot(slot) for slot in self.inputs]
        for position, dtype in self.conversions:
            arguments[position] += f".astype({code.bind(dtype, 'dtype')})"
        call = f"{code.bind(self.function, 'forward')}({', '.join(arguments)})"
        if code.slots[self.output].shape == ():  # a 0-d result may come back a numpy scalar
            call = f"asarray({call})"
        code.line(f"{code.slot(self.output)} = {call}  # {type(self.node).__name__}.forward")
        if self.release:
            code.line(f"{code.bind(self.node, 'node')}.saved = None")

    def reads(self):
        return self.inputs

    def writes(self):
        return (self.output,)

    def describe(self, name):
        arguments = ", ".join(name(slot) for slot in self.inputs)
        options = "".join(f", {key}={_short(value)}" for key, value in self.options.items())
        for position, dtype in self.conversions:
            options += f", input {position} as {dtype}"
        return f"{name(self.output)} = {type(self.node).__name__}.forward({arguments}{options})"


class Edge(NamedTuple):
    """Where one input's gradient goes: rule result `index`, added into the pending
    gradient in `slot` (of the input's `shape` and `dtype`). What the walk did with it at
    capture, done the same way at every replay: `wrap` it as an array (a rule returned a
    numpy scalar), `cast` it to the input's dtype, `reduce` it (unbroadcast) to the
    input's shape; `owned`: whether the walk may add into the array in place."""

    index: int
    slot: int
    shape: tuple
    dtype: np.dtype
    wrap: bool = False
    cast: bool = False
    reduce: bool = False
    owned: bool = False


class Backward(Kernel):
    """grads = node.backward(pending gradient of its output); each sent along its edge."""

    __slots__ = ("node", "grad", "edges", "release")

    def __init__(self, node, grad, edges):
        self.node = node
        self.grad = grad  # the slot of the output's gradient, consumed here
        self.edges = edges
        self.release = True  # False when a later backward kernel runs the same node again

    def emit(self, code, number):
        node = code.bind(self.node, "node")
        grad = code.slot(self.grad)
        code.consume(self.grad)
        rule = code.bind(self.node.backward, "backward")
        code.line(f"r = {rule}({grad})  # {type(self.node).__name__}.backward")
        code.line(f"del {grad}")
        if self.release:
            code.line(f"{node}.saved = None")
        for edge in self.edges:
            code.send(edge, f"r[{edge.index}]", self.node)

    def reads(self):
        return (self.grad,)

    def consumes(self):
        return (self.grad,)

    def writes(self):
        return tuple(edge.slot for edge in self.edges)

    def describe(self, name):
        rule = f"{type(self.node).__name__}.backward({name(self.grad)})"
        return f"{_sends(self.edges, name)} <- {rule}"


class CustomBackward(Kernel):
    """The end of a tg.Function's backward: its Tensor ops were recorded as kernels just
    before this one; their results (`results`, one slot or None per input) go along the
    edges as any rule's."""

    __slots__ = ("node", "results", "edges")

    def __init__(self, node, results, edges):
        self.node = node
        self.results = results
        self.edges = edges

    def emit(self, code, number):
        for edge in self.edges:
            code.send(edge, code.slot(self.results[edge.index]), self.node)

    def reads(self):
        return tuple(slot for slot in self.results if slot is not None)

    def writes(self):
        return tuple(edge.slot for edge in self.edges)

    def describe(self, name):
        results = ", ".join("None" if slot is None else name(slot) for slot in self.results)
        return f"{_sends(self.edges, name)} <- {node_name(self.node)}.backward: ({results})"


class Seed(Kernel):
    """The gradient backward starts from (d loss / d loss = 1), into its pending slot."""

    __slots__ = ("slot", "source", "how")

    def __init__(self, slot, source):
        self.slot = slot
        self.source = source

    def emit(self, code, number):
        code.accumulate(self.slot, code.slot(self.source), False)

    def reads(self):
        return (self.source,)

    def writes(self):
        return (self.slot,)

    def describe(self, name):
        return f"{name(self.slot)} += seed {name(self.source)}"


def _leaf(code, tensor, position) -> str:
    """The name of a leaf: the call's argument `position`, else the captured tensor."""
    if position is None:
        return code.bind(tensor, "leaf")
    code.line(f"leaf = values[{position}]")
    return "leaf"


class LeafWrite(Kernel):
    """tensor.grad (+)= its total gradient: the engine's own leaf write (`accumulate_leaf`,
    through `codegen.write_leaf`). The array of `tensor.grad` then goes into `result`, for
    the kernels that read the gradient. A leaf passed as argument `position` is that
    call's argument (`tensor` is None then)."""

    __slots__ = ("tensor", "slot", "result", "label", "position")

    def __init__(self, tensor, slot, result, label, position=None):
        self.tensor = None if position is not None else tensor
        self.slot = slot
        self.result = result
        self.label = label
        self.position = position

    def emit(self, code, number):
        tensor = _leaf(code, self.tensor, self.position)
        grad = code.slot(self.slot)
        owned = code.consume(self.slot)  # (whether the leaf may take the array as it is)
        result, call = code.slot(self.result), f"write_leaf({tensor}, {grad}, {owned})"
        if owned:  # (accumulate_leaf's first case, without the calls: a leaf without a .grad)
            code.line(f"if {tensor}._grad is None:  # {self.label}.grad")
            code.line(f"    {tensor}._grad, {result} = make({grad}, False, None), {grad}")
            code.line("else:")
        code.line(f"{'    ' * owned}{result} = {call}  # {self.label}.grad")
        code.line(f"del {grad}")

    def reads(self):
        return (self.slot,)

    def consumes(self):
        return (self.slot,)

    def writes(self):
        return (self.result,)

    def describe(self, name):
        return f"{self.label}.grad += {name(self.slot)}"


class _OfAGrad(Kernel):
    """A kernel about the .grad of one leaf: `tensor`, or (`position` not None) the
    argument at that position, which the replay reaches through `values`."""

    __slots__ = ("tensor", "slot", "label", "position")

    def __init__(self, tensor, slot, label, position=None):
        self.tensor = None if position is not None else tensor
        self.slot = slot
        self.label = label
        self.position = position


class ForgetGrad(_OfAGrad):
    """tensor.grad = None, as the captured function did after the leaf write (a Python
    assignment the recorder cannot see happen, only its result); `slot` is None."""

    __slots__ = ()

    def emit(self, code, number):
        code.line(f"{_leaf(code, self.tensor, self.position)}.grad = None")

    def describe(self, name):
        return f"{self.label}.grad = None"


class SetGrad(_OfAGrad):
    """tensor.grad = a new Tensor over `slot`'s array, as the step's Python assigned it
    (`p.grad = p.grad * 0.5`)."""

    __slots__ = ()

    def emit(self, code, number):
        leaf = _leaf(code, self.tensor, self.position)
        code.line(f"{leaf}._grad = make({code.slot(self.slot)}, False, None)")

    def reads(self):
        return (self.slot,)

    def describe(self, name):
        return f"{self.label}.grad = {name(self.slot)}"


class ReadGrad(_OfAGrad):
    """slot = the array of tensor.grad as this call finds it: a step that reads a .grad
    before its backward writes it (the previous call's gradient, `p.grad * 0.5`)."""

    __slots__ = ()

    def emit(self, code, number):
        leaf = _leaf(code, self.tensor, self.position)
        code.line(f"{code.slot(self.slot)} = {leaf}._grad._data  # {self.label}.grad")

    def writes(self):
        return (self.slot,)

    def describe(self, name):
        return f"{name(self.slot)} = {self.label}.grad"


class SetSetting(Kernel):
    """group[key] = the call's argument `position` (a learning rate the step writes into
    an optimizer's param_groups from its arguments)."""

    __slots__ = ("group", "key", "position")

    def __init__(self, group, key, position):
        self.group = group
        self.key = key
        self.position = position

    def emit(self, code, number):
        code.line(f"{code.bind(self.group, 'group')}[{self.key!r}] = values[{self.position}]")

    def describe(self, name):
        return f"param_groups[...][{self.key!r}] = argument {self.position}"


class Write(Kernel):
    """An in-place op's write: copy the result into the target's own array."""

    __slots__ = ("target", "source", "tensor")

    def __init__(self, target, source, tensor):
        self.target = target
        self.source = source
        self.tensor = tensor  # a captured tensor whose version counter is bumped, or None

    def emit(self, code, number):
        target, source = code.slot(self.target), code.slot(self.source)
        code.line(f'copyto({target}, {source}, casting="same_kind")  # in place')
        if self.tensor is not None:
            code.line(f"bump_version({code.bind(self.tensor, 'tensor')})")

    def reads(self):
        return (self.target, self.source)

    def writes(self):
        return (self.target,)

    def describe(self, name):
        return f"{name(self.target)}[...] = {name(self.source)}   (in place)"


class Call(Kernel):
    """A method replayed as a whole by calling it again (an optimizer's step, zero_grad):
    it reads the parameters and their gradients itself."""

    __slots__ = ("function", "owner", "args", "kwargs")

    def __init__(self, function, owner, args, kwargs):
        self.function = function
        self.owner = owner
        self.args = args
        self.kwargs = kwargs

    def emit(self, code, number):
        call = functools.partial(self.function, self.owner, *self.args, **self.kwargs)
        code.line(f"{code.bind(call, 'call')}()  # {self.describe(None)}")

    def emit_otherwise(self, code):
        """`else:` and this call (for a fused kernel whose assumptions did not hold)."""
        code.line("else:")
        code.depth += 1
        self.emit(code, None)
        code.depth -= 1

    def describe(self, name):
        return f"{type(self.owner).__name__}.{self.function.__name__}()"


def _sends(edges, name) -> str:
    if not edges:
        return "(nothing)"
    return ", ".join(f"{name(edge.slot)} +=" for edge in edges)


def _short(value) -> str:
    if isinstance(value, np.ndarray):
        return f"<array {value.shape} {value.dtype}>"
    if isinstance(value, np.random.Generator):
        return "<generator>"
    return repr(value)
