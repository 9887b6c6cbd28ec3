"""A compiled program: the slots, the flat list of kernels, what the call returns, the
memory plan and the listing (`print(program)`). The first replay fuses the kernels and
writes them as one function (`codegen.generate`), which every replay then is.
"""

from __future__ import annotations

from .codegen import generate
from .fused import FusedBackward, FusedForward, fuse
from .kernels import Backward, Forward
from .scan_kernel import place_stacks


class Slot:
    """What one buffer slot holds: `kind` is "input" (an argument), "captured" (a tensor
    read inside the function, e.g. a parameter), "constant", "value" (an array an op
    computes) or "grad" (a pending gradient); shape and dtype as at capture."""

    __slots__ = ("kind", "label", "shape", "dtype")

    def __init__(self, kind, label, shape=None, dtype=None):
        self.kind = kind
        self.label = label
        self.shape = shape
        self.dtype = dtype

    def describe(self) -> str:
        if self.shape is None:
            return f"{self.kind:<9} {self.label}"
        return f"{self.kind:<9} {self.label:<24} {self.shape} {self.dtype}"


class Output:
    """How to build one returned value: from a slot (a new Tensor over that replay's
    array), an argument, a captured tensor, a constant, or a container of outputs; the
    generated replay ends with `return` and its `expression`."""

    __slots__ = ("kind", "value", "items")

    def __init__(self, kind, value=None, items=()):
        self.kind = kind
        self.value = value
        self.items = items

    def expression(self, code) -> str:
        """The Python expression that builds this value in the generated replay: a new
        Tensor over the replay's array (`make`, Tensor._make), an argument, a bound object."""
        kind = self.kind
        if kind == "slot":
            return f"make({code.slot(self.value)}, False, None)"
        if kind == "argument":
            return f"values[{self.value}]"
        if kind in ("tensor", "constant"):
            return code.bind(self.value, "returned")
        items = [item.expression(code) for item in self.items]
        if kind == "dict":
            pairs = (f"{code.bind(key, 'key')}: {item}" for key, item in zip(self.value, items))
            return "{" + ", ".join(pairs) + "}"
        if kind == "list":
            return "[" + ", ".join(items) + "]"
        return "(" + "".join(f"{item}, " for item in items) + ")"

    def slots(self):
        if self.kind == "slot":
            yield self.value
        for item in self.items:
            yield from item.slots()

    def describe(self, name) -> str:
        if self.kind == "slot":
            return f"Tensor({name(self.value)})"
        if self.kind == "argument":
            return f"argument {self.value}"
        if self.kind in ("tensor", "constant"):
            return repr(self.value) if self.kind == "constant" else "a captured tensor"
        inner = ", ".join(item.describe(name) for item in self.items)
        return f"({inner})" if self.kind == "tuple" else f"[{inner}]"


class Program:
    """Slots, kernels (each tagged with its phase), argument bindings and outputs.

    `arguments` lists (slot, position, whether a Tensor) for every tensor or array
    argument: its array goes into the slot at each call. `initial` holds the constants
    and captured arrays. `kernels`, `phases` and `source` are the compiled program's
    (reading them compiles it, if its replays have not yet).
    """

    def __init__(self, name, slots, initial, arguments, kernels, phases, output, scanned=()):
        self.name = name
        self.slots = slots
        self.initial = initial
        self.arguments = arguments
        self.output = output
        self.scanned = scanned
        self.recorded = kernels, phases
        self.compiled = None  # (kernels, phases, source), once compiled

    def run(self, values):
        """Replay the program on the call's argument values (positional, then keywords);
        returns what the function returned, built anew. The first replay compiles the
        program, and `run` becomes the generated function itself."""
        self.compile()
        return self.run(values)

    def compile(self):
        """Fuse the recorded kernels (fused.py), place the stacks, plan the memory, write
        the generated function and make it `run` (and `replay`)."""
        if self.compiled is not None:
            return
        kernels, phases = self.recorded
        kernels, phases = place_stacks(fuse(kernels, self.slots, self.scanned), phases)
        plan_memory(kernels, self.slots, set(self.output.slots()), self.scanned)
        arguments = self.slots, self.initial, self.arguments, kernels, self.output
        replay, source = generate(self.name, *arguments)
        self.compiled = kernels, phases, source
        self.replay = self.run = replay

    @property
    def kernels(self) -> list:
        self.compile()
        return self.compiled[0]

    @property
    def phases(self) -> list:
        self.compile()
        return self.compiled[1]

    @property
    def source(self) -> str:
        """The generated function's text."""
        self.compile()
        return self.compiled[2]

    def name_of(self, slot) -> str:
        return f"%{slot}"

    def __str__(self):
        name = self.name_of
        lines = [f"program of {self.name}: {len(self.kernels)} kernels, {len(self.slots)} slots"]
        for number, slot in enumerate(self.slots):
            if slot.kind != "grad":
                lines.append(f"  {name(number):>5}  {slot.describe()}")
        phase = None
        for number, (kernel, kernel_phase) in enumerate(zip(self.kernels, self.phases)):
            if kernel_phase != phase:
                phase = kernel_phase
                lines.append(phase)
            line = f"  {number:>4}  {kernel.describe(name)}"
            if kernel.frees:
                line += f"   [frees {' '.join(name(slot) for slot in kernel.frees)}]"
            lines.append(line)
        lines.append(f"returns {self.output.describe(name)}")
        return "\n".join(lines)

    __repr__ = __str__


def plan_memory(kernels, slots, kept, scanned=()):
    """Free every computed array after the last kernel that reads it, and release a node's
    saved values after its last backward (or right after forward, if it has none).

    Pending gradients are consumed by the kernel that takes them; arguments, captured
    arrays and constants live as long as the program; `kept` (the returned slots) too.
    The nodes of scanned chains (`scanned`) keep their saved values until the scan.
    """
    last_reader = {}
    for position, kernel in enumerate(kernels):
        for slot in kernel.reads():
            last_reader[slot] = position
    frees = [[] for _ in kernels]
    for slot, position in last_reader.items():
        computed = slots[slot].kind in ("value", "grad") and slot not in kept
        if computed and slot not in kernels[position].consumes():
            frees[position].append(slot)
    for kernel, slot_list in zip(kernels, frees):
        kernel.frees = tuple(sorted(slot_list))
    last_backward = {}
    for position, kernel in enumerate(kernels):
        if isinstance(kernel, (Backward, FusedBackward)):
            last_backward[id(_node(kernel))] = position
    for position, kernel in enumerate(kernels):
        if isinstance(kernel, Backward):
            kernel.release = last_backward[id(kernel.node)] == position
        elif isinstance(kernel, FusedBackward):
            kernel.kernel.release = last_backward[id(kernel.kernel.node)] == position
        elif isinstance(kernel, (Forward, FusedForward)):
            node = _node(kernel)
            kernel.release = id(node) not in last_backward and id(node) not in scanned


def _node(kernel):
    return getattr(kernel, "node", None) or kernel.kernel.node
