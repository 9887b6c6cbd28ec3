"""The chains of hand-written loops, found on the tape: the finder of docs/scan.md, "How a
chain is scanned" (`tg.scan` declares its chain instead: declared.py).

`find` walks down from the output and asks of each tensor whether it tops a chain
(`_chain_at`): `_candidates` may be the anchor below it, `_top_step` makes the step's
template, `walk_route` follows the template down the chain and `steps.Segment`
checks every step against it (`_in_order`: and their creation order). `_held` says what
the walk leaves pending until each chain's scan.
"""

import heapq
from functools import partial
from operator import lt

from ..tensor import Tensor
from .steps import (
    CannotScan,
    Segment,
    agreeing,
    build_template,
    steps_as_template,
)

MAX_PERIOD = 16  # how many ops below a tensor the finder looks for the anchor below it
LOOK = MAX_PERIOD
"""How many tensors in a row the walk down looks at without finding a chain before it stops
(a readout or a loss above the chain is a few ops)."""
CANDIDATES = 4  # the anchors below a tensor tried (the inner Adds of a residual step come first)
MAX_SLOTS = 4 * MAX_PERIOD  # the most tensors a step of a loop may have (a GRU's: about 30)


def find(graph, min_steps=2):
    """The chains of hand-written loops in `graph` (a BackwardGraph): {id(top anchor):
    steps.Segment}, the segments `declared.segment_of` gives for a declared chain.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops.autograd import BackwardGraph
    >>> U = tg.Tensor([[0.5, 0.1], [0.0, 0.4]], requires_grad=True)
    >>> h = tg.Tensor([[1.0, -1.0]])
    >>> for _ in range(6):
    ...     h = (h @ U).tanh()
    >>> found = find(BackwardGraph([h.sum()], None, False, True))
    >>> [segment.describe() for segment in found.values()]
    ['5 steps of [MatMul->Tanh]']
    """
    segments = {}
    taken = {}  # id(tensor) -> its segment, for the found chains' tensors (outside later steps)
    heap, seen = [], set()

    def push(tensor):
        if isinstance(tensor, Tensor) and tensor._ctx is not None and id(tensor) not in seen:
            seen.add(id(tensor))
            heapq.heappush(heap, (-tensor._ctx.sequence, id(tensor), tensor))

    for root in graph.roots:
        push(root)
    misses = 0
    while heap and misses < LOOK:
        tensor = heapq.heappop(heap)[2]
        if id(tensor) in taken:
            continue
        segment = _chain_at(tensor, taken, graph.capture, min_steps)
        if segment is None:
            misses += 1
            node = tensor._ctx
            for operand, needs in zip(node.inputs, node.needs_input_grad):
                if needs:
                    push(operand)
            continue
        misses = 0
        segments[id(tensor)] = segment
        for column in segment.columns:
            taken.update(dict.fromkeys(map(id, column), segment))
        # Below a chain: its x_0, its shared inputs and its top step's per-step inputs (the top
        # of the lower layer of a stacked loop; the other steps' lead to no chain).
        top_step = [column.operands[-1] for column in segment.outside]
        for operand in [segment.anchors[0], *top_step, *segment.shared_operands]:
            push(operand)
    for key, segment in list(segments.items()):
        segment.held = _held(segment, taken)
        if segment.held is None:
            del segments[key]
    return segments


def _held(segment, taken):
    """The ids of the tensors made since the segment's first node that its steps' inputs
    from outside are made from (the lower layer of a stacked loop, the RNN under a running
    sum of losses): the walk leaves them pending until the scan has sent them its
    gradients. None if the segment's own tensors are among them (a loop whose layers feed
    back): no chain. Another chain met (`taken`) comes whole, and the search goes on below."""
    bound = segment.first_sequence
    held = set()
    stack = list(segment.outside_operands)
    while stack:
        tensor = stack.pop()
        node = getattr(tensor, "_ctx", None)
        if node is None or node.sequence <= bound or id(tensor) in held:
            continue
        other = taken.get(id(tensor))
        if other is segment:
            return None
        if other is None:
            held.add(id(tensor))
            stack.extend(node.inputs)
            continue
        for column in other.columns:
            held.update(map(id, column))
        stack.extend([other.anchors[0], *other.outside_operands])
    return held


def _chain_at(top, taken, capture, min_steps):
    """The Segment whose top anchor is `top`, or None."""
    for lower in _candidates(top, taken):
        template = _top_step(lower, top, taken, capture)
        if template is None:
            continue
        anchors = walk_route(template.route, top, lower)
        # The route may lead into a chain found before, or to a tg.grad input: it ends there.
        anchors = anchors[: _first_among(anchors[1:], taken, capture) + 2]
        try:  # (the steps made as the template says, and in creation order)
            segment = Segment(template, anchors, min_steps, partial(_in_order, template))
        except CannotScan:
            continue  # too few steps alike, or per-step inputs that do not stack
        if all(_first_among(column, taken, capture) == len(column) for column in segment.columns):
            return segment  # (no tensor is in two segments)
    return None


def _first_among(tensors, taken, capture):
    """The index of the first of `tensors` in a found chain (`taken`) or a tg.grad input
    (`capture`), else len(tensors): in C passes, over thousands of steps."""
    if not taken and capture is None:
        return len(tensors)  # (the first chain of a backward)
    found = list(map(taken.__contains__, map(id, tensors)))
    if capture is not None:
        found = list(map(bool.__or__, found, map(capture.__contains__, map(id, tensors))))
    return found.index(True) if True in found else len(tensors)


def _candidates(top, taken):
    """Up to CANDIDATES tensors within MAX_PERIOD ops below `top` (and among the nearest
    2 * MAX_SLOTS), in no found chain, that may be the anchor below it (`_alike` and
    `_repeats`), the nearest first (the newest first among those as near)."""
    found, seen = [], {id(top)}
    route_to = {id(top): []}  # the input indices from `top` down to a tensor met
    level = [top]
    for _ in range(MAX_PERIOD):
        following = []
        for tensor in level:
            node = tensor._ctx
            for k, (operand, needs) in enumerate(zip(node.inputs, node.needs_input_grad)):
                if needs and id(operand) not in seen and id(operand) not in taken:
                    seen.add(id(operand))
                    if operand._ctx is not None:
                        following.append(operand)
                        route_to[id(operand)] = route_to[id(tensor)] + [k]
        if len(seen) > 2 * MAX_SLOTS:
            break  # (a stack of every step's state reads thousands: no step is that wide)
        following.sort(key=lambda tensor: tensor._ctx.sequence, reverse=True)
        for tensor in following:
            if _alike(tensor, top) and _repeats(top, tensor, route_to[id(tensor)]):
                found.append(tensor)
                if len(found) == CANDIDATES:
                    return found
        level = following
    return found


def _alike(tensor, top):
    """Whether `tensor` is of `top`'s shape and dtype and, unless a leaf, made by its op."""
    return (
        tensor.shape == top.shape
        and tensor.dtype == top.dtype
        and (tensor._ctx is None or type(tensor._ctx) is type(top._ctx))
    )


def _repeats(top, lower, route):
    """Whether `route` (the input indices from `top` down to `lower`) leads from `lower`
    on to a tensor alike (the anchor below it, or a leaf x_0), as in a chain of alike steps."""
    anchors = walk_route(route, top, lower, 3)
    return len(anchors) == 3 and _alike(anchors[2], top)


def _top_step(lower, upper, taken, capture):
    """The template of the step from `lower` to `upper`, with any state carried
    beside the chain taken out of it (`_carried`); None if it is no chain step or the step
    below is not made alike (cheap to tell before walking the chain)."""
    excluded = set()
    while True:
        built = build_template(lower, upper, capture, (taken, excluded), MAX_SLOTS)
        if built is None:
            return None
        carried = _carried(*built, lower)
        if carried is None:
            return None
        if not carried:
            return built[0]
        excluded |= carried


def _carried(template, slots, lower):
    """The ids of the step's tensors that the step above reads again from outside through
    another state (a second state carried along, the lower layer of a stacked loop): each
    input from outside the top step is searched down to the oldest tensor of the step
    below (x_{n-2} -> x_{n-1}, traced by the template), and where it meets one of them,
    that tensor's counterpart in the top step is carried. None where one meets x_{n-1} or
    x_{n-2} (the step reads the chain from outside), or no step below is made alike."""
    anchors = walk_route(template.route, slots[0], lower, 3)
    count, tensors, nodes = steps_as_template(template, anchors)
    if count < 2:
        return None
    bottom = anchors[2]
    below = {id(column[1]): slot for slot, column in enumerate(tensors)}
    bound = min(column[1].sequence for column in nodes)
    if bottom._ctx is not None:
        bound = min(bound, bottom._ctx.sequence)
    carried = set()
    for slot, k in template.outside_reads:
        stack, seen = [slots[slot]._ctx.inputs[k]], set()
        while stack:
            tensor = stack.pop()
            if tensor is lower or tensor is bottom:
                return None
            node = getattr(tensor, "_ctx", None)
            if node is None or node.sequence < bound or id(tensor) in seen:
                continue
            seen.add(id(tensor))
            slot = below.get(id(tensor))
            if slot is not None:
                carried.add(id(slots[slot]))
                continue
            stack.extend(node.inputs)
    return carried


def walk_route(route, upper, lower, limit=None):
    """x_n, x_{n-1}, ...: the anchors below the top step (at most `limit` of them), each
    reached from the one above by the template's route of input indices, while creation
    numbers keep falling (an in-place op can make a node's input younger than the node;
    the walk stops there) and the route stays on the graph; a leaf where it ends is x_0."""
    anchors = [upper, lower]
    tensor = lower
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


def _in_order(template, anchors, count, nodes):
    """How many of the top `count` steps below `anchors` (x_n, x_{n-1}, ...; `nodes`: each
    slot's in them, as `steps.steps_as_template` gives them) the finder keeps: those above
    an x_0 of the chain's shape and dtype, made in creation order: every slot after
    x_{i-1} and before the ops that read it, every input from outside before x_{i-1} (one
    shared by every step) or before the op that reads it (a per-step one: after x_{i-1}
    for the lower layer's state of a stacked loop, which `_held` proves does not depend on
    the chain)."""
    shape, dtype = template.shapes[0]
    if count and (anchors[count].shape != shape or anchors[count].data.dtype != dtype):
        count -= 1  # x_0 of another shape or dtype: its step is walked instead
    sequences = [[node.sequence for node in column[:count]] for column in nodes]
    bottom = anchors[count]._ctx
    lowers = sequences[0][1:] + [-1 if bottom is None else bottom.sequence]
    for slot, codes in enumerate(template.wiring):
        reads = [code[1] for code in codes if isinstance(code, tuple)]  # (its slots)
        if not reads:  # (the slots that read others are made after them, as checked next)
            count = _before(lowers, sequences[slot], count)
        for read in reads:
            count = _before(sequences[read], sequences[slot], count)
    for slot, k in template.outside_reads:
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
    return agreeing(list(map(lt, earlier, later)), count)
