"""The kernels of a compiled program: each one a call the eager engine made, replayed.

A program is a flat list of these. Each reads and writes numbered *slots* of one list,
`buffers` (the arguments, the captured tensors' arrays, the constants, every array the
step computes), and does exactly the numpy work its eager counterpart did, in the same
order, with the same code: the ops' own `forward` and `backward` rules, the engine's
`unbroadcast` and leaf write, the optimizer's own `step`. That is why a replayed step is
bit for bit the eager one.

The backward kernels also carry the walk's ownership rule: a gradient array that a rule
has just made (nothing else refers to it) may be added into in place; any other is never
written to. `owned` is the set of slots holding such arrays during one replay.
"""

from __future__ import annotations

import functools
from operator import itemgetter
from sys import getrefcount
from typing import NamedTuple

import numpy as np

from ..autograd.graph import accumulate_leaf, unbroadcast
from ..ops.base import node_name


class Kernel:
    """One step of a program. `run(buffers, owned)` does the work; `frees` lists the slots
    nobody reads afterwards (set to None after the run, so their memory goes back)."""

    __slots__ = ("frees",)

    def run(self, buffers, owned):  # pragma: no cover - every kernel overrides it
        raise NotImplementedError

    def reads(self) -> tuple:
        """The slots this kernel reads (for the liveness plan)."""
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
        "node", "inputs", "options", "output", "conversions", "release", "gather", "function"
    )  # fmt: skip

    def __init__(self, node, inputs, options, output, conversions=()):
        self.node = node
        self.inputs = inputs  # slots
        self.options = options
        self.output = output
        self.conversions = conversions  # (position, dtype): numpy inputs type promotion casts
        self.release = False  # True when no backward kernel reads the node's saved values
        self.frees = ()
        # The inputs as one tuple (or, for one slot, the value) in one C call.
        self.gather = itemgetter(*inputs) if inputs and not conversions else None
        # The rule with its options bound once (a partial adds them in C at each call).
        function = getattr(node, "compute", node.forward)
        self.function = functools.partial(function, **options) if options else function

    def run(self, buffers, owned):
        if self.conversions:
            arrays = [buffers[slot] for slot in self.inputs]
            for position, dtype in self.conversions:
                arrays[position] = arrays[position].astype(dtype)
            out = self.function(*arrays)
        elif len(self.inputs) > 1:
            out = self.function(*self.gather(buffers))
        elif self.inputs:
            out = self.function(self.gather(buffers))
        else:
            out = self.function()
        if type(out) is not np.ndarray:
            out = np.asarray(out)
        buffers[self.output] = out
        if self.release:
            self.node.saved = None
        if self.frees:
            for slot in self.frees:
                buffers[slot] = None

    def reads(self):
        return self.inputs

    def describe(self, name):
        arguments = ", ".join(name(slot) for slot in self.inputs)
        options = "".join(f", {key}={_short(value)}" for key, value in self.options.items())
        for position, dtype in self.conversions:
            options += f", input {position} as {dtype}"
        return f"{name(self.output)} = {type(self.node).__name__}.forward({arguments}{options})"


class Edge(NamedTuple):
    """Where one input's gradient goes: rule result `index`, cast and unbroadcast to the
    input's `dtype` and `shape`, added into the pending gradient in `slot`. (A tuple: the
    replay unpacks it in one step.)"""

    index: int
    slot: int
    shape: tuple
    dtype: np.dtype


class Backward(Kernel):
    """grads = node.backward(pending gradient of its output); each sent along its edge."""

    __slots__ = ("node", "grad", "edges", "release")

    def __init__(self, node, grad, edges):
        self.node = node
        self.grad = grad  # the slot of the output's gradient, consumed here
        self.edges = edges
        self.release = True  # False when a later backward kernel runs the same node again
        self.frees = ()

    def run(self, buffers, owned):
        grad = buffers[self.grad]
        buffers[self.grad] = None
        node = self.node
        grads = node.backward(grad)
        if self.release:
            node.saved = None
        send_along(self.edges, grads, node, buffers, owned)

    def reads(self):
        return (self.grad,)

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
        self.frees = ()

    def run(self, buffers, owned):
        grads = tuple(None if slot is None else buffers[slot] for slot in self.results)
        for slot in self.frees:  # first, so that ownership is judged as in the walk
            buffers[slot] = None
        send_along(self.edges, grads, self.node, buffers, owned)

    def reads(self):
        return tuple(slot for slot in self.results if slot is not None)

    def describe(self, name):
        results = ", ".join("None" if slot is None else name(slot) for slot in self.results)
        return f"{_sends(self.edges, name)} <- {node_name(self.node)}.backward: ({results})"


def send_along(edges, grads, node, buffers, owned):
    """The engine's `input_grads` then `send`, for one rule's results (same checks, same
    ownership rule, same order of additions)."""
    for index, slot, shape, dtype in edges:
        input_grad = grads[index]
        if type(input_grad) is not np.ndarray:
            input_grad = np.asarray(input_grad)
        if input_grad.dtype is not dtype and input_grad.dtype != dtype:  # (builtins are shared)
            input_grad = input_grad.astype(dtype)
        if input_grad.shape != shape:
            input_grad = unbroadcast(input_grad, shape, node, index)
            fresh = True
        else:
            # As in the walk: `grads`, the local name and getrefcount's argument make 3.
            fresh = input_grad.base is None and getrefcount(input_grad) <= 3
        accumulate(buffers, owned, slot, input_grad, fresh)


def accumulate(buffers, owned, slot, grad, fresh):
    """Add `grad` into the pending gradient in `slot` (the walk's `send`)."""
    previous = buffers[slot]
    if previous is None:
        buffers[slot] = grad
        if fresh:
            owned.add(slot)
        else:
            owned.discard(slot)
    elif slot in owned:
        np.add(previous, grad, out=previous)
    else:
        buffers[slot] = np.asarray(previous + grad)  # (two 0-d arrays add to a scalar)
        owned.add(slot)


class Seed(Kernel):
    """The gradient backward starts from (d loss / d loss = 1), into its pending slot."""

    __slots__ = ("slot", "source")

    def __init__(self, slot, source):
        self.slot = slot
        self.source = source
        self.frees = ()

    def run(self, buffers, owned):
        accumulate(buffers, owned, self.slot, buffers[self.source], False)
        for slot in self.frees:
            buffers[slot] = None

    def reads(self):
        return (self.source,)

    def describe(self, name):
        return f"{name(self.slot)} += seed {name(self.source)}"


class LeafWrite(Kernel):
    """tensor.grad (+)= its total gradient: the engine's own leaf write. The array of
    `tensor.grad` then goes into `result`, for the kernels that read the gradient."""

    __slots__ = ("tensor", "slot", "result", "label")

    def __init__(self, tensor, slot, result, label):
        self.tensor = tensor
        self.slot = slot
        self.result = result
        self.label = label
        self.frees = ()

    def run(self, buffers, owned):
        grad = buffers[self.slot]
        buffers[self.slot] = None
        accumulate_leaf(self.tensor, grad, False, self.slot in owned)
        buffers[self.result] = self.tensor.grad.data

    def reads(self):
        return (self.slot,)

    def describe(self, name):
        return f"{self.label}.grad += {name(self.slot)}"


class ForgetGrad(Kernel):
    """tensor.grad = None, as the captured function did after the leaf write (a Python
    assignment the recorder cannot see happen, only its result)."""

    __slots__ = ("tensor", "label")

    def __init__(self, tensor, label):
        self.tensor = tensor
        self.label = label
        self.frees = ()

    def run(self, buffers, owned):
        self.tensor.grad = None

    def describe(self, name):
        return f"{self.label}.grad = None"


class Write(Kernel):
    """An in-place op's write: copy the result into the target's own array."""

    __slots__ = ("target", "source", "tensor")

    def __init__(self, target, source, tensor):
        self.target = target
        self.source = source
        self.tensor = tensor  # a captured tensor whose version counter is bumped, or None
        self.frees = ()

    def run(self, buffers, owned):
        np.copyto(buffers[self.target], buffers[self.source], casting="same_kind")
        if self.tensor is not None:
            self.tensor._version[0] += 1
        for slot in self.frees:
            buffers[slot] = None

    def reads(self):
        return (self.target, self.source)

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
        self.frees = ()

    def run(self, buffers, owned):
        self.function(self.owner, *self.args, **self.kwargs)

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
