"""The scan schedulers: backward along a chain as one prefix scan (docs/scan.md 1, 2, 5).

`ScanScheduler.run(graph)` is the engine's walk (`walk`: the newest pending node first)
that scans a chain when it reaches the chain's top anchor x_n (`scan_at`): a chain that
`tg.scan` declared (declared.py) or one the finder found in a hand-written loop (`find`).
Before the scan the walk goes on through the readers of the chain's tensors made since
its first step (a readout and a loss at every step), which leaves the injections e_i
waiting at the anchors. Then `SegmentRun` builds the step Jacobians of every step by one
vectorised call per op (the saved values of all steps stacked), the scan of
[(0, g_n), (J_n, e_{n-1}), ..., (J_1, e_0)] gives every g_i, and one vectorised vjp per op
sends the side gradients (weights get the sum over the steps); x_0 then receives g_0 and
the walk goes on. A chain that cannot be scanned says why (`CannotScan`, shown by
`backward_plan`) and is walked.

Under `create_graph=True` (gradients that are themselves differentiable) and in
`detect_anomaly()` mode every scan scheduler is the sequential walk: the batched calls
would not be recorded node by node.
"""

import gc
import heapq

import numpy as np

from ..autograd.graph import ScannedSegment, unbroadcast
from ..mode import STATE
from ..ops.unbind import source_gradient
from . import jacobians, scans
from .batched import BatchedSlot, ReleaseAll
from .declared import declared_at, declared_in, first_sequence, segment_of
from .loops import find
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


def _send_rows(graph, operands, rows):
    """Send row i of the stack `rows` to `operands[i]`, in its dtype (a per-step input
    that needs a gradient: the lower layer's states, read by the upper layer's steps). The
    rows of one tensor (a `tg.scan`'s inputs) get one send to it."""
    whole = source_gradient(operands, rows)
    if whole is not None:
        graph.send(*whole)
        return
    for operand, row in zip(operands, rows, strict=True):
        dtype = operand.data.dtype
        graph.send(operand, row if row.dtype == dtype else row.astype(dtype))


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

    def _injections(self, pending):
        """The gradients waiting at the anchors x_0 .. x_{n-1} (`pending`, None where none
        arrived), stacked, zeros where none arrived."""
        if all(value is not None for value in pending):  # one at every anchor: one stack
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
        pending = []
        if graph.grads:  # (none pending anywhere: none at the anchors, no pass over them)
            pending = [graph.pop_grad(anchor) for anchor in anchors[:-1]]
        injected = any(value is not None for value in pending)
        injections = self._injections(pending) if injected else None
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
        self.refusals = []  # why the last backward's chains were walked (`CannotScan`)

    def choose(self, segment):
        """(method, block size) for a segment; `auto` overrides this with its cost model."""
        return self.method, self.block_size

    def find(self, graph):
        """The chains of a graph that declares none: {id(top anchor): Segment} (loops.py)."""
        return find(graph, self.min_steps)

    def run(self, graph):
        if graph.create_graph or STATE.anomaly:
            graph.run_sequential()
            return
        self.refusals = []
        if graph.wanted is None and declared_in(graph.roots):  # tg.scan's chains: no search
            walk(graph, self, {}, True)
            return
        # The finder and the batching make many small lists; pausing the cyclic garbage
        # collector keeps it from re-scanning the whole graph meanwhile (none of it is
        # cyclic). Not for a plain walk: a collection held back over it lands on the next
        # allocation (an MLP's backward with `auto` took 2-50x the walk's time so).
        collecting = gc.isenabled()
        gc.disable()
        try:
            found = self.find(graph)
            if found:
                walk(graph, self, found, False)
        finally:
            if collecting:
                gc.enable()
        if not found:
            graph.run_sequential()


def walk(graph, scheduler, found, declared):
    """The engine's walk (the newest pending node first), scanning a chain when it reaches
    the chain's top anchor: a declared one (`tg.scan`, declared.py, if `declared`) or one
    the finder `found` ({id(top anchor): Segment}); the leaves last. A chain that cannot
    be scanned (`CannotScan`: the reason kept in the scheduler's `refusals`) is walked."""
    heap = graph.heap = []
    graph.leaves = []  # (sent leaves stay pending in `graph.grads` for the walk below)
    for key in graph.grads:
        node = graph.tensors[key]._ctx
        if node is not None:
            heap.append((-node.sequence, key))
    heapq.heapify(heap)
    chains = Chains(graph, found, declared)
    try:
        while heap:
            key = heapq.heappop(heap)[1]
            if key not in graph.grads:
                continue  # taken by a scan (x_0's injection), queued again when it sent g_0
            tensor = graph.tensors[key]
            if chains.top(key, tensor):
                try:
                    scan_at(graph, scheduler, chains.segment(tensor, scheduler.min_steps), chains)
                    continue
                except CannotScan as reason:
                    scheduler.refusals.append(str(reason))
            graph.owned.discard(key)
            graph.visit(tensor, graph.grads.pop(key))
    finally:
        graph.heap = graph.leaves = None
    graph.run_sequential()  # the leaves


class Chains:
    """The chains a walk scans: those the finder found, by their top anchor's id, and,
    where the graph declares chains, those `tg.scan` declared (their segments made once)."""

    def __init__(self, graph, found, declared):
        self.found = dict(found)
        self.declared = declared
        self.capture = graph.capture

    def top(self, key, tensor):
        """Whether `tensor` (of id `key`) is the top anchor of a chain."""
        return key in self.found or (self.declared and declared_at(tensor) is not None)

    def segment(self, top, min_steps):
        """The Segment whose top anchor is `top`, or CannotScan."""
        segment = self.found.get(id(top))
        if segment is None:
            segment = segment_of(declared_at(top), top, self.capture, min_steps)
            self.found[id(top)] = segment
        return segment


def scan_at(graph, scheduler, segment, chains):
    """Scan `segment`, whose top anchor the walk has reached (CannotScan, with nothing
    sent to the segment, when it cannot be).

    Before the scan, the walk goes on below the top through the pending tensors made
    since the segment's first node: the readouts of the steps (y_t = h_t V, its loss),
    which send the injections e_t to the anchors. Their gradients are complete: a step
    reads only its own tensors, its carry and its outside inputs, so nothing of the
    segment reads them. What waits until after the scan: the anchors (the scan takes
    their injections), an outside input made in that range (the lower layer's h1_t of a
    stacked loop: the scan sends its gradient) with what it is made from since the
    segment's first node (the segment's `held`, which the finder checked; a declared
    chain's steps read no such input: `segment_of` checked), and another chain met there
    (two RNNs in one loop), scanned when the walk reaches its top again. (A readout of a
    tensor inside a step, not its carry, sends its part through that step's ops now, and
    the scan sends the chain's part later: the rules are linear in the gradient, so the
    sum is the walk's.)"""
    method, block_size = scheduler.choose(segment)
    if method == "sequential":
        raise CannotScan(f"{scheduler.name}: the walk is estimated cheaper")
    runner = SegmentRun(graph, segment)
    bound = first_sequence(segment)
    waiting = set(segment.held or ())
    own = None  # the segment's tensors' ids, once another chain is met
    waiting.update(id(anchor) for anchor in segment.anchors)
    heap = graph.heap
    kept = []
    try:
        while heap and -heap[0][0] > bound:
            entry = heapq.heappop(heap)
            key = entry[1]
            if key not in graph.grads:
                continue
            tensor = graph.tensors[key]
            if key not in waiting and chains.top(key, tensor):
                kept.append(entry)  # (put back if this scan is refused)
                own = segment_ids(segment) if own is None else own
                waiting |= _another_chain(chains, tensor, scheduler, bound, own)
                if key in waiting:
                    continue
                kept.pop()
            if key in waiting:
                kept.append(entry)
                continue
            graph.owned.discard(key)
            graph.visit(tensor, graph.grads.pop(key))
        runner.run(method, block_size)
    finally:
        for entry in kept:  # (pending still unless the scan took them)
            heapq.heappush(heap, entry)
    # Tell the graph (and whoever watches it: viz) which chain was scanned, and how.
    graph.scanned_segments.append(
        ScannedSegment(scheduler.name, segment.anchors, method, block_size)
    )


def _another_chain(chains, top, scheduler, bound, own):
    """The ids of the tensors of the chain whose top anchor `top` the walk meets before a
    scan (made after creation number `bound`), which wait for that scan; none (the chain
    is walked) if it cannot be scanned; CannotScan if it is made from the tensors of the
    segment to be scanned (`own`)."""
    try:
        other = chains.segment(top, scheduler.min_steps)
    except CannotScan as reason:
        scheduler.refusals.append(str(reason))
        return set()
    other_ids = segment_ids(other)
    if not other_ids.isdisjoint(own):
        raise CannotScan("two chains share tensors")
    return other_ids | made_since(outside_inputs(other, bound), bound, own)


def outside_inputs(segment, bound):
    """The inputs of the segment's steps from outside them (per-step and shared) that were
    made after creation number `bound`."""
    operands = [operand for column in segment.outside for operand in column.operands]
    for codes in segment.template.wiring:
        operands.extend(
            code[1] for code in codes if isinstance(code, tuple) and code[0] == "shared"
        )
    return [
        operand
        for operand in operands
        if operand._ctx is not None and operand._ctx.sequence > bound
    ]


def segment_ids(segment):
    """The ids of a segment's tensors: its anchors and its steps' tensors."""
    ids = {id(anchor) for anchor in segment.anchors}
    for column in segment.columns:
        ids.update(map(id, column))
    return ids


def made_since(tensors, bound, own):
    """The ids of `tensors` and of the tensors made after creation number `bound` that
    they are made from; CannotScan if one is a tensor of the segment (`own`)."""
    seen = set()
    stack = list(tensors)
    while stack:
        tensor = stack.pop()
        if id(tensor) in seen:
            continue
        if id(tensor) in own:
            raise CannotScan("a tensor read by the chain's steps is made from the chain")
        seen.add(id(tensor))
        for operand in tensor._ctx.inputs:
            node = getattr(operand, "_ctx", None)
            if node is not None and node.sequence > bound:
                stack.append(operand)
    return seen
