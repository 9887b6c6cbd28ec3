"""Finding the chains a scan scheduler can take over (docs/scan.md section 5).

A chain is a path of *anchors* x_0 -> x_1 -> ... -> x_n; the tensors strictly between two
anchors are the *internal* nodes of a step. The rules that make the scan exact:

- every consumer of x_{i-1} is an internal node of step i, x_i itself, or *independent*:
  a tensor with no path into x_n (per-step loss terms and the sum that adds them up);
- every consumer of an internal node is in the same step;
- every op on the path from x_{i-1} to x_i has a row-wise Jacobian rule (jacobians.py).

How they are found, in a few linear passes over the graph:

1. The *spine*: from the output, follow the input with the longest path of ops behind
   it; chains are long paths, so they lie on it.
2. `level(t)`: the deepest spine tensor that `t` has a path into. Choosing the chain end
   x_n = spine[K], the independent tensors are exactly those with level < K (they only
   feed tensors nearer the output), and they can all be walked first.
3. A spine tensor is an anchor when no edge of the region (descendants of the spine's
   start that reach x_n) jumps over it: every path goes through it. One sweep in
   topological order finds, for each spine tensor, the highest level of an edge jumping
   over it, which gives the anchors for every choice of K at once; K is chosen to
   maximise them.
4. Steps are grouped by period (the ops of an RNN step repeat every few anchors) and
   compared by *template*: the op classes, the wiring, the shapes, which inputs are
   shared by every step (weights) and which are per step (the x_t @ W of an RNN, taken
   into the step when nothing else uses them). A maximal run of identical templates is a
   *segment*: its steps are batched, one vectorised call per op of the template.

Anything that breaks a rule (a hook or a tg.grad input on the chain, an op without a
rule, a consumer outside the step) ends the segment there; the rest of the graph is
walked sequentially.

The lean path (`find_simple_chain`, tried first) covers the common case in a fraction of
the time: a chain whose tensors are read by their own step only (an RNN with its loss on
the last state, a chain of elementwise ops). It needs no index of the whole graph: the
top step is found just below the output, the template's route of input indices walks
down the chain, every step is checked against the template one column (one slot over
all the steps) per check, and one search over the tensors *outside* the chain (the
output side and the ancestry of the weights and inputs) proves that none of them reads
a chain tensor.
"""

import heapq
import itertools
from operator import gt, is_, le, lt

import numpy as np

from ..autograd import Op, topological_order
from ..tensor import Tensor
from . import jacobians

MIN_STEPS = 2  # a segment shorter than this is not worth a scan
MAX_PERIOD = 16  # the most ops per step that the period search tries


class GraphIndex:
    """The graph as integer lists: tensors in topological order, inputs and consumers."""

    def __init__(self, graph):
        if graph.wanted is not None:
            order = graph.order
        else:
            order = topological_order(graph.roots)
        self.tensors = order
        position = {id(tensor): index for index, tensor in enumerate(order)}
        self.position = position
        count = len(order)
        inputs = [()] * count
        consumers = [[] for _ in range(count)]
        depth = [0] * count
        for index, tensor in enumerate(order):
            node = tensor._ctx
            if node is None:
                continue
            deepest = -1
            found = []
            for operand, needs in zip(node.inputs, node.needs_input_grad):
                if needs:
                    where = position.get(id(operand))
                    if where is not None:
                        found.append(where)
                        consumers[where].append(index)
                        if depth[where] > deepest:
                            deepest = depth[where]
            inputs[index] = found
            depth[index] = deepest + 1
        self.inputs = inputs
        self.consumers = consumers
        self.depth = depth


class Template:
    """The shape of one step: its slots (tensors) and how each op's inputs are wired.

    Slot 0 is the step's upper anchor x_i. Each other slot is reached as input `k` of an
    earlier slot (`paths`). `wiring[j][k]` says what input k of slot j is: "prev" (x_{i-1}),
    ("slot", m), ("shared", tensor) (the same tensor in every step), "step" (a different
    tensor in every step, outside the step), or "const" (no gradient needed).
    """

    __slots__ = (
        "classes",
        "paths",
        "wiring",
        "shapes",
        "chain_slots",
        "key",
        "order",
        "needs",
        "uses",
        "checks",
        "prev_uses",
        "prev_path",
        "route",
        "parents",
        "tree_leaves",
        "extra_prev",
        "extra_slot_inputs",
        "const_slots",
        "options",
    )

    def __init__(self, classes, paths, wiring, shapes, chain_slots, order, needs, options=None):
        self.classes = classes
        self.paths = paths
        self.wiring = wiring
        self.shapes = shapes
        self.chain_slots = chain_slots  # slots that depend on x_{i-1}
        self.order = order  # slots, consumers before inputs
        self.needs = needs  # each slot's needs_input_grad
        self.uses = [0] * len(classes)  # how many inputs of the step read each slot
        for codes in wiring:
            for code in codes:
                if isinstance(code, tuple) and code[0] == "slot":
                    self.uses[code[1]] += 1
        self.prev_uses = sum(codes.count("prev") for codes in wiring)
        self.prev_path = None  # (slot, input index) where x_{i-1} is read
        for slot, codes in enumerate(wiring):
            if self.prev_path is None and "prev" in codes:
                self.prev_path = (slot, codes.index("prev"))
        # For the column-wise check of the lean path (`_lean_columns`): the input indices
        # that lead from x_i to x_{i-1} (the route), each slot's parent in the tree of
        # paths, the slots that are no slot's parent, and the reads that the paths do not
        # already prove (x_{i-1} read a second time, a slot read by two ops).
        self.route = None
        self.parents = [None] + [parent for parent, _ in paths[1:]]
        self.tree_leaves = [
            slot for slot in range(len(classes)) if slot not in set(self.parents[1:])
        ]
        if self.prev_path is not None:
            route = [self.prev_path[1]]
            slot = self.prev_path[0]
            while slot:
                parent, k = paths[slot]
                route.append(k)
                slot = parent
            self.route = route[::-1]
        self.const_slots = {slot for slot, codes in enumerate(wiring) if "const" in codes}
        # Each slot's op options (PowScalar's exponent...): (attribute, value) pairs.
        self.options = options or [() for _ in classes]
        self.extra_prev = []
        self.extra_slot_inputs = []
        for slot, codes in enumerate(wiring):
            for k, code in enumerate(codes):
                if code == "prev" and (slot, k) != self.prev_path:
                    self.extra_prev.append((slot, k))
                elif isinstance(code, tuple) and code[0] == "slot" and paths[code[1]] != (slot, k):
                    self.extra_slot_inputs.append((slot, k, code[1]))
        # What `_replay` checks, slot by slot.
        self.checks = []
        for slot, codes in enumerate(wiring):
            prev_inputs = [k for k, code in enumerate(codes) if code == "prev"]
            slot_inputs = [
                (k, code[1])
                for k, code in enumerate(codes)
                if isinstance(code, tuple) and code[0] == "slot"
            ]
            outside_inputs = [k for k, code in enumerate(codes) if code == "outside"]
            shape, dtype = shapes[slot]
            dtype = np.dtype(dtype)
            self.checks.append(
                (classes[slot], needs[slot], shape, dtype, prev_inputs, slot_inputs, outside_inputs)
            )
        self.key = (
            tuple(classes),
            tuple(paths),
            tuple(tuple(codes) for codes in wiring),
            tuple(shapes),
            tuple(
                tuple((name, _option_key(value)) for name, value in pairs) for pairs in self.options
            ),
        )


def op_attributes(op_class):
    """The attributes an op class sets besides those of `Op` (its options: an exponent)."""
    names = []
    for klass in op_class.__mro__:
        if klass is Op:
            break
        names.extend(klass.__dict__.get("__slots__", ()))
    return names


def node_options(node):
    """(attribute, value) for each option the node has set."""
    return tuple(
        (name, getattr(node, name)) for name in op_attributes(type(node)) if hasattr(node, name)
    )


_SIMPLE_OPTIONS = (int, float, complex, str, bool, bytes, type(None), np.dtype)


def _same_option(value, expected):
    """Options equal by value for numbers and names, else the same object."""
    if value is expected:
        return True
    return type(value) is type(expected) and type(value) in _SIMPLE_OPTIONS and value == expected


def _option_key(value):
    return value if type(value) in _SIMPLE_OPTIONS else ("object", id(value))


class Step:
    """One step of a segment: its slot tensors and its per-step outside inputs."""

    __slots__ = ("lower", "upper", "slots", "outside")

    def __init__(self, lower, upper, slots, outside):
        self.lower = lower
        self.upper = upper
        self.slots = slots
        self.outside = outside  # list of (slot, input index, tensor) for "step" wiring


class Segment:
    """A run of isomorphic steps x_0 -> ... -> x_n that can be scanned, kept by columns.

    `anchors` are x_0 .. x_n; `columns[slot]` holds the slot's tensor in every step (step
    0 is x_0 -> x_1); `outside` lists the per-step inputs of the template (its "step"
    wiring) as (slot, input index, [the input in every step]).
    """

    def __init__(self, template, anchors, columns, outside, nodes=None):
        self.template = template
        self.anchors = anchors
        self.columns = columns
        self.outside = outside
        self._nodes = nodes

    @classmethod
    def from_steps(cls, template, steps, outside):
        anchors = [steps[0].lower] + [step.upper for step in steps]
        columns = [[step.slots[slot] for step in steps] for slot in range(len(template.classes))]
        return cls(template, anchors, columns, outside)

    @property
    def nodes(self):
        """Per slot, the node of every step (chain order)."""
        if self._nodes is None:
            self._nodes = [[tensor._ctx for tensor in column] for column in self.columns]
        return self._nodes

    @property
    def steps(self):
        """The steps as `Step` objects (built on demand: the scan itself reads columns)."""
        per_step = [[] for _ in range(self.length)]
        for slot, k, operands in self.outside:
            for index, operand in enumerate(operands):
                per_step[index].append((slot, k, operand))
        rows = zip(*self.columns, strict=True)
        return [
            Step(self.anchors[index], self.anchors[index + 1], list(row), per_step[index])
            for index, row in enumerate(rows)
        ]

    @property
    def length(self):
        return len(self.anchors) - 1

    @property
    def state_shape(self):
        return self.anchors[-1].shape

    @property
    def jacobian_kind(self):
        """'diagonal' when every op on the path is elementwise, else 'dense'."""
        template = self.template
        for slot in template.chain_slots:
            if template.classes[slot] not in jacobians.ELEMENTWISE:
                return "dense"
        return "diagonal"

    @property
    def ops_per_step(self):
        return len(self.template.classes)

    def describe(self):
        names = "->".join(
            cls.__name__
            for cls in reversed([self.template.classes[s] for s in self.template.order])
        )
        return f"{self.length} steps of [{names}]"


class ChainPlan:
    """What the analysis found: segments, the independent tensors, the graph index."""

    def __init__(self, index, segments, independent):
        self.index = index
        self.segments = segments
        self.independent = independent  # positions walked before any segment


def find_chains(graph, min_steps=MIN_STEPS):
    """Analyse `graph` (a BackwardGraph) and return a ChainPlan (segments may be empty)."""
    index = GraphIndex(graph)
    count = len(index.tensors)
    empty = ChainPlan(index, [], [])
    if count < 2 * min_steps:
        return empty
    tensors = index.tensors
    inputs = index.inputs
    consumers = index.consumers
    depth = index.depth
    # 1. The spine, from the deepest output down.
    outputs = [where for where in range(count) if not consumers[where]]
    top = max(outputs, key=lambda where: depth[where])
    spine = [top]
    current = top
    while inputs[current]:
        deepest = -1
        for operand in inputs[current]:
            if depth[operand] > deepest:
                deepest = depth[operand]
                following = operand
        spine.append(following)
        current = following
    # The chain starts below the spine's last non-shared tensor (a weight used everywhere
    # would make every edge jump over every anchor).
    start = len(spine) - 1
    if len(consumers[spine[start]]) > 1 and tensors[spine[start]]._ctx is None and start > 0:
        start -= 1
    source = spine[start]
    # Fast path: a spine whose tensors each have one consumer, the next spine tensor, is a
    # chain of anchors as it is (nothing can bypass them and nothing else reads them);
    # the passes below are only needed when some anchor is also read elsewhere.
    stretch = start
    while stretch > 0 and consumers[spine[stretch]] == [spine[stretch - 1]]:
        stretch -= 1
    if start - stretch >= 4 * min_steps:
        anchors = spine[stretch : start + 1][::-1]
        strict = [0] * count  # level 0 >= end 0: every consumer must be inside its step
        context = _StepContext(index, strict, 0, [False] * count, graph)
        segments = _segments(anchors, context, min_steps)
        if segments:
            return ChainPlan(index, segments, [])
    # 2. level: the deepest spine index a tensor has a path into (-1: none).
    level = [-1] * count
    for spine_index, where in enumerate(spine):
        level[where] = spine_index
    for where in range(count - 1, -1, -1):
        best = level[where]
        for consumer in consumers[where]:
            if level[consumer] > best:
                best = level[consumer]
        level[where] = best
    # 3. Sweep in topological order over the descendants of the source (`below`): for each
    # spine tensor, the highest level of an edge jumping over it. An edge that ends at or
    # before the next spine tensor jumps over none and is not even queued.
    spine_position = {where: spine_index for spine_index, where in enumerate(spine)}
    spine_ascending = sorted(spine_position)
    next_spine = 0  # index into spine_ascending of the first spine position > where
    below = [False] * count
    below[source] = True
    blocking = {}
    heap = []  # (-level of the edge's end, position of the edge's end)
    heappush = heapq.heappush
    for where in range(source, count):
        if where != source:
            for operand in inputs[where]:
                if below[operand]:
                    below[where] = True
                    break
            else:
                continue
        while next_spine < len(spine_ascending) and spine_ascending[next_spine] <= where:
            next_spine += 1
        spine_index = spine_position.get(where)
        if spine_index is not None:
            while heap and heap[0][1] <= where:
                heapq.heappop(heap)
            blocking[spine_index] = -heap[0][0] if heap else -1
        limit = spine_ascending[next_spine] if next_spine < len(spine_ascending) else count
        for consumer in consumers[where]:
            if consumer > limit:
                heappush(heap, (-level[consumer], consumer))
    # Anchors for end K: spine indices k >= K, below the source, with blocking[k] < K.
    deepest = start
    votes = [0] * (deepest + 2)
    for spine_index, block in blocking.items():
        low = block + 1
        if low <= spine_index:
            votes[low] += 1
            votes[spine_index + 1] -= 1
    best_end, best_count, running = 0, -1, 0
    for end in range(deepest + 1):
        running += votes[end]
        if running > best_count:
            best_end, best_count = end, running
    if best_count < min_steps + 1:
        return empty
    anchors = sorted(
        (spine[k] for k, block in blocking.items() if k >= best_end and block < best_end)
    )  # positions, bottom (x_0) to top
    independent = [where for where in range(count) if level[where] < best_end]
    context = _StepContext(index, level, best_end, below, graph)
    segments = _segments(anchors, context, min_steps)
    return ChainPlan(index, segments, independent)


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


def _segments(anchors, context, min_steps):
    """Group the anchors into periods and cut them into runs of identical templates."""
    tensors = context.index.tensors
    classes = [type(tensors[where]._ctx) for where in anchors]
    period = _period(classes)
    if period is None:
        return []
    # The longest run of classes[j] == classes[j - period].
    best = None
    run_start = period
    for j in range(period, len(anchors) + 1):
        if j == len(anchors) or classes[j] is not classes[j - period]:
            covered = j - run_start + period
            if best is None or covered > best[0]:
                best = (covered, period, run_start - period, j - 1)
            run_start = j + 1
    if best is None:
        return []
    _, period, _, last = best
    # Every period-th anchor from the top of the run down; the bottom anchor x_0 may be of
    # another kind (a leaf, say), so the stride runs on below the run and `_step` decides.
    chosen = anchors[: last + 1][::-1][::period][::-1]
    if len(chosen) < min_steps + 1:
        return []
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
    prev_path = None
    for slot, (_, _, _, _, prev_inputs, _, _) in enumerate(template.checks):
        if prev_inputs:
            prev_path = (slot, prev_inputs[0])
            break
    while True:
        upper = run[-1][1].lower
        if upper._ctx is None:
            return
        slots = [upper]
        try:
            for parent, k in template.paths[1:]:
                slots.append(slots[parent]._ctx.inputs[k])
            lower = slots[prev_path[0]]._ctx.inputs[prev_path[1]]
        except (AttributeError, IndexError, TypeError):
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
    outside = _shared_or_per_step(template, columns, len(steps))
    if outside is None:
        return
    segments.append(Segment.from_steps(template, steps, outside))


def _shared_or_per_step(template, columns, count):
    """Split the outside inputs (slot, k, [input of every step]) into shared ones (the same
    tensor in every step: a weight) and per-step ones; rewrite the template's wiring to
    ("shared", tensor) and "step", and return the per-step ones (None when they cannot be
    stacked)."""
    shared = []
    per_step = []
    for slot, k, operands in columns:
        operands = operands[:count]
        first = operands[0]
        if all(map(is_, operands, itertools.repeat(first))):
            shared.append((slot, k, first))
            continue
        shape = first.shape
        if any(operand.shape != shape for operand in operands):
            return None  # per-step inputs of different shapes cannot be stacked
        per_step.append((slot, k, operands))
    wiring = [list(codes) for codes in template.wiring]
    for slot, k, operand in shared:
        wiring[slot][k] = ("shared", operand)
    for slot, k, _ in per_step:
        wiring[slot][k] = "step"
    template.wiring = wiring
    return per_step


def _period(classes):
    """The number of anchors per step: the smallest shift under which a window of the op
    classes in the middle of the spine (nearly) repeats; None if nothing repeats."""
    count = len(classes)
    window = min(count, 8 * MAX_PERIOD)
    low = max(0, count // 2 - window // 2)
    sample = classes[low : low + window]
    scores = {}
    for period in range(1, min(MAX_PERIOD, len(sample) // 2) + 1):
        matches = list(map(is_, sample[period:], sample[:-period])).count(True)
        scores[period] = matches / (len(sample) - period)
    if not scores or max(scores.values()) < 0.5:
        return None
    best = max(scores.values())
    return min(period for period, score in scores.items() if score >= 0.9 * best)


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
    slots = [upper]
    for parent, k in template.paths[1:]:
        slots.append(slots[parent]._ctx.inputs[k])
    capture = context.capture
    below = context.below
    uses = template.uses
    slot_positions = set()
    outside = []
    for slot, (cls, needs, shape, dtype, prev_inputs, slot_inputs, outside_inputs) in enumerate(
        template.checks
    ):
        tensor = slots[slot]
        node = tensor._ctx
        data = tensor.data
        if (
            type(node) is not cls
            or node.needs_input_grad != needs
            or data.shape != shape
            or data.dtype != dtype
            or tensor._hooks
        ):
            return None
        for name, value in template.options[slot]:
            if not _same_option(getattr(node, name, _NOT_A_TENSOR), value):
                return None
        where = position.get(id(tensor))
        if where is None or (slot and len(consumers[where]) != uses[slot]):
            return None
        slot_positions.add(where)
        inputs = node.inputs
        for k in prev_inputs:
            if inputs[k] is not lower:
                return None
        for k, other in slot_inputs:
            if inputs[k] is not slots[other]:
                return None
        for k in outside_inputs:
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
    tensors = index.tensors
    position = index.position
    consumers = index.consumers
    level = context.level
    end = context.end
    capture = context.capture
    below = context.below
    lower = tensors[lower_position]
    upper = tensors[upper_position]
    if upper.shape != lower.shape:
        return None
    # The lower anchor: every consumer inside the step or independent.
    for consumer in consumers[lower_position]:
        if level[consumer] >= end and not lower_position < consumer <= upper_position:
            return None
    slots = [upper]
    slot_of = {id(upper): 0}
    classes = []
    paths = [None]
    wiring = []
    shapes = []
    outside = []
    cursor = 0
    while cursor < len(slots):
        tensor = slots[cursor]
        node = tensor._ctx
        cls = type(node)
        if (
            cls not in jacobians.JACOBIAN_RULES
            or tensor._hooks
            or (capture is not None and id(tensor) in capture)
        ):
            return None
        if cls is jacobians.MatMul and (np.ndim(node.inputs[0]) < 2 or np.ndim(node.inputs[1]) < 2):
            return None
        classes.append(cls)
        shapes.append((tensor.data.shape, tensor.data.dtype.str))
        codes = []
        for k, (operand, needs) in enumerate(zip(node.inputs, node.needs_input_grad)):
            where = position.get(id(operand)) if needs else None
            if where is None:
                codes.append("const")
            elif operand is lower:
                codes.append("prev")
            elif id(operand) in slot_of:
                codes.append(("slot", slot_of[id(operand)]))
            elif (lower_position < where < upper_position and below[where]) or (
                operand._ctx is not None and len(consumers[where]) == 1 and not below[where]
            ):
                # An internal node, or a side node used only here (x_t @ W of an RNN).
                codes.append(("slot", len(slots)))
                slot_of[id(operand)] = len(slots)
                slots.append(operand)
                paths.append((cursor, k))
            else:
                codes.append("outside")
                outside.append((cursor, k, operand))
        wiring.append(codes)
        cursor += 1
    # Internal slots: consumers inside the step only (no injection into a step's inside).
    slot_positions = {position[id(tensor)] for tensor in slots}
    if context.seeded is not None and any(id(tensor) in context.seeded for tensor in slots[1:]):
        return None
    for tensor in slots[1:]:
        for consumer in consumers[position[id(tensor)]]:
            if consumer not in slot_positions:
                return None
    # Which slots depend on x_{i-1}; each such dependence needs a row-wise Jacobian.
    order = sorted(range(len(slots)), key=lambda slot: slots[slot]._ctx.sequence, reverse=True)
    depends = [False] * len(slots)
    for slot in reversed(order):  # inputs before consumers
        for k, code in enumerate(wiring[slot]):
            on_chain = code == "prev" or (code[0] == "slot" and depends[code[1]])
            if not on_chain:
                continue
            depends[slot] = True
            cls = classes[slot]
            operand = slots[slot]._ctx.inputs[k]
            if cls in jacobians.ELEMENTWISE and operand.shape != shapes[slot][0]:
                return None  # a broadcast chain input: its gradient mixes rows
            if cls is jacobians.MatMul and k != 0:
                return None  # W @ x mixes the rows of x
    if not depends[0]:
        return None
    chain_slots = [slot for slot in order if depends[slot]]
    needs = [tensor._ctx.needs_input_grad for tensor in slots]
    options = [node_options(tensor._ctx) for tensor in slots]
    template = Template(classes, paths, wiring, shapes, chain_slots, order, needs, options)
    return template, Step(lower, upper, slots, outside)


# ----------------------------------------------------------------------------------------------
# The lean path: a chain whose every anchor and inside tensor is read by its step only.


class LeanPlan:
    """What `find_simple_chain` found: one segment whose tensors nothing else reads."""

    def __init__(self, segment):
        self.segment = segment


def find_simple_chain(graph, min_steps=MIN_STEPS, worth_checking=None):
    """The common case without the full analysis: a chain (an RNN with its loss on the last
    state, a chain of elementwise ops) whose anchors and inside tensors are read by their
    own step only. The top step is found near the output, every further step is checked
    against its template on the way down, and a last search over the tensors that are not
    in the chain proves that none of them reads a chain tensor. Returns a LeanPlan, or
    None (the full analysis then decides).

    `worth_checking(steps, ops_per_step, state_shape)`, when given, is asked once the
    walk down the chain knows its length, before the checks: False gives a LeanPlan
    without a segment (walk: a scan of a chain this short would not pay).
    """
    if graph.wanted is not None or len(graph.grads) != 1 or len(graph.roots) != 1:
        return None
    # A window of the path below the output, following the input created last among
    # those that lead on to further ops.
    window = [graph.roots[0]]
    while len(window) < 8 * MAX_PERIOD:
        node = window[-1]._ctx
        if node is None:
            break
        following = None
        for operand, needs in zip(node.inputs, node.needs_input_grad):
            operand_node = operand._ctx if needs else None
            if operand_node is None:
                continue
            if following is not None and operand_node.sequence <= following._ctx.sequence:
                continue
            for other, flag in zip(operand_node.inputs, operand_node.needs_input_grad):
                if flag and other._ctx is not None:  # it leads on to further ops
                    following = operand
                    break
        if following is None:
            break
        window.append(following)
    classes = [type(tensor._ctx) for tensor in window]
    period = _period(classes[::-1])
    if period is None or len(window) < 2 * period + 1:
        return None
    # The top-most tensor from which the classes repeat: the chain's last anchor.
    top = 0
    while top + period < len(window) and any(
        classes[j] is not classes[j + period] for j in range(top, len(window) - period)
    ):
        top += 1
    # The phase: the first anchor from the top whose step is a valid template (the top of
    # the repeating part may still be an output layer of another shape).
    built = None
    for upper in range(top, min(top + period, len(window) - period)):
        built = _lean_step(window[upper + period], window[upper], graph)
        if built is not None:
            break
    if built is None:
        return None
    template, step = built
    anchors = _walk_route(template.route, step)
    if worth_checking is not None and not worth_checking(
        len(anchors) - 1, len(template.classes), template.shapes[0][0]
    ):
        return LeanPlan(None)
    try:
        found = _lean_columns(template, anchors)
    except (AttributeError, IndexError, TypeError):  # pragma: no cover - a malformed node
        return None
    count, tensors, nodes, outside = found
    if count < min_steps or not _no_outside_readers(graph, anchors, tensors, outside, count):
        return None
    # Columns in chain order (step 0 is x_0 -> x_1).
    chain_columns = [column[count - 1 :: -1] for column in tensors]
    chain_nodes = [column[count - 1 :: -1] for column in nodes]
    outside = _shared_or_per_step(
        template, [(slot, k, column[count - 1 :: -1]) for slot, k, column in outside], count
    )
    if outside is None:
        return None
    return LeanPlan(Segment(template, anchors[count::-1], chain_columns, outside, chain_nodes))


def _walk_route(route, top_step):
    """x_n, x_{n-1}, ...: the anchors below the top step, each reached from the one above
    by the template's route of input indices, while creation numbers keep falling (an
    in-place op can make a node's input younger than the node; the walk stops there)."""
    anchors = [top_step.upper, top_step.lower]
    tensor = top_step.lower
    node = tensor._ctx
    if node is None:
        return anchors
    newest = node.sequence
    try:
        while True:
            below = tensor
            for k in route:
                below = below._ctx.inputs[k]
            node = below._ctx
            if node is None:
                anchors.append(below)  # a leaf: x_0, if the step above it checks out
                break
            if node.sequence >= newest:
                break
            anchors.append(below)
            tensor = below
            newest = node.sequence
    except (AttributeError, IndexError, TypeError):
        pass  # the route leads off the graph (a leaf, a constant): the walk ends here
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


def _column(nodes, k):
    """Input `k` of every node, up to the first node that has none."""
    try:
        return [node.inputs[k] for node in nodes]
    except (AttributeError, IndexError, TypeError):
        column = []
        for node in nodes:
            try:
                column.append(node.inputs[k])
            except (AttributeError, IndexError, TypeError):
                break
        return column


def _nodes_of(tensors):
    """The node of every tensor, up to the first value that is not a tensor."""
    try:
        return [tensor._ctx for tensor in tensors]
    except AttributeError:
        nodes = []
        for tensor in tensors:
            node = getattr(tensor, "_ctx", _NOT_A_TENSOR)
            if node is _NOT_A_TENSOR:
                break
            nodes.append(node)
        return nodes


_NOT_A_TENSOR = object()


def _lean_columns(template, anchors):
    """Check the steps below the top step against `template`, one column (one slot over
    every step) at a time, each check a single pass in C where it can be.

    `anchors` are x_n, x_{n-1}, ... as `_walk_route` found them; step i (from the top)
    has upper anchor anchors[i] and lower anchor anchors[i + 1]. Returns (count, tensors,
    nodes, outside): how many steps from the top match, the slot columns (tensors and
    their nodes), and the columns of the outside inputs as (slot, k, [input of every
    step]); all top-down. What is checked is what `_lean_step` built the template from:
    the op class and options, needs_input_grad, shape and dtype (where a constant input
    could change them), no hooks, the wiring by identity, and the creation numbers (every
    slot made after x_{i-1} and before the op that reads it; every outside input made
    before x_{i-1}). Readers from outside the chain are checked by `_no_outside_readers`.
    """
    count = len(anchors) - 1
    tensors = [anchors[:-1]]
    nodes = [_nodes_of(anchors[:-1])]
    for parent, k in template.paths[1:]:
        column = _column(nodes[parent], k)
        count = min(count, len(column))
        tensors.append(column)
        nodes.append(_nodes_of(column))
        count = min(count, len(nodes[-1]))
    good = count
    for slot, check in enumerate(template.checks):
        good = _cut([type(node) for node in nodes[slot]], check[0], good)
    if good < count:
        tensors = [column[:good] for column in tensors]
        nodes = [column[:good] for column in nodes]
    if good == 0:
        return 0, tensors, nodes, []
    lowers = anchors[1 : good + 1]
    for slot, (_, needs, shape, dtype, _, _, _) in enumerate(template.checks):
        column = tensors[slot]
        # needs_input_grad, or None for a tensor with hooks: both checks in one pass.
        flags = [
            node.needs_input_grad if tensor._hooks is None else None
            for tensor, node in zip(column, nodes[slot])
        ]
        good = _cut(flags, needs, good)
        if slot in template.const_slots:
            # A slot's shape and dtype follow from its inputs' (and its options): only a
            # constant input (x_t without grad, a Python number) can change them; x_0 is
            # checked below, the other inputs are checked slots or the same weight.
            good = _cut([tensor.data.shape for tensor in column], shape, good)
            good = _cut([tensor.data.dtype for tensor in column], dtype, good)
        for name, value in template.options[slot]:
            same = [_same_option(getattr(node, name, _NOT_A_TENSOR), value) for node in nodes[slot]]
            good = _cut(same, True, good)
    if good and (
        lowers[good - 1].shape != template.shapes[0][0]
        or lowers[good - 1].data.dtype != template.checks[0][3]
    ):
        good -= 1  # x_0 of another shape or dtype: its step is walked instead
    if good == 0:
        return 0, tensors, nodes, []
    sequences = [[node.sequence for node in column[:good]] for column in nodes]
    bottom = lowers[good - 1]._ctx
    lower_sequences = sequences[0][1:] + [-1 if bottom is None else bottom.sequence]
    for slot in range(1, len(nodes)):
        parent = template.parents[slot]
        good = _cut(list(map(lt, sequences[slot], sequences[parent])), True, good)
    for slot in template.tree_leaves:
        good = _cut(list(map(gt, sequences[slot], lower_sequences)), True, good)
    for slot, k in template.extra_prev:
        good = _cut(list(map(is_, _column(nodes[slot][:good], k), lowers)), True, good)
    for slot, k, other in template.extra_slot_inputs:
        column = _column(nodes[slot][:good], k)
        good = _cut(list(map(is_, column, tensors[other])), True, good)
        good = _cut(list(map(lt, sequences[other], sequences[slot])), True, good)
    outside = []
    for slot, (_, _, _, _, _, _, outside_inputs) in enumerate(template.checks):
        for k in outside_inputs:
            if not good:
                return 0, tensors, nodes, outside
            column = _column(nodes[slot][:good], k)
            outside.append((slot, k, column))
            first = column[0]
            if all(map(is_, column, itertools.repeat(first))):
                made = first._ctx
                if made is not None:
                    # Made before x_{i-1} for every step: x_{i-1} of the lowest step decides.
                    while good and made.sequence > lower_sequences[good - 1]:
                        good -= 1
                continue
            made = [operand._ctx for operand in column]
            made = [-1 if node is None else node.sequence for node in made]
            good = _cut(list(map(le, made, lower_sequences)), True, good)
    return good, tensors, nodes, outside


def _no_outside_readers(graph, anchors, tensors, outside, count):
    """True when no tensor outside the top `count` steps reads one of their tensors (other
    than x_n, which the output side reads) or their bottom anchor x_0.

    Every tensor of the graph that is not in the chain is reached from the output without
    entering the chain, or from the chain's outside inputs (weights, x_t): those two
    searches see every reader. Chain tensors were made after x_0 and no later than x_n,
    so only a tensor made in that span is looked up among them (the set of their ids is
    built the first time one is met, which an RNN with its loss on the last state never
    does).
    """
    top = anchors[0]
    bottom = anchors[count]
    high = top._ctx.sequence
    low = -1 if bottom._ctx is None else bottom._ctx.sequence
    protected = None

    def in_chain(tensor):
        nonlocal protected
        if tensor is bottom:
            return True
        node = tensor._ctx
        if node is None or not low < node.sequence <= high:
            return False
        if protected is None:
            protected = set(
                map(id, itertools.chain.from_iterable(column[:count] for column in tensors))
            )
        return id(tensor) in protected

    starts = list(graph.roots)
    seen = {id(root) for root in starts}
    for _, _, column in outside:
        column = column[:count]
        if all(map(is_, column, itertools.repeat(column[0]))):
            column = column[:1]  # a weight shared by every step: one look is enough
        for operand in column:
            key = id(operand)
            if key in seen:
                continue
            if in_chain(operand):
                return False
            seen.add(key)
            starts.append(operand)
    stack = starts
    while stack:
        node = stack.pop()._ctx
        if node is None:
            continue
        for operand, needs in zip(node.inputs, node.needs_input_grad):
            if not needs:
                continue
            key = id(operand)
            if key in seen or operand is top:
                continue
            if in_chain(operand):
                return False
            seen.add(key)
            stack.append(operand)
    return True


def _absorbed(operand, lower):
    """Whether an input of a step belongs to the step: made by an op after x_{i-1} was."""
    node = operand._ctx
    if node is None:
        return False
    return lower._ctx is None or node.sequence > lower._ctx.sequence


def _lean_step(lower, upper, graph):
    """`_step` for the lean path: the step's tensors are the inputs made after x_{i-1}."""
    if upper.shape != lower.shape or upper._ctx is None:
        return None
    capture = graph.capture
    slots = [upper]
    slot_of = {id(upper): 0}
    classes, paths, wiring, shapes, outside = [], [None], [], [], []
    cursor = 0
    while cursor < len(slots):
        tensor = slots[cursor]
        node = tensor._ctx
        cls = type(node)
        if cls not in jacobians.JACOBIAN_RULES or tensor._hooks:
            return None
        if capture is not None and id(tensor) in capture:
            return None
        if cls is jacobians.MatMul and (np.ndim(node.inputs[0]) < 2 or np.ndim(node.inputs[1]) < 2):
            return None
        classes.append(cls)
        shapes.append((tensor.data.shape, tensor.data.dtype.str))
        codes = []
        for k, (operand, needs) in enumerate(zip(node.inputs, node.needs_input_grad)):
            if not needs or not isinstance(operand, Tensor):
                codes.append("const")
            elif operand is lower:
                codes.append("prev")
            elif id(operand) in slot_of:
                codes.append(("slot", slot_of[id(operand)]))
            elif _absorbed(operand, lower):
                codes.append(("slot", len(slots)))
                slot_of[id(operand)] = len(slots)
                slots.append(operand)
                paths.append((cursor, k))
            else:
                codes.append("outside")
                outside.append((cursor, k, operand))
        wiring.append(codes)
        cursor += 1
    order = sorted(range(len(slots)), key=lambda slot: slots[slot]._ctx.sequence, reverse=True)
    depends = [False] * len(slots)
    for slot in reversed(order):
        for k, code in enumerate(wiring[slot]):
            if not (code == "prev" or (code[0] == "slot" and depends[code[1]])):
                continue
            depends[slot] = True
            cls = classes[slot]
            operand = slots[slot]._ctx.inputs[k]
            if cls in jacobians.ELEMENTWISE and operand.shape != shapes[slot][0]:
                return None
            if cls is jacobians.MatMul and k != 0:
                return None
    if not depends[0]:
        return None
    chain_slots = [slot for slot in order if depends[slot]]
    needs = [tensor._ctx.needs_input_grad for tensor in slots]
    options = [node_options(tensor._ctx) for tensor in slots]
    template = Template(classes, paths, wiring, shapes, chain_slots, order, needs, options)
    return template, Step(lower, upper, slots, outside)
