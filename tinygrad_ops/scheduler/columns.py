"""The column checks of a chain: its anchors walked down by the template's route, and every
step checked against the template one *column* (one slot over every step) per check
(declared.py, loops.py; docs/scan.md, "How a chain is scanned").

A check is one pass over a slot's tensors in every step (a `map` over the column), and
the first step that differs ends the chain there: on a long chain the cost is the number
of passes, each a C loop over objects that are mostly out of the caches.
"""

from itertools import repeat
from operator import attrgetter, eq, gt, is_, itemgetter, lt

import numpy as np

from ..tensor import Tensor
from . import steps


def walk_route(route, top, limit=None):
    """x_n, x_{n-1}, ...: the anchors below the top step (at most `limit` of them), each
    reached from the one above by the template's route of input indices, while creation
    numbers keep falling (an in-place op can make a node's input younger than the node;
    the walk stops there) and the route stays on the graph; a leaf where it ends is x_0."""
    anchors = [top.upper, top.lower]
    tensor = top.lower
    while tensor._ctx is not None and (limit is None or len(anchors) < limit):
        below = tensor
        for k in route:
            node = getattr(below, "_ctx", None)  # (None: a leaf, a number, an array)
            if node is None or k >= len(node.inputs):
                return anchors
            below = node.inputs[k]
        node = getattr(below, "_ctx", None)
        if node is None:
            if isinstance(below, Tensor):
                anchors.append(below)  # a leaf: x_0, if the step above it checks out
            return anchors
        if node.sequence >= tensor._ctx.sequence:
            return anchors
        anchors.append(below)
        tensor = below
    return anchors


def _cut(values, expected, good):
    """The first index below `good` whose value is not `expected`, or where `values` ends
    (else `good`)."""
    if len(values) >= good and values.count(expected) == len(values):
        return good
    for index in range(min(good, len(values))):
        if values[index] != expected:
            return index
    return min(good, len(values))


_GET_CONTEXT = attrgetter("_ctx")
_GET_INPUTS = attrgetter("inputs")
_GET_NEEDS = attrgetter("needs_input_grad")
_GET_HOOKS = attrgetter("_hooks")  # None for a tensor without hooks
_GET_SHAPE = attrgetter("_data.shape")
_GET_DTYPE = attrgetter("_data.dtype")


def slot_columns(template, anchors):
    """The slot columns below the top, top-down: (count, tensors, nodes), `count` the
    number of steps from the top whose every slot is made by the template's op class
    (with the template's number of inputs), so that following the paths is safe."""
    count = len(anchors) - 1
    tensors = [anchors[:-1]]
    nodes = [list(map(_GET_CONTEXT, anchors[:-1]))]
    inputs = []
    for slot, (op_class, needs) in enumerate(zip(template.classes, template.needs)):
        if slot:
            parent, k = template.paths[slot]
            column = list(map(itemgetter(k), inputs[parent][:count]))
            tensors.append(column)
            nodes.append(list(map(getattr, column, repeat("_ctx"), repeat(None))))
        count = _cut(list(map(type, nodes[slot])), op_class, count)
        inputs.append(list(map(_GET_INPUTS, nodes[slot][:count])))
        count = _cut(list(map(len, inputs[slot])), len(needs), count)
    return count, [column[:count] for column in tensors], [column[:count] for column in nodes]


def check_columns(template, anchors):
    """Check the steps below the top step against `template`, one column at a time.

    `anchors` are x_n, x_{n-1}, ... as `walk_route` found them; step i (from the top)
    has upper anchor anchors[i] and lower anchor anchors[i + 1]. Returns (count, tensors,
    nodes, outside): how many steps from the top match, the slot columns (tensors and
    their nodes), and the columns of the outside inputs as (slot, k, [input of every
    step]); all top-down. What is checked is what `build_template` built the template
    from: the op class and options, needs_input_grad, shape and dtype (where a constant
    input could change them), no hooks, the wiring by identity, and the creation numbers
    (every slot made after x_{i-1} and before the op that reads it; every outside input
    made before x_{i-1}).
    """
    good, tensors, nodes = slot_columns(template, anchors)
    good = _check_flags(template, tensors, nodes, good)
    lowers = anchors[1 : good + 1]
    shape, dtype = template.shapes[0]
    if good and (lowers[good - 1].shape != shape or lowers[good - 1].data.dtype != dtype):
        good -= 1  # x_0 of another shape or dtype: its step is walked instead
    if good == 0:
        return 0, tensors, nodes, []
    bottom = lowers[good - 1]._ctx
    sequences = [[node.sequence for node in column[:good]] for column in nodes]
    lower_sequences = sequences[0][1:] + [-1 if bottom is None else bottom.sequence]
    good = _check_order(template, tensors, nodes, sequences, lowers, lower_sequences, good)
    return _outside_columns(template, nodes, lower_sequences, good, tensors)


def _check_flags(template, tensors, nodes, good):
    """needs_input_grad and no hooks; shape and dtype of slots with a constant input; the
    op options."""
    for slot, (shape, dtype) in enumerate(template.shapes):
        column = tensors[slot]
        good = _cut(list(map(_GET_NEEDS, nodes[slot])), template.needs[slot], good)
        good = _cut(list(map(_GET_HOOKS, column)), None, good)
        if slot in template.const_slots:
            # A slot's shape and dtype follow from its inputs' (and its options): only a
            # constant input (x_t without grad, a Python number) can change them; x_0 is
            # checked by the caller, the other inputs are checked slots or the same weight.
            good = _cut(list(map(_GET_SHAPE, column)), shape, good)
            good = _cut(list(map(_GET_DTYPE, column)), np.dtype(dtype), good)
        for name, value in template.options[slot]:
            missing = repeat(steps.MISSING)
            options = list(map(getattr, nodes[slot], repeat(name), missing))
            if not _all_same(options, value):
                same = list(map(steps.same_option, options, repeat(value)))
                good = _cut(same, True, good)
    return good


def _all_same(options, value):
    """Whether every one of `options` is `steps.same_option` as `value`, in C passes: the
    same object in every step (a name, a small number), or equal and of its type (a
    slice's index tuple, made afresh by every step's GetItem); False when unsure (then
    they are compared one by one)."""
    if all(map(is_, options, repeat(value))):
        return True
    if not steps.is_simple(value) or list(map(type, options)).count(type(value)) != len(options):
        return False
    try:
        return all(map(eq, options, repeat(value)))
    except (TypeError, ValueError):  # an array among an index's items: one by one
        return False


def _check_order(template, tensors, nodes, sequences, lowers, lower_sequences, good):
    """The creation numbers (each slot made before the op that reads it, after x_{i-1})
    and the wiring that the paths do not prove, by identity."""
    for slot in range(1, len(nodes)):
        parent = template.parents[slot]
        good = _cut(list(map(lt, sequences[slot], sequences[parent])), True, good)
    for slot in template.tree_leaves:
        good = _cut(list(map(gt, sequences[slot], lower_sequences)), True, good)
    for slot, k in template.extra_prev:
        column = list(map(itemgetter(k), map(_GET_INPUTS, nodes[slot][:good])))
        good = _cut(list(map(is_, column, lowers)), True, good)
    for slot, k, other in template.extra_slot_inputs:
        column = list(map(itemgetter(k), map(_GET_INPUTS, nodes[slot][:good])))
        good = _cut(list(map(is_, column, tensors[other])), True, good)
        good = _cut(list(map(lt, sequences[other], sequences[slot])), True, good)
    return good


def _outside_columns(template, nodes, lower_sequences, good, tensors):
    """The outside inputs' columns, each input made before x_{i-1} of its step; returns
    (count, tensors, nodes, outside) as `check_columns` does."""
    outside = []
    for slot, codes in enumerate(template.wiring):
        for k in [k for k, code in enumerate(codes) if code == "outside"]:
            if not good:
                return 0, tensors, nodes, outside
            column = list(map(itemgetter(k), map(_GET_INPUTS, nodes[slot][:good])))
            outside.append((slot, k, column))
            first = column[0]
            if all(map(is_, column, repeat(first))):
                made = getattr(first, "_ctx", None)
                if made is not None:
                    # Made before x_{i-1} for every step: x_{i-1} of the lowest step decides.
                    while good and made.sequence > lower_sequences[good - 1]:
                        good -= 1
                continue
            # A per-step input made before the op that reads it (after x_{i-1} for the
            # lower layer's state of a stacked loop: loops.py proves that it does not
            # depend on the chain).
            made = [getattr(operand, "_ctx", None) for operand in column]
            made = [-1 if node is None else node.sequence for node in made]
            readers = [node.sequence for node in nodes[slot][:good]]
            good = _cut(list(map(lt, made, readers)), True, good)
    return good, tensors, nodes, outside


def segment_from(template, anchors, min_steps):
    """The `Segment` of the steps from the top down (`anchors`: x_n, x_{n-1}, ... as
    `walk_route` gives them) that match `template`, the top step's; `CannotScan` when
    fewer than `min_steps` do or their inputs do not stack."""
    count, tensors, nodes, outside = check_columns(template, anchors)
    if count < min_steps:
        raise steps.CannotScan(
            f"only the last {count} step(s) share the last step's ops and shapes"
        )
    per_step = steps.shared_or_per_step(
        template, [(slot, k, column[count - 1 :: -1]) for slot, k, column in outside], count
    )
    columns = [column[count - 1 :: -1] for column in tensors]
    step_nodes = [column[count - 1 :: -1] for column in nodes]
    return steps.Segment(template, anchors[count::-1], columns, per_step, step_nodes)
