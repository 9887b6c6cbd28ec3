"""The column checks of a chain: its anchors walked down by the template's route, and every
step checked against the template one *column* (one slot over every step) per check
(declared.py, loops.py; docs/scan.md, "How a chain is scanned").

A check is one pass over a slot's tensors in every step, and the first step that differs
ends the chain there: on a long chain the cost is the number of passes.
"""

from operator import lt

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


def check_columns(template, anchors):
    """Check the steps below the top step against `template`, one column at a time.

    `anchors` are x_n, x_{n-1}, ... as `walk_route` found them; step i (from the top)
    has upper anchor anchors[i] and lower anchor anchors[i + 1]. Returns (count, tensors,
    nodes): how many steps from the top match, and the slot columns (tensors and their
    nodes), top-down. What is checked is what `build_template` built the template from
    (`steps.steps_as_template`), x_0's shape and dtype, and the creation order (`_in_order`).
    """
    count, tensors, nodes = steps.steps_as_template(template, anchors)
    shape, dtype = template.shapes[0]
    if count and (anchors[count].shape != shape or anchors[count].data.dtype != dtype):
        count -= 1  # x_0 of another shape or dtype: its step is walked instead
    if count:
        count = _in_order(template, anchors, nodes, count)
    return count, tensors, nodes


def _in_order(template, anchors, nodes, count):
    """How many of the top `count` steps were made in creation order: every slot after
    x_{i-1} and before the ops that read it, every input from outside before x_{i-1} (one
    shared by every step) or before the op that reads it (a per-step one: after x_{i-1}
    for the lower layer's state of a stacked loop, which loops._held proves does not
    depend on the chain)."""
    sequences = [[node.sequence for node in column[:count]] for column in nodes]
    bottom = anchors[count]._ctx
    lowers = sequences[0][1:] + [-1 if bottom is None else bottom.sequence]
    for slot in range(1, len(sequences)):
        count = _before(sequences[slot], sequences[template.parents[slot]], count)
    for slot in template.tree_leaves:
        count = _before(lowers, sequences[slot], count)
    for slot, _, source in template.identity_reads:
        if source != "prev":
            count = _before(sequences[source], sequences[slot], count)
    for slot, codes in enumerate(template.wiring):
        for k in [k for k, code in enumerate(codes) if code == "outside"]:
            operands = [node.inputs[k] for node in nodes[slot][:count]]
            made = [getattr(operand, "_ctx", None) for operand in operands]
            if all(operand is operands[0] for operand in operands):
                # (the lowest step's x_{i-1} decides, made before the others)
                while count and made[0] is not None and made[0].sequence > lowers[count - 1]:
                    count -= 1
                continue
            made = [-1 if node is None else node.sequence for node in made]
            count = _before(made, sequences[slot], count)
    return count


def _before(earlier, later, count):
    """How many of the first `count` steps have `earlier` made before `later`."""
    # (map: 52 us a pass over 2,048 steps, where a comprehension over zip takes 85 us)
    return steps.agreeing(list(map(lt, earlier, later)), count)


def segment_from(template, anchors, min_steps):
    """The `Segment` of the steps from the top down (`anchors`: x_n, x_{n-1}, ... as
    `walk_route` gives them) that match `template`, the top step's; `CannotScan` when
    fewer than `min_steps` do or their inputs do not stack."""
    count, tensors, nodes = check_columns(template, anchors)
    if count < min_steps:
        raise steps.CannotScan(
            f"only the last {count} step(s) share the last step's ops and shapes"
        )
    return steps.make_segment(template, anchors, count, tensors, nodes)
