"""A template slot over all the steps of a segment, its nodes' saved values stacked, and
the release of a scanned segment's buffers.

`BatchedSlot.node(start, stop)` is an instance of the op's class whose `saved_tensors`
are the stacks (steps start..stop-1 on a leading axis): the op's own backward and
Jacobian rule then run once for all those steps.
"""

import itertools
from operator import attrgetter, is_, itemgetter

import numpy as np

from ..ops.base import LAST_CHANGE, RELEASE_BYTES, Op, released_inputs
from .steps import CannotScan, op_attributes

_BATCHED_CLASSES = {}
_GET_SAVED = attrgetter("saved")
_GET_SEQUENCE = attrgetter("sequence")


def _batched_class(op_class):
    """A subclass of `op_class` whose saved values are stacked arrays set by the scheduler."""
    batched = _BATCHED_CLASSES.get(op_class)
    if batched is None:
        batched = type(
            "Batched" + op_class.__name__,
            (op_class,),
            {
                "__slots__": ("stacked", "output_shape", "output_dtype"),
                "saved_tensors": property(lambda self: self.stacked),
            },
        )
        _BATCHED_CLASSES[op_class] = batched
    return batched


class SavedValuesError(CannotScan):
    """A node of the segment cannot give its saved values as they were recorded (freed by
    an earlier backward, or changed in place): the walk, which raises the engine's own
    error for it, takes over."""


class BatchedSlot:
    """The nodes of one template slot over all the steps of a segment, saved values stacked."""

    def __init__(self, nodes, output_shape, output_dtype, stacks=None):
        first = nodes[0]
        self.op_class = type(first)
        self.first = first
        self.output_shape = tuple(output_shape)
        self.output_dtype = output_dtype
        self.count = count = len(nodes)
        ndim = len(output_shape)
        # What `saved_tensors` checks node by node, here one pass per check.
        saved_per_node = list(map(_GET_SAVED, nodes))
        if None in saved_per_node:
            raise SavedValuesError("a saved value was freed")
        if list(map(len, saved_per_node)).count(len(first.saved)) != count:
            raise CannotScan("the steps saved different numbers of values")
        _check_versions(nodes)
        # Freed together by ReleaseAll when Op.release would free every one of them.
        self.saves = any(saved_per_node)
        self.releasable = all(saved_per_node) and type(first).release is Op.release
        stacks = [] if stacks is None else stacks
        stacked = []
        is_stacked = []
        for position in range(len(first.saved)):
            values = list(map(itemgetter(position), saved_per_node))
            value = values[0]
            if value is None or all(map(is_, values, itertools.repeat(value))):
                stacked.append(value)  # the same object in every step (a weight)
                is_stacked.append(False)
                continue
            array = _stack(values, stacks)
            padding = ndim - (array.ndim - 1)
            if padding > 0:
                array = array.reshape(array.shape[:1] + (1,) * padding + array.shape[1:])
            stacked.append(array)
            is_stacked.append(True)
        self.stacked = stacked
        self.is_stacked = is_stacked
        self.attributes = [
            (name, getattr(first, name))
            for name in op_attributes(self.op_class)
            if hasattr(first, name)
        ]

    def node(self, start, stop, needs_input_grad=None):
        """An op instance whose saved values are steps start..stop-1 of the stack."""
        batched = _batched_class(self.op_class)()
        for name, value in self.attributes:
            setattr(batched, name, value)
        stacked_options = getattr(batched, "batched_options", None)
        if stacked_options is not None:  # options that hold a step's shape (GetItem's)
            for name, value in stacked_options(stop - start).items():
                setattr(batched, name, value)
        if start == 0 and stop == self.count:
            batched.stacked = tuple(self.stacked)
        else:
            batched.stacked = tuple(
                value[start:stop] if flag else value
                for value, flag in zip(self.stacked, self.is_stacked)
            )
        batched.needs_input_grad = (
            self.first.needs_input_grad if needs_input_grad is None else needs_input_grad
        )
        batched.graph_mode = False
        batched.inputs = self.first.inputs
        batched.output_shape = (stop - start,) + self.output_shape
        batched.output_dtype = self.output_dtype
        return batched


def _check_versions(nodes):
    """Raise SavedValuesError when a saved input or output of one of `nodes` changed in
    place after the node was recorded (`Op.changed_saved_box`). Nodes recorded after the
    newest in-place change are intact without a look: one pass over the sequence numbers."""
    last_change = LAST_CHANGE[0]
    if last_change < min(map(_GET_SEQUENCE, nodes)):
        return
    for node in nodes:
        watched = node.sequence < last_change and node.saved_output is not None
        if watched and node.changed_saved_box() is not None:
            raise SavedValuesError("a saved value was changed in place")


def _stack(values, stacks):
    """np.stack(values) (np.array: one pass, the same shape checks and dtype promotion).

    `stacks` holds (values, stacked) of the segment's earlier stacks: the state saved by
    `h @ U` is the state saved by the previous step's tanh, one step later, so such a
    column is the earlier stack shifted by one (a single copy) instead of a new stack.
    """
    count = len(values)
    for others, stacked in stacks:
        if len(others) != count or stacked.dtype != np.result_type(values[0]):
            continue
        if all(map(is_, values[1:], others)):
            return np.concatenate([np.asarray(values[0])[None], stacked[:-1]])
        if all(map(is_, values[:-1], others[1:])):
            return np.concatenate([stacked[1:], np.asarray(values[-1])[None]])
    array = np.array(values)
    stacks.append((values, array))
    return array


class ReleaseAll:
    """Stands in `graph.visited` for the nodes of a scanned segment: the engine calls
    `release()` once (unless retain_graph) and the saved buffers of every node go at once,
    as `Op.release` would free them one by one. (A column whose inputs all stay keeps its
    `saved_output` records until the graph goes: they refer to output arrays that the
    consumers' kept inputs hold anyway, and clearing them costs as much again as freeing
    the buffers.)"""

    __slots__ = ("columns", "others")

    def __init__(self, columns, others):
        self.columns = columns  # node lists whose class uses Op.release and saves something
        self.others = others  # node lists released one by one (their own release)

    def release(self, husks=None):
        husks = {} if husks is None else husks
        for nodes in self.columns:
            if _keeps_its_inputs(nodes):
                for node in nodes:
                    node.saved = None
                continue
            for node in nodes:
                node.saved = None
                node.saved_output = None
                node.inputs = released_inputs(node.inputs, husks)
        for nodes in self.others:
            for node in nodes:
                node.release(husks)


def _nbytes(operand):
    data = getattr(operand, "_data", operand)
    return data.nbytes if isinstance(data, np.ndarray) else 0


_GET_INPUTS = attrgetter("inputs")
_GET_DATA_NBYTES = attrgetter("_data.nbytes")  # a Tensor's array's size


def _largest(operands):
    """The largest size in bytes among `operands` (tensors, arrays or numbers): one C pass
    when they are all tensors (the x_t of every step), else one call per operand."""
    try:
        return max(map(_GET_DATA_NBYTES, operands))
    except AttributeError:  # an array or a number among them
        return max(map(_nbytes, operands))


def _keeps_its_inputs(nodes):
    """Whether `released_inputs` would keep every node's inputs as they are (each small, or
    a parameter), so that releasing the column only drops the saved buffers. Decided on
    the first node: an input that needs a gradient has the same shape in every step (the
    template checks it) or is one tensor shared by all; a constant input (x_t) may not,
    so its size is read in every step."""
    first = nodes[0]
    if not all(map(is_, released_inputs(first.inputs, {}), first.inputs)):
        return False
    for index, needs in enumerate(first.needs_input_grad):
        if not needs:
            operands = list(map(itemgetter(index), map(_GET_INPUTS, nodes)))
            if _largest(operands) >= RELEASE_BYTES:
                return False
    return True
