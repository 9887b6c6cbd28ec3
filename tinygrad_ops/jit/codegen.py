"""Code generation: a program's kernels written out as one Python function, compiled once.

Each kernel writes its lines (`Kernel.emit`) into a `Source`, one local variable per slot
(`s4`; `c<n>` a captured array or constant; other names the objects the lines call, bound
once). Every decision the walk takes at each eager step (cast, unbroadcast, add in place)
was taken at capture and is written into the lines (docs/compile.md shows one).
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import PendingGrads, accumulate_leaf, unbroadcast
from ..ops.base import bump_version
from ..tensor import Tensor


def write_leaf(tensor, grad, owned):
    """tensor.grad (+)= grad, the engine's own leaf write (`accumulate_leaf`); returns the
    array of `tensor.grad`, for the kernels that read the gradient. (A leaf without a
    gradient taking an array the replay owns is written by `LeafWrite`'s lines, without
    this call.)"""
    accumulate_leaf(tensor, grad, False, owned)
    return tensor._grad._data


# What every generated function may call without binding it.
_COMMON = {
    "write_leaf": write_leaf,
    "asarray": np.asarray,
    "add": np.add,
    "copyto": np.copyto,
    "bump_version": bump_version,
    "unbroadcast": unbroadcast,
    "make": Tensor._make,
}


class SlotLedger(PendingGrads):
    """The walk's own ledger of pending gradients and their ownership (autograd/graph.py),
    kept over the program's pending-gradient slots (each `Slot` in the place of a tensor)
    while the kernels write their lines in order: where the walk adds two gradients, its
    `sum` writes that line."""

    def __init__(self, code):
        super().__init__()
        self.code = code
        self.names = {id(slot): code.slot(number) for number, slot in enumerate(code.slots)}

    def sum(self, key, previous, expression, in_place):
        name = self.names[key]
        if in_place:
            self.code.line(f"add({name}, {expression}, out={name})")
        else:  # (asarray: see PendingGrads.sum)
            self.code.line(f"{name} = asarray({name} + {expression})")
        return name


class Source:
    """The lines of one generated function and the objects they name.

    It also keeps (`pending`), while the kernels emit their lines in order, the walk's
    ledger of which pending gradients have arrived and which the replay owns.
    """

    def __init__(self, slots):
        self.slots = slots
        self.lines = []
        self.namespace = dict(_COMMON)
        self.bound = {}  # id(value) -> its name
        self.depth = 1
        self.pending = SlotLedger(self)

    def slot(self, number) -> str:
        """The name of slot `number` in the generated code."""
        kind = self.slots[number].kind
        return f"c{number}" if kind in ("captured", "constant") else f"s{number}"

    def bind(self, value, hint) -> str:
        """A name for `value` in the function's namespace (`hint` + a number)."""
        name = self.bound.get(id(value))
        if name is None:
            name = f"{hint}{len(self.namespace)}"
            self.namespace[name] = value
            self.bound[id(value)] = name
        return name

    def line(self, text):
        self.lines.append("    " * self.depth + text)

    def free(self, slots):
        """Drop the arrays of `slots` (nothing reads them afterwards)."""
        if slots:
            self.line("del " + ", ".join(self.slot(slot) for slot in slots))

    def accumulate(self, slot, expression, owned):
        """slot's pending gradient (+)= expression, as the walk's `send` would: in place only
        into an array the replay owns. `owned`: whether the new array may be written."""
        if self.pending.send(self.slots[slot], expression, owned):  # the first: taken as it is
            self.line(f"{self.slot(slot)} = {expression}")

    def consume(self, slot) -> bool:
        """The pending gradient in `slot` is taken (by a rule or a leaf): whether it was owned."""
        return self.pending.take(id(self.slots[slot]))[1]

    def send(self, edge, expression, node):
        """An input's gradient along `edge`: cast and summed down as the capture found
        needed (the walk's `input_grads`), then accumulated."""
        if edge.wrap:
            expression = f"asarray({expression})"
        if edge.cast:
            expression = f"{expression}.astype({self.bind(edge.dtype, 'dtype')})"
        if edge.reduce:
            node_name = self.bind(node, "node")
            expression = f"unbroadcast({expression}, {edge.shape!r}, {node_name}, {edge.index})"
        self.accumulate(edge.slot, expression, edge.owned)


def generate(name, slots, initial, arguments, kernels, output):
    """Compile the kernels into `replay(values)`, which returns what `output` (a
    `program.Output`) describes; returns the function and its source text. `initial` holds
    the captured arrays and the constants; `arguments` (slot, position, whether a Tensor)
    the arguments."""
    code = Source(slots)
    for number, slot in enumerate(slots):
        if slot.kind in ("captured", "constant"):
            code.namespace[code.slot(number)] = initial[number]
    for slot, position, is_tensor in arguments:
        attribute = "._data" if is_tensor else ""  # (the guards checked it is a Tensor)
        code.line(f"{code.slot(slot)} = values[{position}]{attribute}")
    for number, kernel in enumerate(kernels):
        kernel.emit(code, number)
        code.free(kernel.frees)
    code.line(f"return {output.expression(code)}")
    source = f"def replay(values):  # {name}\n" + "\n".join(code.lines) + "\n"
    namespace = code.namespace
    exec(compiled_code(source, f"<tg.compile {name}>"), namespace)  # (code written above)
    return namespace["replay"], source


_CODE = {}  # source text -> its code object (the most recently compiled last)
_CODE_LIMIT = 64


def compiled_code(source, filename):
    """`compile(source)`, once per process for each text: Python's compiler costs about
    10 us a line, most of a capture's own time, and a program captured again for a new
    batch size, another instance of the same model or step, writes the same text (the
    objects its names stand for are bound in each program's own namespace)."""
    key = (source, filename)
    code = _CODE.pop(key, None)
    if code is None:
        code = compile(source, filename, "exec")
        if len(_CODE) >= _CODE_LIMIT:
            del _CODE[next(iter(_CODE))]  # the least recently used
    _CODE[key] = code
    return code
