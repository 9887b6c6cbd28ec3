"""Stacked buffers for a compiled scan: the forward writes each step's saved values into
one array per column, so that the scan reads all the steps at once, with no gathering.

An eager scan finds its steps' saved values on the nodes (`node.saved`, one tuple per
step) and stacks them before it builds the Jacobians (`scheduler/batched.py`: one Python
pass over the steps per column). A compiled scan knows at the capture where every saved
value comes from, and that is the same at every call. For an RNN cell
h_t = tanh(x_t W + h_{t-1} U) the saved values are

    Tanh       its output h_t              -> rows 1..n of the anchors' stack
    h @ U      h_{t-1} and U               -> rows 0..n-1 of the same stack; U itself
    x_t @ W    x_t (x[t]) and W            -> the input x[first:first + n]; W itself

so the replay allocates one array of the anchors x_0 .. x_n, (n + 1, *state shape), and
each step's tanh writes its result straight into its row: Tanh's own inlined forward, its
one numpy call given `out=row` (the same call, so the same bits; scan_kernel.py). The
scan then takes slices of it (no copy), builds every step's Jacobian in one vectorised
call per op, scans, and computes the weights' gradients with one matrix product each: the
scheduler's own code (`SegmentRun`), run on the stacks instead of on stacks gathered from
the nodes, so the results are bit for bit the eager scan's. Nothing of a step is left on
its node.

Other saved values are found too: another op's output in each step (a stack of its own),
values the forward computes outside the chain (the lower layer's states, which the upper
layer of a stacked RNN reads: a stack their ops copy into), one captured tensor per step
(a list of inputs: stacked at each call, as eagerly) and numbers. `plan_stacks` works
the plan out at the capture (None when some saved value is none of these, such as layer
norm's statistics: then the scan reads them from the nodes, as eagerly); `place_stacks`
(scan_kernel.py) puts its kernels into the program; `StackPlan.run` scans at each call.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..scheduler.batched import BatchedSlot
from ..scheduler.scan_scheduler import SegmentRun
from ..scheduler.steps import node_options
from .kernels import Forward


class Stack(NamedTuple):
    """One stacked buffer: its slot, shape and dtype; `rows` maps the slot of each value
    written into it to its row; `first` is the slot copied into row 0 (x_0), or None."""

    slot: int
    shape: tuple
    dtype: np.dtype
    rows: dict
    first: int | None = None


class Recipe(NamedTuple):
    """Where one saved value of a column is, over all the steps: "constant" (`arrays[0]`,
    None or a number, in every step), "shared" (argument `argument`, the same array in
    every step: a weight), "rows" (argument[start:stop:step]), "gather" (`arrays` stacked
    at each call: the steps' captured arrays or numbers, as eager stacks them) or
    "arguments" (the arguments numbered `arrays`, stacked); reshaped to `shape` when not
    None."""

    kind: str
    argument: int = 0
    start: int = 0
    stop: int = 0
    step: int = 1
    shape: tuple | None = None
    arrays: tuple = ()

    def value(self, arguments):
        if self.kind == "constant":
            return self.arrays[0]
        if self.kind == "gather":
            array = np.array(self.arrays)  # (their values may change between calls)
        elif self.kind == "arguments":  # (a list of input tensors, each an argument)
            array = np.array([arguments[index] for index in self.arrays])
        elif self.kind == "shared":
            return arguments[self.argument]
        else:
            array = arguments[self.argument][self.start : self.stop : self.step]
            array = np.ascontiguousarray(array)
        return array if self.shape is None else array.reshape(self.shape)


class Column(NamedTuple):
    """What `BatchedSlot` holds about one template slot, less the stacks themselves."""

    first: object  # the capture's node of step 0 (its class, options and input shapes)
    output_shape: tuple
    output_dtype: np.dtype
    recipes: tuple
    attributes: tuple  # the op's options, (name, value) pairs


class StackedSlot(BatchedSlot):
    """A `BatchedSlot` whose stacks are slices of the replay's buffers (not gathered)."""

    def __init__(self, column, arguments):
        self.op_class = type(column.first)
        self.first = column.first
        self.output_shape = column.output_shape
        self.output_dtype = column.output_dtype
        self.stacked = [recipe.value(arguments) for recipe in column.recipes]
        self.is_stacked = [
            recipe.kind in ("rows", "gather", "arguments") for recipe in column.recipes
        ]
        self.attributes = column.attributes


class StackedRun(SegmentRun):
    """`SegmentRun` over stacked slots made by the plan (its `run` unchanged)."""

    def __init__(self, graph, plan, arguments):
        segment = plan.segment
        self.graph = graph
        self.segment = segment
        self.batched = [StackedSlot(column, arguments) for column in plan.columns]


class StackPlan:
    """The stacks of one scanned segment and where each column's saved values are in
    them. `arguments` lists the slots the scan kernel passes in (stacks, weights, the
    arrays `x[t]` indexes), in the order the recipes number them."""

    def __init__(self, segment, stacks, columns, arguments):
        self.segment = segment
        self.stacks = stacks
        self.columns = columns
        self.arguments = arguments

    def run(self, graph, arguments, method, block_size):
        StackedRun(graph, self, arguments).run(method, block_size)


def plan_stacks(recorder, segment):
    """The StackPlan of `segment` (its nodes' saved values as the capture left them), or
    None when a saved value is not one the replay can find in a stack."""
    count = len(recorder.slots)
    plan = _plan(recorder, segment)
    if plan is None:  # (the stacks' slots made on the way go again)
        del recorder.slots[count:]
        del recorder.initial[count:]
    return plan


def _plan(recorder, segment):
    slot_of = recorder.slot_by_array.get
    anchors = [slot_of(id(tensor.data)) for tensor in segment.anchors]
    outputs = [[slot_of(id(tensor.data)) for tensor in column] for column in segment.columns]
    if None in anchors or any(None in column for column in outputs):
        return None
    if recorder.written.intersection(anchors):
        return None  # (changed in place: the eager scan would refuse it too)
    first, second = recorder.slots[anchors[0]], recorder.slots[anchors[1]]
    if (first.shape, first.dtype) != (second.shape, second.dtype):
        return None  # (x_0 would be cast into the stack, where eager's stack promotes)
    writers = {kernel.output: kernel for kernel in recorder.kernels if isinstance(kernel, Forward)}
    finder = _Finder(recorder, segment, anchors, outputs, writers)
    columns = []
    for nodes, shape in zip(segment.nodes, segment.template.shapes):
        recipes = finder.recipes(nodes, len(shape[0]))
        if recipes is None:
            return None
        first = nodes[0]
        options = node_options(first)
        columns.append(Column(first, tuple(shape[0]), np.dtype(shape[1]), recipes, options))
    for stack in finder.stacks.values():
        for slot in stack.rows:
            row = recorder.slots[slot]
            if writers.get(slot) is None or (row.shape, row.dtype) != (
                stack.shape[1:],
                stack.dtype,
            ):
                return None  # a value no forward kernel writes, or one of another shape or dtype
    return StackPlan(segment, list(finder.stacks.values()), tuple(columns), finder.arguments)


class _Finder:
    """Finds each saved value's recipe, making the stacks and arguments it needs."""

    def __init__(self, recorder, segment, anchors, outputs, writers):
        self.recorder = recorder
        self.segment = segment
        self.count = segment.length
        self.anchors = anchors
        self.outputs = outputs
        self.writers = writers
        self.stacks = {}  # ("anchors",) or ("column", m) -> Stack
        self.arguments = []
        self.fixed = {"captured", "constant"}  # slots whose array is the same at every call

    def argument(self, slot):
        if slot not in self.arguments:
            self.arguments.append(slot)
        return self.arguments.index(slot)

    def stack(self, key, slots, first=None):
        """The stack of `slots` (one per row; `first` the slot of row 0 before them)."""
        stack = self.stacks.get(key)
        if stack is None:
            slot = self.recorder.new_slot("value", "stack of " + " ".join(key))
            shape = self.recorder.slots[slots[0]].shape
            dtype = self.recorder.slots[slots[0]].dtype
            offset = 0 if first is None else 1
            rows = {value: row + offset for row, value in enumerate(slots)}
            stack = Stack(slot, (len(slots) + offset, *shape), dtype, rows, first)
            self.recorder.slots[slot].shape = stack.shape
            self.recorder.slots[slot].dtype = dtype
            self.stacks[key] = stack
        return stack

    def recipes(self, nodes, ndim):
        """The recipe of every saved value of one column's nodes, or None."""
        saved = [node.saved for node in nodes]
        if any(values is None or len(values) != len(saved[0]) for values in saved):
            return None
        recipes = []
        for position in range(len(saved[0])):
            values = [step_values[position] for step_values in saved]
            recipe = self.recipe(values, ndim)
            if recipe is None:
                return None
            recipes.append(recipe)
        return tuple(recipes)

    def recipe(self, values, ndim):
        slot_of = self.recorder.slot_by_array.get
        if all(value is values[0] for value in values):
            if values[0] is None or _is_number(values[0]):  # (None, or a number: h * 0.5)
                return Recipe("constant", arrays=(values[0],))
            slot = slot_of(id(values[0]))
            return None if slot is None else Recipe("shared", self.argument(slot))
        if all(map(_is_number, values)):  # numbers of the program, stacked as eagerly
            return _padded(Recipe("gather", arrays=tuple(values)), values, ndim)
        slots = [slot_of(id(value)) if isinstance(value, np.ndarray) else None for value in values]
        if None in slots:
            return None
        found = self.rows(slots)
        if found is not None:
            stack, start, stop = found
            return _padded(Recipe("rows", self.argument(stack.slot), start, stop), values, ndim)
        recipe = self.indexed(slots, values, ndim)
        if recipe is None and all(self.recorder.slots[slot].kind in self.fixed for slot in slots):
            # One captured tensor per step (a list of inputs): the same arrays at every
            # call (the guards check it), stacked at each call as eagerly.
            recipe = _padded(Recipe("gather", arrays=tuple(values)), values, ndim)
        if recipe is None and all(self.recorder.slots[slot].kind == "input" for slot in slots):
            # The same, passed as arguments (a list of tensors): that call's arrays.
            indices = tuple(self.argument(slot) for slot in slots)
            recipe = _padded(Recipe("arguments", arrays=indices), values, ndim)
        if recipe is None and all(slot in self.writers for slot in slots):
            # Values the forward computes outside the chain, one per step (the lower
            # layer's states, read by the upper layer): a stack their ops write into.
            stack = self.stack(("values", f"%{slots[0]}.."), slots)
            recipe = _padded(Recipe("rows", self.argument(stack.slot), 0, self.count), values, ndim)
        return recipe

    def rows(self, slots):
        """(stack, first row, last row + 1) when `slots` are the chain's anchors or one
        of its columns, step by step (None otherwise)."""
        count = self.count
        if slots == self.anchors[1:]:  # each step's result: x_1 .. x_n
            return self.stack(("anchors",), self.anchors[1:], self.anchors[0]), 1, count + 1
        if slots == self.anchors[:-1]:  # each step's input: x_0 .. x_{n-1}
            return self.stack(("anchors",), self.anchors[1:], self.anchors[0]), 0, count
        if slots in self.outputs:  # another column's output in each step
            column = str(self.outputs.index(slots))
            return self.stack(("column", column), slots), 0, count
        return None

    def indexed(self, slots, values, ndim):
        """x[first], x[first + step], ... of one array x (an RNN's inputs): a slice of x."""
        kernels = [self.writers.get(slot) for slot in slots]
        if not all(
            kernel is not None
            and type(kernel.node).__name__ == "GetItem"
            and kernel.node.basic
            and kernel.inputs == kernels[0].inputs
            for kernel in kernels
        ):
            return None
        indices = [_leading_integer(kernel.node.index) for kernel in kernels]
        if None in indices or len(indices) < 2:
            return None
        step = indices[1] - indices[0]
        if step < 1 or indices != list(range(indices[0], indices[0] + step * len(indices), step)):
            return None
        source = self.argument(kernels[0].inputs[0])
        stop = indices[-1] + 1
        return _padded(Recipe("rows", source, indices[0], stop, step), values, ndim)


def _is_number(value):
    return isinstance(value, (int, float, complex, np.generic)) and not isinstance(value, bool)


def _leading_integer(index):
    """The integer of an index `x[t]` (t, or (t,)) when it is one and not negative."""
    if isinstance(index, tuple) and len(index) == 1:
        index = index[0]
    if isinstance(index, (int, np.integer)) and not isinstance(index, bool) and index >= 0:
        return int(index)
    return None


def _padded(recipe, values, ndim):
    """`BatchedSlot`'s reshape of a stack whose values have fewer axes than the output."""
    shape = np.shape(values[0])
    padding = ndim - len(shape)
    if padding <= 0:
        return recipe
    return recipe._replace(shape=(len(values),) + (1,) * padding + shape)
