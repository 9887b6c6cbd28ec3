"""The chain finder: the one entry point (`find_chains`) and its full analysis.

`find_chains` takes the first look first (`first_look.py`: a chain read by its own steps
only, found without an index of the graph); when that finds nothing it runs the full
analysis, in named phases over a `GraphIndex`:

1. `spine`: from the output, follow the input with the longest path of ops behind it;
   chains are long paths, so they lie on it.
2. `levels`: `level(t)`, the deepest spine tensor that `t` has a path into. Choosing the
   chain end x_n = spine[K], the independent tensors are exactly those with level < K
   (they only feed tensors nearer the output), and they can all be walked first.
3. `blocking`: a spine tensor is an anchor when no edge of the region (descendants of
   the spine's start that reach x_n) jumps over it: every path goes through it. One sweep
   in topological order finds, for each spine tensor, the highest level of an edge
   jumping over it, which gives the anchors for every choice of K at once.
4. `best_end`: K is chosen to maximise the anchors.
5. `find_segments`: steps are grouped by period (the ops of an RNN step repeat every few
   anchors) and compared by template; a maximal run of identical templates is a
   *segment*, its steps batched by one vectorised call per op of the template.

The rules that make the scan exact (docs/scan.md section 5): every consumer of x_{i-1} is
an internal node of step i, x_i itself, or *independent*; every consumer of an internal
node is in the same step; every op on the path from x_{i-1} to x_i has a row-wise
Jacobian rule. Anything that breaks a rule ends the segment there; the rest of the graph
is walked sequentially.
"""

import heapq
import itertools

from .first_look import first_look, period_of
from .steps import (
    MIN_STEPS,
    MISSING,
    ChainPlan,
    GraphIndex,
    NotAChain,
    Segment,
    Step,
    build_template,
    input_tensor,
    same_option,
    shared_or_per_step,
)


def find_chains(graph, min_steps=MIN_STEPS, worth_checking=None, full=True, window=None):
    """The chains of `graph` (a BackwardGraph) that a scan can take over, as a ChainPlan
    (its segments may be empty).

    The first look comes first; `worth_checking` (see `first_look`) may stop it early
    with a refusal. With `full=False` the full analysis is not run (None is returned when
    the first look finds nothing, so that a caller can decide whether it pays). `window`:
    the walk down from the output if a caller has made it already.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops.autograd import BackwardGraph
    >>> y = x = tg.Tensor([0.5, -0.3], requires_grad=True)
    >>> for _ in range(8):
    ...     y = y.tanh()
    >>> graph = BackwardGraph([y], None, False, True)
    >>> [segment.length for segment in find_chains(graph).segments]
    [8]
    """
    found = first_look(graph, min_steps, worth_checking, window=window)
    if found is not None or not full:
        return found
    return full_analysis(graph, min_steps)


def full_analysis(graph, min_steps=MIN_STEPS):
    """The full analysis (the module docstring's phases); a ChainPlan."""
    index = GraphIndex(graph)
    count = len(index.tensors)
    if count < 2 * min_steps:
        return ChainPlan([], index=index)
    spine_of = spine(index)
    # The chain starts below the spine's last non-shared tensor (a weight used everywhere
    # would make every edge jump over every anchor).
    start = len(spine_of) - 1
    bottom = spine_of[start]
    if len(index.consumers[bottom]) > 1 and index.tensors[bottom]._ctx is None and start > 0:
        start -= 1
    found = _single_reader_stretch(index, spine_of, start, graph, min_steps)
    if found is not None:
        return found
    level = levels(index, spine_of)
    blocks, below = blocking(index, spine_of, level, spine_of[start])
    end, anchor_count = best_end(blocks, start)
    if anchor_count < min_steps + 1:
        return ChainPlan([], index=index)
    anchors = sorted(
        spine_of[k] for k, block in blocks.items() if k >= end and block < end
    )  # positions, bottom (x_0) to top
    independent = [where for where in range(count) if level[where] < end]
    context = _StepContext(index, level, end, below, graph)
    return ChainPlan(find_segments(anchors, context, min_steps), independent, index)


def spine(index):
    """Positions from the deepest output down, each the input with the longest path of
    ops behind it."""
    inputs, depth = index.inputs, index.depth
    outputs = [where for where in range(len(index.tensors)) if not index.consumers[where]]
    current = max(outputs, key=lambda where: depth[where])
    found = [current]
    while inputs[current]:
        current = max(inputs[current], key=lambda operand: depth[operand])
        found.append(current)
    return found


def _single_reader_stretch(index, spine_of, start, graph, min_steps):
    """A spine whose tensors each have one consumer, the next spine tensor, is a chain of
    anchors as it is (nothing can bypass them and nothing else reads them): its segments,
    or None when the stretch is short or has none (the other phases are then needed)."""
    consumers = index.consumers
    stretch = start
    while stretch > 0 and consumers[spine_of[stretch]] == [spine_of[stretch - 1]]:
        stretch -= 1
    if start - stretch < 4 * min_steps:
        return None
    count = len(index.tensors)
    anchors = spine_of[stretch : start + 1][::-1]
    strict = [0] * count  # level 0 >= end 0: every consumer must be inside its step
    context = _StepContext(index, strict, 0, [False] * count, graph)
    segments = find_segments(anchors, context, min_steps)
    return ChainPlan(segments, (), index) if segments else None


def levels(index, spine_of):
    """level[t]: the deepest spine index that tensor t has a path into (-1: none)."""
    level = [-1] * len(index.tensors)
    for spine_index, where in enumerate(spine_of):
        level[where] = spine_index
    consumers = index.consumers
    for where in range(len(level) - 1, -1, -1):
        best = level[where]
        for consumer in consumers[where]:
            if level[consumer] > best:
                best = level[consumer]
        level[where] = best
    return level


def blocking(index, spine_of, level, source):
    """For each spine index, the highest level of an edge jumping over it (-1: none), in
    one sweep in topological order over the descendants of `source` (`below`, also
    returned). An edge that ends at or before the next spine tensor jumps over none and
    is not even queued."""
    inputs, consumers = index.inputs, index.consumers
    count = len(index.tensors)
    spine_position = {where: spine_index for spine_index, where in enumerate(spine_of)}
    spine_ascending = sorted(spine_position)
    next_spine = 0  # index into spine_ascending of the first spine position > where
    below = [False] * count
    below[source] = True
    blocks = {}
    heap = []  # (-level of the edge's end, position of the edge's end)
    for where in range(source, count):
        if where != source:
            if not any(below[operand] for operand in inputs[where]):
                continue
            below[where] = True
        while next_spine < len(spine_ascending) and spine_ascending[next_spine] <= where:
            next_spine += 1
        spine_index = spine_position.get(where)
        if spine_index is not None:
            while heap and heap[0][1] <= where:
                heapq.heappop(heap)
            blocks[spine_index] = -heap[0][0] if heap else -1
        limit = spine_ascending[next_spine] if next_spine < len(spine_ascending) else count
        for consumer in consumers[where]:
            if consumer > limit:
                heapq.heappush(heap, (-level[consumer], consumer))
    return blocks, below


def best_end(blocks, deepest):
    """(K, anchors): the chain end K with the most anchors, spine indices k >= K below the
    source with blocks[k] < K."""
    votes = [0] * (deepest + 2)
    for spine_index, block in blocks.items():
        low = block + 1
        if low <= spine_index:
            votes[low] += 1
            votes[spine_index + 1] -= 1
    end, most, running = 0, -1, 0
    for candidate in range(deepest + 1):
        running += votes[candidate]
        if running > most:
            end, most = candidate, running
    return end, most


class _StepContext:
    def __init__(self, index, level, end, below, graph):
        self.index = index
        self.level = level
        self.end = end
        self.below = below
        self.capture = graph.capture
        # With several outputs, an output inside a step would carry a seed gradient that
        # the step's Jacobian does not see: such steps are not scanned.
        self.seeded = set(graph.grads) if len(graph.grads) > 1 else None


def _slots_along_paths(template, upper):
    """The step's slot tensors, reached from x_i by the template's paths (NotAChain if a
    path leads off the graph)."""
    slots = [upper]
    for parent, k in template.paths[1:]:
        slots.append(input_tensor(slots[parent], k))
    return slots


def find_segments(anchors, context, min_steps):
    """Group the anchors into periods and cut them into runs of identical templates."""
    found = _repeating_run(anchors, context)
    if found is None:
        return []
    period, last = found
    # Every period-th anchor from the top of the run down; the bottom anchor x_0 may be of
    # another kind (a leaf, say), so the stride runs on below the run and `_step` decides.
    # The phase: the first of the `period` shifts whose middle step is a valid step (with
    # a readout at every step, h_t @ V, the top anchor of the run may be the readout: the
    # shift by one gives steps from h_{t-1} to h_t, whose readers are independent).
    for offset in range(min(period, last + 1)):
        chosen = anchors[: last + 1 - offset][::-1][::period][::-1]
        if len(chosen) < min_steps + 1:
            return []
        middle = len(chosen) // 2
        if _step(chosen[middle - 1], chosen[middle], context) is not None:
            return _segments_along(chosen, context, min_steps)
    return []


def _repeating_run(anchors, context):
    """(period, index of the top anchor) of the longest run of anchors whose op classes
    repeat with the period of the spine, or None."""
    tensors = context.index.tensors
    classes = [type(tensors[where]._ctx) for where in anchors]
    period = period_of(classes)
    if period is None:
        return None
    # The longest run of classes[j] == classes[j - period].
    best = None
    run_start = period
    for j in range(period, len(anchors) + 1):
        if j == len(anchors) or classes[j] is not classes[j - period]:
            covered = j - run_start + period
            if best is None or covered > best[0]:
                best = (covered, j - 1)
            run_start = j + 1
    return None if best is None else (period, best[1])


def _segments_along(chosen, context, min_steps):
    """The segments of the steps between consecutive `chosen` anchors, from the top down:
    a run of steps with one template is a segment (the first step of a run builds the
    template, the others are replayed against it)."""
    segments = []
    run = []  # (template, step), from the top down
    pairs = list(itertools.pairwise(chosen))
    for lower, upper in reversed(pairs):
        if run:
            step = _replay(run[0][0], lower, upper, context)
            if step is not None:
                run.append((run[0][0], step))
                continue
        built = _step(lower, upper, context)
        if run and (built is None or built[0].key != run[0][0].key):
            _close(run[::-1], segments, min_steps)
            run = []
        if built is not None:
            run.append(built)
    if run:
        _extend_down(run, context)
    _close(run[::-1], segments, min_steps)
    return segments[::-1]


def _extend_down(run, context):
    """Add the steps below the lowest anchor that match the template.

    The spine may end beside the chain (at x_1 @ W instead of h_0 @ U, equally deep), so
    the first step can be missing; below the anchors `below` says nothing, so here every
    outside input must have been created before the lower anchor (it cannot depend on it).
    """
    template = run[0][0]
    position = context.index.position
    slot, k = template.prev_path
    while True:
        upper = run[-1][1].lower
        try:
            lower = input_tensor(_slots_along_paths(template, upper)[slot], k)
        except NotAChain:
            return
        lower_position = position.get(id(lower))
        upper_position = position.get(id(upper))
        if lower_position is None or upper_position is None:
            return
        step = _replay(template, lower_position, upper_position, context, created_before=True)
        if step is None:
            return
        run.append((template, step))


def _close(run, segments, min_steps):
    """Make a segment of a run of (template, step) with equal keys: decide which outside
    inputs are shared by every step and which are one per step."""
    if len(run) < min_steps:
        return
    template = run[0][0]
    steps = [step for _, step in run]
    columns = [
        (slot, k, [step.outside[number][2] for step in steps])
        for number, (slot, k, _) in enumerate(steps[0].outside)
    ]
    outside = shared_or_per_step(template, columns, len(steps))
    if outside is None:
        return
    segments.append(Segment.from_steps(template, steps, outside))


def _replay(template, lower_position, upper_position, context, created_before=False):
    """The step between two anchors if it matches `template` exactly, else None.

    The fast path for the thousands of identical steps of an RNN: the slots are reached
    by the template's paths and every rule of `_step` is checked against the template,
    without searching.
    """
    index = context.index
    tensors = index.tensors
    position = index.position
    consumers = index.consumers
    lower = tensors[lower_position]
    upper = tensors[upper_position]
    try:
        slots = _slots_along_paths(template, upper)
    except NotAChain:
        return None
    capture = context.capture
    below = context.below
    uses = template.uses
    slot_positions = set()
    outside = []
    for slot, check in enumerate(template.checks):
        tensor = slots[slot]
        node = tensor._ctx
        data = tensor.data
        if (
            type(node) is not check.op_class
            or node.needs_input_grad != check.needs
            or data.shape != check.shape
            or data.dtype != check.dtype
            or tensor._hooks
        ):
            return None
        for name, value in template.options[slot]:
            if not same_option(getattr(node, name, MISSING), value):
                return None
        where = position.get(id(tensor))
        if where is None or (slot and len(consumers[where]) != uses[slot]):
            return None
        slot_positions.add(where)
        inputs = node.inputs
        for k in check.prev_inputs:
            if inputs[k] is not lower:
                return None
        for k, other in check.slot_inputs:
            if inputs[k] is not slots[other]:
                return None
        for k in check.outside_inputs:
            operand = inputs[k]
            operand_position = position.get(id(operand))
            if (
                created_before
                and operand._ctx is not None
                and operand_position is not None
                and operand_position >= lower_position
            ):
                return None
            if (
                operand_position is not None
                and below[operand_position]
                and lower_position <= operand_position <= upper_position
            ):
                return None  # a node between the anchors that the template does not have
            outside.append((slot, k, operand))
    if len(slot_positions) != len(slots):
        return None
    if capture is not None and any(id(tensor) in capture for tensor in slots):
        return None
    seeded = context.seeded
    if seeded is not None and any(id(tensor) in seeded for tensor in slots[1:]):
        return None
    level = context.level
    end = context.end
    for consumer in consumers[lower_position]:
        if level[consumer] >= end and consumer not in slot_positions:
            return None
    return Step(lower, upper, slots, outside)


def _step(lower_position, upper_position, context):
    """The (template, step) between two anchors, or None if the step breaks a rule."""
    index = context.index
    tensors, position, consumers = index.tensors, index.position, index.consumers
    level, end, below = context.level, context.end, context.below
    lower = tensors[lower_position]
    # The lower anchor: every consumer inside the step or independent.
    for consumer in consumers[lower_position]:
        if level[consumer] >= end and not lower_position < consumer <= upper_position:
            return None

    def belongs(operand):
        # An internal node, or a side node used only here (x_t @ W of an RNN).
        where = position.get(id(operand))
        if where is None:
            return "const"  # not in the graph (tg.grad's inputs lie elsewhere)
        if lower_position < where < upper_position and below[where]:
            return "slot"
        if operand._ctx is not None and len(consumers[where]) == 1 and not below[where]:
            return "slot"
        return "outside"

    built = build_template(lower, tensors[upper_position], belongs, context.capture)
    if built is None:
        return None
    slots = built[1].slots
    # Internal slots: consumers inside the step only (no injection into a step's inside).
    if context.seeded is not None and any(id(tensor) in context.seeded for tensor in slots[1:]):
        return None
    slot_positions = {position[id(tensor)] for tensor in slots}
    for tensor in slots[1:]:
        for consumer in consumers[position[id(tensor)]]:
            if consumer not in slot_positions:
                return None
    return built
