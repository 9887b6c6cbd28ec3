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
from operator import is_, not_

from . import steps
from .columns import chains_beside, check_columns, made_after, top_anchors, walk_route
from .readers import Aside, outside_readers, reads_the_chain
from .spine import descend
from .steps import AllBut, ChainPlan, NotAChain, Segment, build_template, input_tensor


def first_look(
    graph,
    min_steps,
    worth_checking=None,
    nested=True,
    inside=None,
    pending=(),
    window=None,
    known=None,
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
    the repeating step in (default: the walk down from the root, `spine.descend`).
    `known`: the chains an earlier look checked beside its own (`ChainPlan.beside`), not
    checked again here. The plan's `beside` holds those this look checked."""
    if graph.wanted is not None or len(graph.grads) != 1 or len(graph.roots) != 1:
        return None
    if window is None:
        window = list(descend(graph.roots[0], 8 * steps.MAX_PERIOD))
    # The phases whose step is a valid template, from the top: the first whose chain
    # checks out and whose readers keep to the rules (the top of the repeating classes
    # may be the loss's y * y, a Mul like the step's own; a phase may find the steps of
    # a chain whose tensors are read inside its steps).
    refusal = found = independent = None
    read = 0  # the phases whose top step's inputs were made from the chain
    for built in top_steps(window, graph, inside):
        if inside is not None and not (
            id(built[1].upper) in inside and id(built[1].lower) in inside
        ):
            continue
        found = _checked_steps(*built, graph.capture, worth_checking, min_steps, inside, known)
        if found is READS_THE_CHAIN:
            read += 1
            if read == READ_REFUSALS:
                break  # (an LSTM's two states: every phase is read so)
            continue
        if isinstance(found, ChainPlan):
            refusal, found = refusal or found, None  # too short to pay, at this phase
        if found is None:
            continue
        template, anchors, (count, tensors, nodes, outside) = found
        beside = None if inside is not None else chains_beside(outside, count, graph.capture)
        # (Not beside a chain checked beside: that one may be the chain aside too.)
        aside = None
        if nested and not beside:
            aside = chains_aside(graph, window, (anchors, tensors, count), min_steps)
        readers = (graph, anchors, tensors, outside, count, pending, inside, beside)
        independent = outside_readers(*readers, aside=aside)
        if independent is None and aside is not None:
            aside = None  # a chain aside is read from elsewhere: searched through instead
            independent = outside_readers(*readers)
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
    plan.beside = {id(chain.anchors[0]): chain for chain in (beside or {}).values()}
    for inner in aside.segments if aside is not None else ():
        plan.segments.append(inner)
        plan.nested[id(inner)] = []  # its readers: independent tensors, newer than its top
    if nested:
        _add_chains_among(plan, graph, min_steps)
    return plan


def _add_chains_among(plan, graph, min_steps):
    """Add to `plan` the chains found among its independent tensors (`chains_among`), and
    take their tensors out of the independent ones."""
    independent = plan.independent
    inside = set()  # the nested chains' tensors but their ends: never sent a gradient
    for inner, inner_independent in chains_among(graph, independent, min_steps):
        plan.segments.append(inner)
        plan.nested[id(inner)] = inner_independent
        inside.update(id(tensor) for column in inner.columns for tensor in column)
        inside.discard(id(inner.anchors[-1]))
    if inside:
        plan.independent = list(_not_among(independent, inside))


def _not_among(tensors, ids):
    """The tensors whose id is not in `ids`, in order (one C pass: the independent tensors
    of a chain can be every tensor of another one)."""
    return itertools.compress(tensors, map(not_, map(ids.__contains__, map(id, tensors))))


ASIDE_TRIES = 4
"""How many inputs beside the walk down from the output are looked from (`chains_aside`)."""


def chains_aside(graph, window, found, min_steps):
    """The chains read beside the walk down from the output above the chain `found`
    ((anchors x_n first, the slot columns top-down, the number of steps)), as a
    `readers.Aside`, or None: a second RNN of the same loss, `h1.sum() + (h2 * h2).sum()`,
    and the running sum of a loss at every step. Each input of the walk's ops above x_n
    that the walk does not follow is looked from (a first look from it alone); where the
    walk down from it meets the chain found (the running sum's newest term reads the
    RNN), the look follows that same input down from the op that reads it instead, the
    chain found outside its steps. Each look proved its chain's readers as seen from
    there; the searches of the chain found see the rest of the graph (`outside_readers`)."""
    anchors = found[0]
    near = set(map(id, anchors[: 8 * steps.MAX_PERIOD]))
    segments = []
    tries = 0
    for position, tensor in enumerate(window):
        if tensor is anchors[0] or tensor._ctx is None or tries == ASIDE_TRIES:
            break
        following = window[position + 1] if position + 1 < len(window) else None
        node = tensor._ctx
        for index, (operand, needs) in enumerate(zip(node.inputs, node.needs_input_grad)):
            if not needs or operand is following or operand._ctx is None or id(operand) in near:
                continue
            tries += 1
            plan = _look_aside(graph, tensor, index, found, near, min_steps)
            if plan is not None and plan.segments:
                segments.extend(plan.segments)
    return Aside(segments) if segments else None


def _look_aside(graph, reader, index, found, near, min_steps):
    """The first look from input `index` of `reader` (`chains_aside`), or None."""
    operand = reader._ctx.inputs[index]
    below = list(descend(operand, 8 * steps.MAX_PERIOD))
    if not any(map(near.__contains__, map(id, below))):
        return first_look(RootView(operand, graph.capture), min_steps, nested=False, window=below)
    # Input `index` from `reader` down, while it is made by an op and not the chain's.
    below = [reader]
    while len(below) < 8 * steps.MAX_PERIOD:
        node = below[-1]._ctx
        following = node.inputs[index] if node is not None and index < len(node.inputs) else None
        if getattr(following, "_ctx", None) is None or id(following) in near:
            break
        below.append(following)
    anchors, tensors, count = found
    chain = set(map(id, anchors[: count + 1]))
    for column in tensors:
        chain.update(map(id, column[:count]))
    view = RootView(reader, graph.capture)
    return first_look(view, min_steps, nested=False, inside=AllBut(chain), window=below)


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
        chain = set(map(id, segment.anchors[1:]))
        for column in segment.columns:
            chain.update(map(id, column))
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
    for tensor in _not_among(independent, skip):
        for operand in tensor._ctx.inputs:
            if id(operand) in inside:
                return True
    return False


READS_THE_CHAIN = "reads the chain"  # `_checked_steps`: a top step's input made from it
READ_REFUSALS = 4
"""After this many phases refused so (`readers.reads_the_chain`), the first look stops:
the chains found in the tests met at most 2 before theirs; an LSTM's two states meet one
at most phases (12-14 of its 34), each costing a template and a look at two steps."""


def _checked_steps(template, step, capture, worth_checking, min_steps, inside=None, known=None):
    """(template, anchors, check_columns' result) of the chain below the top `step`, a
    ChainPlan with a refusal (too short to pay), READS_THE_CHAIN, or None (fewer than
    `min_steps` steps check out). A chain in `known` (`columns.Beside` by its top
    anchor's id) with the same template is not walked down nor checked again."""
    carried = _carried_state(template, step)
    if carried:
        # A state carried beside the chain (the lower layer of a stacked RNN, made in the
        # same step): it becomes a per-step input, and its own chain is looked for once
        # this one is scanned (`below.py`).
        built = _rebuilt_without(step, carried, capture, inside)
        if built is None or _carried_state(*built):
            return None
        template, step = built
    chain = known.get(id(step.upper)) if known else None
    if chain is not None and chain.template.key == template.key and chain.anchors[1] is step.lower:
        anchors, checked = chain.anchors, chain.checked
    else:
        if reads_the_chain(template, top_anchors(template.route, step)):
            return READS_THE_CHAIN  # (before the route and the columns of thousands of steps)
        anchors, checked = walk_route(template.route, step), None
    state_shape = template.shapes[0][0]
    if worth_checking is not None and not worth_checking(
        len(anchors) - 1, len(template.classes), state_shape, template.jacobian_kind
    ):
        return ChainPlan([], refusal=f"a chain of {len(anchors) - 1} steps: too short to pay")
    if checked is None:
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
        belongs = made_after(lower, inside)
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
    belongs_after = made_after(step.lower, inside)

    def belongs(operand):
        return "outside" if id(operand) in excluded else belongs_after(operand)

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
