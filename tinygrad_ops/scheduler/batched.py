"""A template slot over all the steps of a segment: its nodes' saved values stacked, and
their release.

`BatchedSlot.node(start, stop, needs_input_grad)` is an instance of the op's class whose
`saved_tensors` are the stacks (steps start..stop-1 on a leading axis): the op's own
backward and Jacobian rule then run once for all those steps.
"""

import functools

import numpy as np

from ..ops.base import LAST_CHANGE, Op, released_inputs
from .steps import CannotScan


@functools.cache
def _batched_class(op_class):
    """A subclass of `op_class` whose saved values are stacked arrays set by the scheduler."""
    slots = ("stacked", "output_shape", "output_dtype")
    saved_tensors = property(lambda self: self.stacked)
    namespace = {"__slots__": slots, "saved_tensors": saved_tensors}
    return type("Batched" + op_class.__name__, (op_class,), namespace)


class BatchedSlot:
    """Stands for a slot's nodes in `graph.visited` (`release`; the module docstring says
    the rest): `shape` is the slot's (shape, dtype) in one step; `attributes` the op's
    options as (name, value) pairs, the same in every step; `stacks` is shared by a
    segment's slots (see `_stack`)."""

    def __init__(self, nodes, shape, attributes, stacks):
        first = nodes[0]
        self.nodes = nodes
        self.op_class = type(first)
        self.first = first
        self.output_shape = tuple(shape[0])
        self.output_dtype = np.dtype(shape[1])
        self.attributes = attributes
        saved = [node.saved for node in nodes]
        # Saved values freed by an earlier backward, or changed in place (`_check_versions`):
        # the walk takes over, and raises the engine's own error for them.
        if None in saved:
            raise CannotScan("a saved value was freed")
        if any(len(values) != len(first.saved) for values in saved):
            raise CannotScan("the steps saved different numbers of values")
        _check_versions(nodes)
        self.stacked = []
        self.is_stacked = []
        for values in zip(*saved):  # (one saved value over the steps)
            if all(value is values[0] for value in values):
                self.stacked.append(values[0])  # the same object in every step (a weight)
                self.is_stacked.append(False)
                continue
            array = _stack(values, stacks)
            padding = len(self.output_shape) - (array.ndim - 1)
            if padding > 0:  # (a value of fewer axes than the output: aligned on the right)
                array = array.reshape(array.shape[:1] + (1,) * padding + array.shape[1:])
            self.stacked.append(array)
            self.is_stacked.append(True)

    def node(self, start, stop, needs_input_grad):
        """An op instance whose saved values are steps start..stop-1 of the stack."""
        batched = _batched_class(self.op_class)()
        for name, value in self.attributes:
            setattr(batched, name, value)
        stacked_options = getattr(batched, "batched_options", None)
        if stacked_options is not None:  # options that hold a step's shape (GetItem's)
            for name, value in stacked_options(stop - start).items():
                setattr(batched, name, value)
        batched.stacked = tuple(
            value[start:stop] if stacked else value
            for value, stacked in zip(self.stacked, self.is_stacked)
        )
        batched.needs_input_grad = needs_input_grad
        batched.graph_mode = False
        batched.inputs = self.first.inputs
        batched.output_shape = (stop - start,) + self.output_shape
        batched.output_dtype = self.output_dtype
        return batched

    def release(self, husks=None):
        """Free the nodes' saved buffers, as `Op.release` would one by one. (A column whose
        inputs all stay, each small or a parameter, only drops its buffers: its
        `saved_output` records refer to arrays that the consumers' kept inputs hold anyway,
        and clearing them costs as much again as freeing the buffers.)"""
        if self.op_class.release is not Op.release or not _keeps_its_inputs(self.nodes):
            for node in self.nodes:
                node.release(husks)
            return
        for node in self.nodes:
            node.saved = None


def _check_versions(nodes):
    """Raise CannotScan when a saved input or output of one of `nodes` changed in
    place after the node was recorded (`Op.changed_saved_box`). Nodes recorded after the
    newest in-place change are intact without a look."""
    if LAST_CHANGE[0] < min(node.sequence for node in nodes):
        return
    for node in nodes:
        watched = node.sequence < LAST_CHANGE[0] and node.saved_output is not None
        if watched and node.changed_saved_box() is not None:
            raise CannotScan("a saved value was changed in place")


def _stack(values, stacks):
    """np.stack(values) (np.array: one pass, the same shape checks and dtype promotion).

    `stacks` holds (values, stacked) of the segment's earlier stacks: the state saved by
    `h @ U` is the state saved by the previous step's tanh, one step later, so such a
    column is the earlier stack shifted by one (a single copy) instead of a new stack.
    """
    for others, stacked in stacks:
        if len(others) != len(values) or stacked.dtype != np.result_type(values[0]):
            continue
        if all(value is other for value, other in zip(values[1:], others)):
            return np.concatenate([np.asarray(values[0])[None], stacked[:-1]])
    array = np.array(values)
    stacks.append((values, array))
    return array


def _keeps_its_inputs(nodes):
    """Whether `released_inputs` would keep every node's inputs as they are (each small, or
    a parameter): decided on the first node for the inputs that need a gradient (of one
    shape in every step, or one tensor shared by all), in every step for the others (x_t)."""
    first = nodes[0]
    columns = [first.inputs]
    for index, needs in enumerate(first.needs_input_grad):
        if not needs:
            columns.append([node.inputs[index] for node in nodes])
    return all(
        kept is operand
        for column in columns
        for kept, operand in zip(released_inputs(column, {}), column)
    )
