"""The scan schedulers: backward along a chain as one prefix scan (docs/scan.md 1, 2, 5).

`ScanScheduler.run(graph)`:

1. finds the chains (finder.py: the first look for a chain read by its own steps only,
   else the full analysis); without one it is the sequential walk;
2. walks the *independent* tensors first (per-step losses and their sum), which leaves the
   injections e_i waiting at the chain's anchors;
3. walks the rest of the graph in reverse topological order; on reaching the top anchor
   x_n of a segment it scans the segment in one go: the step Jacobians of every step are
   built by one vectorised call per op (the saved values of all steps stacked), the scan
   of [(0, g_n), (J_n, e_{n-1}), ..., (J_1, e_0)] gives every g_i, and one vectorised vjp
   per op sends the side gradients (weights get the sum over the steps); x_0 then receives
   g_0 and the walk goes on.

Under `create_graph=True` (gradients that are themselves differentiable) and in
`detect_anomaly()` mode every scan scheduler is the sequential walk: the batched calls
would not be recorded node by node.
"""

import gc
import heapq
import itertools
from operator import attrgetter, is_

import numpy as np

from ..autograd.graph import ScannedSegment, unbroadcast
from ..mode import STATE
from ..ops.unbind import source_gradient
from . import jacobians, scans
from .batched import BatchedSlot, ReleaseAll
from .below import next_chain_below, pending_tensors
from .declared import declared_at, declared_in, first_sequence, segment_of
from .finder import find_chains, full_analysis
from .steps import CannotScan


def _per_step_sum(grad, count, shape, node, index):
    """A stacked gradient (count, *broadcast shape) summed to (count, *shape) per step, by
    the engine's `unbroadcast` on the stack (the leading axis kept)."""
    grad = np.asarray(grad)
    padded = (1,) * (grad.ndim - 1 - len(shape)) + tuple(shape)
    if grad.shape[0] != count:
        grad = np.broadcast_to(grad, (count,) + grad.shape[1:])
    summed = unbroadcast(grad, (count,) + padded, node, index)
    return summed.reshape((count,) + tuple(shape))


_GET_DTYPE = attrgetter("_data.dtype")


def _send_rows(graph, operands, rows):
    """Send row i of the stack `rows` to `operands[i]` (in its dtype): a per-step input
    that needs a gradient (the lower layer's states, read by the upper layer's steps),
    thousands of them, so the sends are one `map` and the rows are cast only if a
    dtype differs. The rows of one tensor (a `tg.scan`'s inputs) get one send to it."""
    whole = source_gradient(operands, rows)
    if whole is not None:
        graph.send(*whole)
        return
    dtypes = list(map(_GET_DTYPE, operands))
    if dtypes.count(rows.dtype) != len(dtypes):
        rows = list(map(np.ndarray.astype, rows, dtypes))
    list(map(graph.send, operands, rows))


class SegmentRun:
    """Scans one segment and finishes its side branches (see the module docstring)."""

    def __init__(self, graph, segment):
        self.graph = graph
        self.segment = segment
        template = segment.template
        self.count = segment.length
        stacks = []
        self.batched = [
            BatchedSlot(nodes, template.shapes[slot][0], np.dtype(template.shapes[slot][1]), stacks)
            for slot, nodes in enumerate(segment.nodes)
        ]
        graph.visited.append(
            ReleaseAll(
                [
                    nodes
                    for nodes, batched in zip(segment.nodes, self.batched)
                    if batched.releasable
                ],
                [
                    nodes
                    for nodes, batched in zip(segment.nodes, self.batched)
                    if batched.saves and not batched.releasable
                ],
            )
        )
        self.state_shape = tuple(segment.state_shape)
        self.dtype = segment.anchors[-1].data.dtype
        self.depends = set(template.chain_slots)
        self.outside_columns = {(slot, k): operands for slot, k, operands in segment.outside}

    # -- Jacobians -----------------------------------------------------------------------------

    def jacobian(self, start, stop):
        """The structured Jacobian of steps start..stop-1 (0-based, in chain order)."""
        template = self.segment.template
        adjoint = {0: jacobians.IDENTITY}
        total = None
        for slot in template.chain_slots:  # consumers before inputs
            current = adjoint.pop(slot)
            node = self.batched[slot].node(start, stop)
            for k, code in enumerate(template.wiring[slot]):
                if code == "prev":
                    total = jacobians.add(total, jacobians.compose(current, node.jacobian(k)))
                elif isinstance(code, tuple) and code[0] == "slot" and code[1] in self.depends:
                    target = code[1]
                    contribution = jacobians.compose(current, node.jacobian(k))
                    adjoint[target] = jacobians.add(adjoint.get(target), contribution)
        return total

    def elements(self, injections):
        """`build(start, stop)` for the scan: elements (J_i, e_{i-1}) from the top down
        (J_i alone when `injections` is None: no gradient enters the chain's inside)."""
        count = self.count
        diagonal = self.segment.jacobian_kind == "diagonal"

        def build(start, stop):
            low, high = count - stop, count - start  # steps low..high-1, reversed
            structured = self.jacobian(low, high)
            if diagonal:
                matrices = jacobians.as_diagonal(
                    structured, self.state_shape, high - low, self.dtype
                )
            else:
                matrices = jacobians.as_dense(structured, self.state_shape, high - low, self.dtype)
            if injections is None:
                return (matrices[::-1],)
            return (matrices[::-1], injections[low:high][::-1])

        return build

    # -- side branches -------------------------------------------------------------------------

    def finish_steps(self, start, stop, upper_grads):
        """Send the side gradients of steps start..stop-1, given the gradients of their
        upper anchors (stacked in chain order)."""
        template = self.segment.template
        graph = self.graph
        count = stop - start
        pending = {0: upper_grads}
        for slot in template.order:  # consumers before inputs
            grad = pending.pop(slot, None)
            if grad is None:
                continue
            wiring = template.wiring[slot]
            batched = self.batched[slot]
            needs = tuple(
                flag and code != "prev"
                for flag, code in zip(batched.first.needs_input_grad, wiring)
            )
            if not any(needs):
                continue
            node = batched.node(start, stop, needs)
            if batched.first.jacobian_kind(0) == "side" and np.ndim(grad) == 1:
                # A loss per step: one number each, broadcast over that step's values.
                ndim = max(np.ndim(operand) for operand in batched.first.inputs)
                grad = np.reshape(grad, grad.shape + (1,) * ndim)
            results = node.backward(grad)
            for k, code in enumerate(wiring):
                result = results[k]
                if result is None or not needs[k] or code == "const":
                    continue
                if code == "step":
                    operands = self.outside_columns[(slot, k)][start:stop]
                    shape = operands[0].shape
                    per_step = _per_step_sum(result, count, shape, batched.first, k)
                    _send_rows(graph, operands, per_step)
                elif code[0] == "shared":
                    operand = code[1]
                    value = unbroadcast(np.asarray(result), operand.shape, batched.first, k)
                    value = value.astype(operand.data.dtype, copy=False)
                    graph.send(operand, value)
                else:  # ("slot", m)
                    target = code[1]
                    shape = template.shapes[target][0]
                    value = _per_step_sum(result, count, shape, batched.first, k)
                    previous = pending.get(target)
                    pending[target] = value if previous is None else previous + value

    # -- the whole segment ---------------------------------------------------------------------

    def _injections(self, pending, missing):
        """The gradients waiting at the anchors x_0 .. x_{n-1} (`pending`, None where none
        arrived: `missing`), stacked, zeros where none arrived."""
        if not any(missing):  # one at every anchor (a chain below a scan): one stack
            return np.array(pending, dtype=self.dtype)
        injections = np.zeros((self.count,) + self.state_shape, dtype=self.dtype)
        for index, value in enumerate(pending):
            if value is not None:
                injections[index] = value
        return injections

    def run(self, method, block_size):
        graph = self.graph
        if graph.scan_watched(self, method, block_size):  # (tg.compile: one kernel)
            return
        anchors = self.segment.anchors
        count = self.count
        top = anchors[-1]
        seed = graph.pop_grad(top)
        seed = np.zeros(self.state_shape, dtype=self.dtype) if seed is None else np.asarray(seed)
        injected = False
        if graph.grads:  # (none pending anywhere: none at the anchors, no pass over them)
            pending = list(map(graph.grads.pop, map(id, anchors[:-1]), itertools.repeat(None)))
            missing = list(map(is_, pending, itertools.repeat(None)))
            injected = not all(missing)
        injections = self._injections(pending, missing) if injected else None
        diagonal = self.segment.jacobian_kind == "diagonal"
        if injected:
            operator = (
                scans.DiagonalAffineCompose(seeded=True)
                if diagonal
                else scans.AffineCompose(seeded=True)
            )
        else:
            # Nothing enters the chain between its ends (a loss on the last state only):
            # the scan composes the Jacobians alone, half the work of the affine pairs.
            operator = scans.SeededProduct(diagonal)
            injections = None
        bottom = []

        def sink(first_position, stop_position, prefixes):
            # Position p holds g_{count - p}: the gradient of step (count - p)'s upper
            # anchor, or of x_0 at p == count.
            vectors = prefixes[0]
            low = count - stop_position  # 0-based steps whose upper anchors are here
            high = count - first_position
            if stop_position == count + 1:
                bottom.append(vectors[-1])
                vectors = vectors[:-1]
                low += 1
            if high > low:
                self.finish_steps(low, high, vectors[::-1])

        scans.scan_from_prefix(
            method,
            (seed[None].astype(self.dtype, copy=False),),
            self.elements(injections),
            count,
            operator,
            block_size=block_size,
            sink=sink,
        )
        lower = anchors[0]
        graph.send(lower, np.array(bottom[0], dtype=lower.data.dtype))


class ScanScheduler:
    """Backward with chains scanned by `method` ("hillis-steele", "blelloch", "blocked").

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([0.5, -0.3], requires_grad=True)
    >>> y = x
    >>> for _ in range(8):
    ...     y = y.tanh()
    >>> y.sum().backward(scheduler="blelloch")
    >>> x.grad.shape
    (2,)
    """

    def __init__(self, method, block_size=256, min_steps=4):
        if method not in ("sequential", "hillis-steele", "blelloch", "blocked"):
            raise ValueError(f"unknown scan method {method!r}")
        self.method = method
        self.name = method
        self.block_size = block_size
        self.min_steps = min_steps
        self.refusals = []  # why the last backward's declared chains were walked

    def choose(self, segment):
        """(method, block size) for a segment; `auto` overrides this with its cost model."""
        return self.method, self.block_size

    # Whether to check a chain of `steps` steps once its length is known; `auto` asks its
    # cost model (None: always).
    worth_checking = None

    def worth_analysing(self, graph, full=False):
        """Whether to look for chains at all (`full`: with the full analysis, once the
        first look found none); `auto` asks its cost model."""
        return True

    def run(self, graph):
        if graph.create_graph or STATE.anomaly:
            graph.run_sequential()
            return
        if graph.wanted is None and declared_in(graph.roots):  # a tg.scan's chain: nothing to find
            walk(graph, self)
            return
        if not self.worth_analysing(graph):
            graph.run_sequential()
            return
        # The analysis and the batching make many small lists; pausing the cyclic garbage
        # collector keeps it from re-scanning the whole graph meanwhile (none of it is cyclic).
        collecting = gc.isenabled()
        gc.disable()
        try:
            window = self.window(graph)
            plan = find_chains(graph, self.min_steps, self.worth_checking, False, window)
            if plan is None and self.worth_analysing(graph, full=True):
                plan = full_analysis(graph, self.min_steps)
            chosen = self.chosen_segments(plan)
            if not chosen:
                pass  # walked below
            elif plan.index is None:  # the first look's chain: no index of the graph
                execute_simple(graph, plan, chosen, self.name)
                self.scan_below(graph, plan.beside)
            else:
                execute(graph, plan, chosen, self.name)
                self.scan_below(graph, plan.beside)
            graph.run_sequential()
        finally:
            if collecting:
                gc.enable()

    def window(self, graph):
        """The walk down from the output if already made (`auto`'s gate), else None."""
        return None

    def chosen_segments(self, plan):
        """[(segment, method, block size)] of the segments of `plan` to scan."""
        chosen = []
        for segment in [] if plan is None else plan.segments:
            method, block_size = self.choose(segment)
            if method != "sequential":
                chosen.append((segment, method, block_size))
        return chosen

    def scan_below(self, graph, known=None):
        """After the scans, the chains below them (`below.py`: the lower layer of a
        stacked RNN), each scanned once every gradient from above has arrived; `known`:
        the chains checked beside the first look's (not checked again)."""
        known = dict(known or {})

        def walk_one(tensor):
            graph.visit(tensor, graph.pop_grad(tensor))

        while True:
            plan = next_chain_below(
                graph,
                lambda: pending_tensors(graph),
                walk_one,
                self.min_steps,
                self.worth_checking,
                known,
            )
            if plan is None:
                return
            known.update(plan.beside)
            (segment,) = plan.segments
            method, block_size = self.choose(segment)
            if method == "sequential":
                return
            try:
                runner = SegmentRun(graph, segment)
            except ValueError:  # steps whose saved values do not stack: walk them
                return
            _walk(graph, plan.independent)
            _scan(graph, (segment, runner, method, block_size), self.name)


def execute(graph, plan, chosen, name):
    """Walk the graph with the chosen segments scanned (see the module docstring).

    Independent tensors first; then every position from the top down to the lowest
    segment's top anchor, scanning each segment on reaching it; below the last segment
    the engine's own sequential walk takes over (every tensor above it is done, so the
    pending gradients there are complete in the walk's order), after the caller's
    `scan_below`.
    """
    tensors = plan.index.tensors
    position = plan.index.position
    pop_grad = graph.pop_grad
    visit = graph.visit
    independent = set(plan.independent)
    for where in reversed(plan.independent):
        tensor = tensors[where]
        grad = pop_grad(tensor)
        if grad is not None:
            visit(tensor, grad)
    tops = {
        position[id(segment.anchors[-1])]: (segment, method, block_size)
        for segment, method, block_size in chosen
    }
    lowest = min(tops)
    for where in range(len(tensors) - 1, lowest - 1, -1):
        found = tops.get(where)
        if found is not None:
            segment, method, block_size = found
            try:
                runner = SegmentRun(graph, segment)
            except ValueError:  # steps whose saved values do not stack: walk them
                runner = None
            if runner is not None:
                runner.run(method, block_size)
                note_scanned(graph, name, segment, method, block_size)
                continue
        if where in independent:
            continue
        tensor = tensors[where]
        grad = pop_grad(tensor)
        if grad is not None:
            visit(tensor, grad)


def execute_simple(graph, plan, chosen, name):
    """The first look's chains: walk the independent tensors (the output side, a readout
    and a loss at every step; newest first, as the engine's walk would), scanning a
    nested chain on reaching its top anchor (after walking its own independent tensors),
    then scan the main chain; the caller's `scan_below` and the engine's walk finish the
    graph (also when the steps' saved values do not stack, and nothing was scanned)."""
    try:
        runners = [
            (segment, SegmentRun(graph, segment), method, block_size)
            for segment, method, block_size in chosen
        ]
    except ValueError:  # steps whose saved values do not stack: walk them
        return
    nested = {id(entry[0].anchors[-1]): entry for entry in runners if id(entry[0]) in plan.nested}
    for tensor in plan.independent:
        entry = nested.get(id(tensor))
        if entry is not None:
            _walk(graph, plan.nested[id(entry[0])])
            _scan(graph, entry, name)
        else:
            _walk(graph, (tensor,))
    for entry in runners:
        if id(entry[0]) not in plan.nested:
            _scan(graph, entry, name)


def _walk(graph, tensors):
    for tensor in tensors:
        grad = graph.pop_grad(tensor)
        if grad is not None:
            graph.visit(tensor, grad)


def _scan(graph, entry, name):
    segment, runner, method, block_size = entry
    runner.run(method, block_size)
    note_scanned(graph, name, segment, method, block_size)


def note_scanned(graph, name, segment, method, block_size):
    """Tell the graph (and whoever watches it: viz) which chain was scanned, and how."""
    graph.scanned_segments.append(ScannedSegment(name, segment.anchors, method, block_size))


def walk(graph, scheduler):
    """The engine's walk (the newest pending node first), scanning a declared chain
    (`tg.scan`, declared.py) when it reaches the chain's top anchor; the leaves last."""
    scheduler.refusals = []
    heap = graph.heap = []
    graph.leaves = []  # (sent leaves stay pending in `graph.grads` for the walk below)
    for key in graph.grads:
        node = graph.tensors[key]._ctx
        if node is not None:
            heap.append((-node.sequence, key))
    heapq.heapify(heap)
    try:
        while heap:
            key = heapq.heappop(heap)[1]
            if key not in graph.grads:
                continue  # taken by a scan (x_0's injection), queued again when it sent g_0
            tensor = graph.tensors[key]
            declaration = declared_at(tensor)
            if declaration is not None and scan_declared(graph, scheduler, declaration, tensor):
                continue
            graph.owned.discard(key)
            graph.visit(tensor, graph.grads.pop(key))
    finally:
        graph.heap = graph.leaves = None
    graph.run_sequential()  # the leaves


def scan_declared(graph, scheduler, declaration, top):
    """Scan the declared chain whose top anchor the walk has reached; False (the reason
    kept in the scheduler's `refusals`) when it cannot be scanned: the walk goes on.

    Before the scan, the walk goes on below the top through the pending tensors made
    since the chain's first step, but for its anchors: the readouts of the steps (y_t =
    h_t V, its loss), which send the injections e_t to the anchors. None of them leads
    back into the chain (a step reads only its own tensors, its carry and tensors made
    before the chain: `segment_of` checks), so their gradients are complete. (A readout
    of a tensor inside a step, not its carry, sends its part through that step's ops
    now, and the scan sends the chain's part later: the rules are linear in the
    gradient, so the sum is the walk's.)"""
    try:
        segment = segment_of(declaration, top, graph.capture, scheduler.min_steps)
        method, block_size = scheduler.choose(segment)
        if method == "sequential":
            raise CannotScan(f"{scheduler.name}: the walk is estimated cheaper")
        runner = SegmentRun(graph, segment)
    except CannotScan as reason:
        scheduler.refusals.append(str(reason))
        return False
    anchors = set(map(id, segment.anchors))
    bound = first_sequence(segment)
    heap = graph.heap
    while heap and -heap[0][0] > bound:
        entry = heapq.heappop(heap)
        if entry[1] in anchors:
            continue  # an injection: the scan takes it from `graph.grads`
        graph.owned.discard(entry[1])
        graph.visit(graph.tensors[entry[1]], graph.grads.pop(entry[1]))
    runner.run(method, block_size)
    note_scanned(graph, scheduler.name, segment, method, block_size)
    return True
