"""The chain finder's first look: a chain whose tensors are read by their own step only.

This covers the common case (an RNN with its loss on the last state, a chain of
elementwise ops) in a fraction of the time of the full analysis, without an index of the
whole graph:

1. `top_step`: just below the output, the walk of `spine.descend` shows the period of
   the ops (5 per step of `tanh(x W + h U + b)`); the top step's template is built.
2. `walk_route`: the template's route of input indices walks down the chain, giving the
   anchors x_n, x_{n-1}, ... while creation numbers keep falling.
3. `check_columns`: every step is checked against the template one *column* (one slot
   over every step) per check, each check a single pass.
4. `outside_readers`: two searches over the tensors *outside* the chain (the ancestry
   of the weights and inputs, then the output side) prove that none of them reads a
   tensor inside a step, and that the readers of the anchors (a readout and a loss at
   every step) are *independent*: walked first, they leave the injections e_i.

When the first look finds nothing, the full analysis (`finder.py`) decides.
"""

import itertools
from operator import attrgetter, gt, is_, itemgetter, lt

from ..tensor import Tensor
from . import steps
from .readers import outside_readers
from .spine import descend
from .steps import ChainPlan, NotAChain, Segment, build_template, input_tensor


def first_look(
    graph, min_steps, worth_checking=None, nested=True, inside=None, pending=(), window=None
):
    """A ChainPlan with the chain found (and, with `nested`, the chains found among its
    independent tensors: a second RNN), a ChainPlan without segments and with a
    `refusal` (a chain too short to pay, by `worth_checking(steps, ops_per_step,
    state_shape)`, asked once the walk down knows the length), or None (not this kind of
    chain: the full analysis decides). With `inside` (a set of ids), a chain whose top
    step is not made of those tensors is not looked at further, a step's tensors are
    among them, and the searches do not leave them. `pending` lists tensors besides the
    root that hold a gradient still to be walked (a look resumed after a scan,
    `below.py`): they are searched from as the root is. `window`: the tensors to find
    the repeating step in (default: the walk down from the root, `spine.descend`)."""
    if graph.wanted is not None or len(graph.grads) != 1 or len(graph.roots) != 1:
        return None
    if window is None:
        window = list(descend(graph.roots[0], 8 * steps.MAX_PERIOD))
    # The phases whose step is a valid template, from the top: the first whose chain
    # checks out and whose readers keep to the rules (the top of the repeating classes
    # may be the loss's y * y, a Mul like the step's own; a phase may find the steps of
    # a chain whose tensors are read inside its steps).
    refusal = found = independent = None
    for built in top_steps(window, graph, inside):
        if inside is not None and not {id(built[1].upper), id(built[1].lower)} <= inside:
            continue
        found = _checked_steps(*built, graph.capture, worth_checking, min_steps, inside)
        if isinstance(found, ChainPlan):
            refusal, found = refusal or found, None  # too short to pay, at this phase
        if found is None:
            continue
        template, anchors, (count, tensors, nodes, outside) = found
        independent = outside_readers(graph, anchors, tensors, outside, count, pending, inside)
        if independent is not None:
            break
    if independent is None:
        return refusal
    # Columns in chain order (step 0 is x_0 -> x_1).
    chain_columns = [column[count - 1 :: -1] for column in tensors]
    chain_nodes = [column[count - 1 :: -1] for column in nodes]
    outside = steps.shared_or_per_step(
        template, [(slot, k, column[count - 1 :: -1]) for slot, k, column in outside], count
    )
    if outside is None:
        return None
    segment = Segment(template, anchors[count::-1], chain_columns, outside, chain_nodes)
    plan = ChainPlan([segment], independent)
    if nested:
        inside = set()  # the nested chains' tensors but their ends: never sent a gradient
        for inner, inner_independent in chains_among(graph, independent, min_steps):
            plan.segments.append(inner)
            plan.nested[id(inner)] = inner_independent
            inside.update(id(tensor) for column in inner.columns for tensor in column)
            inside.discard(id(inner.anchors[-1]))
        if inside:
            plan.independent = [tensor for tensor in independent if id(tensor) not in inside]
    return plan


class RootView:
    """The view of a graph from one of its tensors, for a nested first look."""

    def __init__(self, root, capture):
        self.roots = [root]
        self.grads = {id(root): None}
        self.wanted = None
        self.capture = capture


def chains_among(graph, independent, min_steps, tries=2):
    """Chains inside the independent tensors of a chain (a second RNN of the same loss),
    each as (segment, the tensors to walk right before scanning it). A candidate is the
    chain the first look finds from one of the newest independent tensors; it is kept
    when all its tensors are independent ones and no independent tensor outside its own
    searches reads inside it (its anchors' readers are then walked before its scan)."""
    members = set(map(id, independent))
    found = []
    taken = set()
    for candidate in independent[: 2 * tries]:
        if id(candidate) in taken or candidate._ctx is None:
            continue
        inner = _inner_chain(graph, independent, candidate, members, min_steps)
        if inner is None:
            continue
        (segment,) = inner.segments
        chain = {id(tensor) for column in segment.columns for tensor in column}
        chain.update(map(id, segment.anchors[1:]))
        # All independent but x_0 (made before the outer chain's x_0, it may be older).
        if not chain <= members or chain & taken:
            continue
        chain.add(id(segment.anchors[0]))
        if _read_from_elsewhere(independent, inner.independent, chain, segment):
            continue
        taken |= chain
        # Its own independent tensors (the output side above it) lead to it again.
        taken.update(map(id, inner.independent))
        found.append((segment, inner.independent))
    return found


def _inner_chain(graph, independent, candidate, members, min_steps):
    """The first look from `candidate` among the independent tensors (`members`, ids):
    along the walk down from it, else along the independent tensors themselves, newest
    first (the running sum of a loss at every step: the walk down from the sum follows
    the newest term into the outer chain). A ChainPlan with a segment, or None."""
    view = RootView(candidate, graph.capture)
    inner = first_look(view, min_steps, nested=False, inside=members)
    if inner is None or not inner.segments:
        start = next(index for index, tensor in enumerate(independent) if tensor is candidate)
        window = independent[start : start + 8 * steps.MAX_PERIOD]
        inner = first_look(view, min_steps, nested=False, inside=members, window=window)
    return inner if inner is not None and inner.segments else None


def _read_from_elsewhere(independent, own, chain, segment):
    """Whether an independent tensor outside the chain and its own independent ones reads
    a tensor of the chain other than its ends (x_n and x_0 may be read anywhere)."""
    inside = chain - {id(segment.anchors[0]), id(segment.anchors[-1])}
    skip = chain | set(map(id, own))
    for tensor in independent:
        if id(tensor) in skip:
            continue
        for operand in tensor._ctx.inputs:
            if id(operand) in inside:
                return True
    return False


def _checked_steps(template, step, capture, worth_checking, min_steps, inside=None):
    """(template, anchors, check_columns' result) of the chain below the top `step`, a
    ChainPlan with a refusal (too short to pay), or None (fewer than `min_steps` steps
    check out)."""
    carried = _carried_state(template, step)
    if carried:
        # A state carried beside the chain (the lower layer of a stacked RNN, made in the
        # same step): it becomes a per-step input, and its own chain is looked for once
        # this one is scanned (`below.py`).
        built = _rebuilt_without(step, carried, capture, inside)
        if built is None or _carried_state(*built):
            return None
        template, step = built
    anchors = walk_route(template.route, step)
    state_shape = template.shapes[0][0]
    if worth_checking is not None and not worth_checking(
        len(anchors) - 1, len(template.classes), state_shape, template.jacobian_kind
    ):
        return ChainPlan([], refusal=f"a chain of {len(anchors) - 1} steps: too short to pay")
    checked = check_columns(template, anchors)
    return None if checked[0] < min_steps else (template, anchors, checked)


def top_step(window, graph):
    """The (template, step) of the top step of the chain that `window` (the walk down
    from the output) runs along, or None if its op classes do not repeat."""
    return next(top_steps(window, graph), None)


def top_steps(window, graph, inside=None):
    """The valid (template, step) candidates for the top step of the chain that `window`
    runs along, one per phase from the top (none if its op classes do not repeat); with
    `inside`, made of those tensors only."""
    classes = [type(tensor._ctx) for tensor in window]
    period = period_of(classes[::-1])
    if period is None or len(window) < 2 * period + 1:
        return
    # The top-most tensor from which the classes repeat for three periods: the chain's
    # last anchor. (Not to the window's end: on a short graph the window reaches the
    # chain's first step, which may differ: x_0 a constant, the walk turns aside there.)
    top = 0
    while top + period < len(window) and any(
        classes[j] is not classes[j + period]
        for j in range(top, min(top + 3 * period, len(window) - period))
    ):
        top += 1
    # The phase: the first anchor from the top whose step is a valid template (the top of
    # the repeating part may still be an output layer of another shape).
    for upper in range(top, min(top + 2 * period, len(window) - period)):
        lower = window[upper + period]
        belongs = _made_after(lower, inside)
        built = build_template(lower, window[upper], belongs, graph.capture)
        if built is not None:
            yield built


def _carried_state(template, step):
    """The ids of the top step's tensors whose counterparts in the step below the top step
    reads from outside (the lower layer's state h1 of a stacked RNN, read by the next
    step's h1 @ U1: a second state carried along the chain, not part of its steps)."""
    try:
        below = [step.lower]
        for parent, k in template.paths[1:]:
            below.append(input_tensor(below[parent], k))
    except NotAChain:
        return set()
    slot_below = {id(tensor): slot for slot, tensor in enumerate(below) if slot}
    return {
        id(step.slots[slot_below[id(operand)]])
        for _, _, operand in step.outside
        if id(operand) in slot_below
    }


def _rebuilt_without(step, excluded, capture, inside=None):
    """The top step's (template, step) with the tensors in `excluded` (ids) taken as
    inputs from outside the step."""
    made_after = _made_after(step.lower, inside)

    def belongs(operand):
        return "outside" if id(operand) in excluded else made_after(operand)

    return build_template(step.lower, step.upper, belongs, capture)


def period_of(classes):
    """The number of anchors per step: the smallest shift under which a window of the op
    classes in the middle of the list (nearly) repeats; None if nothing repeats."""
    count = len(classes)
    window = min(count, 8 * steps.MAX_PERIOD)
    low = max(0, count // 2 - window // 2)
    sample = classes[low : low + window]
    scores = {}
    for period in range(1, min(steps.MAX_PERIOD, len(sample) // 2) + 1):
        matches = list(map(is_, sample[period:], sample[:-period])).count(True)
        scores[period] = matches / (len(sample) - period)
    if not scores or max(scores.values()) < 0.5:
        return None
    best = max(scores.values())
    return min(period for period, score in scores.items() if score >= 0.9 * best)


def _made_after(lower, inside=None):
    """`belongs` for the first look: a step's tensors are the inputs made after x_{i-1}
    (and, with `inside`, among those ids)."""
    lower_node = lower._ctx

    def belongs(operand):
        node = operand._ctx
        if node is None or (inside is not None and id(operand) not in inside):
            return "outside"
        if lower_node is None or node.sequence > lower_node.sequence:
            return "slot"
        return "outside"

    return belongs


def walk_route(route, top):
    """x_n, x_{n-1}, ...: the anchors below the top step, each reached from the one above
    by the template's route of input indices, while creation numbers keep falling (an
    in-place op can make a node's input younger than the node; the walk stops there)."""
    anchors = [top.upper, top.lower]
    tensor = top.lower
    if tensor._ctx is None:
        return anchors
    newest = tensor._ctx.sequence
    while True:
        below = tensor
        for k in route:  # `input_tensor`, inlined (one hop per op of every step)
            node = below._ctx
            if node is None or k >= len(node.inputs):
                return anchors  # the route leads off the graph (a leaf, a constant)
            below = node.inputs[k]
            if not isinstance(below, Tensor):
                return anchors
        node = below._ctx
        if node is None:
            anchors.append(below)  # a leaf: x_0, if the step above it checks out
            return anchors
        if node.sequence >= newest:
            return anchors
        anchors.append(below)
        tensor = below
        newest = node.sequence


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


def _nodes_of(operands):
    """The node of every operand (None for a leaf or a value that is not a tensor)."""
    return list(map(getattr, operands, itertools.repeat("_ctx"), itertools.repeat(None)))


def slot_columns(template, anchors):
    """The slot columns below the top, top-down: (count, tensors, nodes), `count` the
    number of steps from the top whose every slot is made by the template's op class
    (with the template's number of inputs), so that following the paths is safe."""
    count = len(anchors) - 1
    tensors = [anchors[:-1]]
    nodes = [list(map(_GET_CONTEXT, anchors[:-1]))]
    inputs = []
    for slot, check in enumerate(template.checks):
        if slot:
            parent, k = template.paths[slot]
            column = list(map(itemgetter(k), inputs[parent][:count]))
            tensors.append(column)
            nodes.append(_nodes_of(column))
        count = _cut(list(map(type, nodes[slot])), check.op_class, count)
        inputs.append(list(map(_GET_INPUTS, nodes[slot][:count])))
        count = _cut(list(map(len, inputs[slot])), len(check.needs), count)
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
    made before x_{i-1}). Readers from outside the chain are `outside_readers`' job.
    """
    good, tensors, nodes = slot_columns(template, anchors)
    good = _check_flags(template, tensors, nodes, good)
    lowers = anchors[1 : good + 1]
    first = template.checks[0]
    if good and (
        lowers[good - 1].shape != first.shape or lowers[good - 1].data.dtype != first.dtype
    ):
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
    for slot, check in enumerate(template.checks):
        column = tensors[slot]
        good = _cut(list(map(_GET_NEEDS, nodes[slot])), check.needs, good)
        good = _cut(list(map(_GET_HOOKS, column)), None, good)
        if slot in template.const_slots:
            # A slot's shape and dtype follow from its inputs' (and its options): only a
            # constant input (x_t without grad, a Python number) can change them; x_0 is
            # checked by the caller, the other inputs are checked slots or the same weight.
            good = _cut(list(map(_GET_SHAPE, column)), check.shape, good)
            good = _cut(list(map(_GET_DTYPE, column)), check.dtype, good)
        for name, value in template.options[slot]:
            same = [
                steps.same_option(getattr(node, name, steps.MISSING), value) for node in nodes[slot]
            ]
            good = _cut(same, True, good)
    return good


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
    for slot, check in enumerate(template.checks):
        for k in check.outside_inputs:
            if not good:
                return 0, tensors, nodes, outside
            column = list(map(itemgetter(k), map(_GET_INPUTS, nodes[slot][:good])))
            outside.append((slot, k, column))
            first = column[0]
            if all(map(is_, column, itertools.repeat(first))):
                made = getattr(first, "_ctx", None)
                if made is not None:
                    # Made before x_{i-1} for every step: x_{i-1} of the lowest step decides.
                    while good and made.sequence > lower_sequences[good - 1]:
                        good -= 1
                continue
            # A per-step input made before the op that reads it (after x_{i-1} for the
            # lower layer's state of a stacked RNN): `outside_readers` proves that it does
            # not depend on the chain.
            made = [-1 if node is None else node.sequence for node in _nodes_of(column)]
            readers = [node.sequence for node in nodes[slot][:good]]
            good = _cut(list(map(lt, made, readers)), True, good)
    return good, tensors, nodes, outside
