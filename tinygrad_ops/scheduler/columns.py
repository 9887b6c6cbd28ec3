"""The column checks of a chain: its anchors walked down by the template's route, and every
step checked against the template one *column* (one slot over every step) per check
(declared.py, loops.py; docs/scan.md, "How a chain is scanned").

A check is one pass over a slot's tensors in every step (a `map` over the column), and
the first step that differs ends the chain there: on a long chain the cost is the number
of passes, each a C loop over objects that are mostly out of the caches.
"""

from itertools import repeat
from operator import gt, is_, lt

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
    good, tensors, nodes = steps.steps_as_template(template, anchors)
    lowers = anchors[1 : good + 1]
    shape, dtype = template.shapes[0]
    if good and (lowers[good - 1].shape != shape or lowers[good - 1].data.dtype != dtype):
        good -= 1  # x_0 of another shape or dtype: its step is walked instead
    if good == 0:
        return 0, tensors, nodes, []
    bottom = lowers[good - 1]._ctx
    sequences = [[node.sequence for node in column[:good]] for column in nodes]
    lower_sequences = sequences[0][1:] + [-1 if bottom is None else bottom.sequence]
    good = _check_order(template, sequences, lower_sequences, good)
    return _outside_columns(template, nodes, lower_sequences, good, tensors)


def _check_order(template, sequences, lower_sequences, good):
    """The creation numbers: each slot made after x_{i-1} and before the ops that read it
    (the wiring by identity is `steps.steps_as_template`'s)."""
    for slot in range(1, len(sequences)):
        parent = template.parents[slot]
        good = _cut(list(map(lt, sequences[slot], sequences[parent])), True, good)
    for slot in template.tree_leaves:
        good = _cut(list(map(gt, sequences[slot], lower_sequences)), True, good)
    for slot, _, source in template.identity_reads:
        if source != "prev":
            good = _cut(list(map(lt, sequences[source], sequences[slot])), True, good)
    return good


def _outside_columns(template, nodes, lower_sequences, good, tensors):
    """The outside inputs' columns, each input made before x_{i-1} of its step; returns
    (count, tensors, nodes, outside) as `check_columns` does."""
    outside = []
    for slot, codes in enumerate(template.wiring):
        for k in [k for k, code in enumerate(codes) if code == "outside"]:
            if not good:
                return 0, tensors, nodes, outside
            column = [node.inputs[k] for node in nodes[slot][:good]]
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
