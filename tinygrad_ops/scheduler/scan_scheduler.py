"""The scan schedulers: backward along a chain as one prefix scan (docs/scan.md sections 1,
2 and 5; its "The code, from the recurrence" reads this file).

`ScanScheduler.run(graph)` is the engine's walk (`walk`) that scans a chain, declared by
`tg.scan` (declared.py) or found in a hand-written loop (loops.py), when it reaches the
chain's top anchor x_n (`scan_at`, `SegmentRun`). A chain that cannot be scanned says why
(`CannotScan`) and is walked; so is every graph under `create_graph=True` or
`detect_anomaly()` (docs/scan.md, "What is walked instead").
"""

import functools
import heapq

import numpy as np

from ..autograd.graph import ScannedSegment, unbroadcast
from ..mode import STATE, gc_paused
from ..ops.jacobian import IDENTITY
from ..ops.unbind import source_gradient
from . import jacobians, scans
from .batched import BatchedSlot
from .declared import declared_at, declared_in, segment_of
from .loops import find
from .steps import CannotScan


def _per_step_sum(grad, count, shape, node, index):
    """A stacked gradient (count, *broadcast shape) summed to (count, *shape) per step, by
    the engine's `unbroadcast` on the stack (the leading axis kept)."""
    grad = np.asarray(grad)
    padded = (1,) * (grad.ndim - 1 - len(shape)) + tuple(shape)
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
        graph.send(operand, row.astype(operand.data.dtype, copy=False))


class SegmentRun:
    """Scans one segment (`run`): its steps' saved values stacked (batched.py), every step's
    Jacobian built by one vectorised call per op (`jacobian`, from the ops' own rules), the
    scan (`scans.chain_scan`), and the side gradients sent by one vectorised vjp per op
    (`finish_steps`: the weights get the sum over the steps)."""

    def __init__(self, graph, segment):
        self.graph = graph
        self.segment = segment
        template = segment.template
        stacks = []  # (shared by the slots: batched._stack)
        self.batched = [
            BatchedSlot(nodes, shape, options, stacks)
            for nodes, shape, options in zip(segment.nodes, template.shapes, template.options)
        ]
        graph.visited.extend(self.batched)  # (their nodes' buffers go with the graph's)

    def jacobian(self, start, stop):
        """The structured Jacobian of steps start..stop-1 (0-based, in chain order): the
        ops' Jacobian rules chained from x_i down to x_{i-1}, summed where paths meet."""
        template = self.segment.template
        adjoint = {0: IDENTITY}  # slot (or "prev": x_{i-1}) -> d x_i / d slot
        for slot in template.chain_slots:  # consumers before inputs
            current = adjoint.pop(slot)
            batched = self.batched[slot]
            node = batched.node(start, stop, batched.first.needs_input_grad)
            for k, target in template.chain_inputs[slot]:
                contribution = jacobians.compose(current, node.jacobian(k))
                if target in adjoint:
                    contribution = jacobians.add(adjoint[target], contribution)
                adjoint[target] = contribution
        return adjoint["prev"]

    def elements(self, start, stop, injections):
        """Elements start..stop-1 of the scan after the seed, from the top down: (J_i,
        e_{i-1}) for steps count-stop .. count-start-1 in reverse (J_i alone when
        `injections` is None)."""
        segment = self.segment
        low, high = segment.length - stop, segment.length - start
        dtype = segment.anchors[-1].data.dtype
        matrices = jacobians.stacked(
            self.jacobian(low, high), segment.jacobian_kind, segment.state_shape, high - low, dtype
        )
        if injections is None:
            return (matrices[::-1],)
        return (matrices[::-1], injections[low:high][::-1])

    def finish_steps(self, start, stop, upper_grads):
        """Send the side gradients of steps start..stop-1, given the gradients of their
        upper anchors (stacked in chain order)."""
        segment = self.segment
        template = segment.template
        count = stop - start
        per_step = {(column.slot, column.index): column.operands for column in segment.outside}
        pending = {0: upper_grads}
        for slot in template.order:  # consumers before inputs
            grad = pending.pop(slot, None)
            wiring = template.wiring[slot]
            batched = self.batched[slot]
            needs = tuple(
                flag and code != "prev"
                for flag, code in zip(batched.first.needs_input_grad, wiring)
            )
            if grad is None or not any(needs):
                continue
            if batched.first.jacobian_kind(0) == "side" and np.ndim(grad) == 1:
                # A loss per step: one number each, broadcast over that step's values.
                ndim = max(np.ndim(operand) for operand in batched.first.inputs)
                grad = np.reshape(grad, grad.shape + (1,) * ndim)
            results = batched.node(start, stop, needs).backward(grad)
            for k, code in enumerate(wiring):
                result = results[k]
                if result is None or not needs[k]:  # (nor for x_{i-1} or a constant)
                    continue
                if code == "step":
                    operands = per_step[(slot, k)][start:stop]
                    rows = _per_step_sum(result, count, operands[0].shape, batched.first, k)
                    _send_rows(self.graph, operands, rows)
                elif code[0] == "shared":
                    operand = code[1]
                    value = unbroadcast(np.asarray(result), operand.shape, batched.first, k)
                    self.graph.send(operand, value.astype(operand.data.dtype, copy=False))
                else:  # ("slot", m)
                    shape = template.shapes[code[1]][0]
                    value = _per_step_sum(result, count, shape, batched.first, k)
                    if code[1] in pending:
                        value = pending[code[1]] + value
                    pending[code[1]] = value

    def run(self, method, block_size):
        """Scan: take the gradients pending at the anchors (the seed g_n at the top, the
        injections below it, zeros where none arrived), scan, finish each block of steps
        as its gradients come, and send g_0 to x_0."""
        graph = self.graph
        if graph.scan_watched(self, method, block_size):  # (tg.compile: one kernel)
            return
        segment = self.segment
        anchors = segment.anchors
        count = segment.length
        dtype = anchors[-1].data.dtype
        seed = np.asarray(graph.pop_grad(anchors[-1]), dtype=dtype)  # (g_n: pending)
        pending = [graph.pop_grad(anchor) for anchor in anchors[:-1]] if graph.grads else []
        injections = None
        if any(value is not None for value in pending):
            zeros = np.zeros(segment.state_shape, dtype=dtype)
            injections = np.array([zeros if value is None else value for value in pending], dtype)
        bottom = []

        def sink(first, stop, prefixes):
            # Position p holds g_{count - p}: the gradient of step (count - p)'s upper
            # anchor, or of x_0 at p == count.
            vectors = prefixes[0]
            low, high = count - stop, count - first  # (0-based steps)
            if stop == count + 1:
                bottom.append(vectors[-1])
                vectors, low = vectors[:-1], low + 1
            if high > low:
                self.finish_steps(low, high, vectors[::-1])

        build = functools.partial(self.elements, injections=injections)
        diagonal = segment.jacobian_kind == "diagonal"
        scans.chain_scan(
            method, seed, build, count, diagonal, injections is not None, sink, block_size
        )
        graph.send(anchors[0], np.array(bottom[0], dtype=anchors[0].data.dtype))


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
        tops = declared_in(graph.roots) if graph.wanted is None else ()
        if tops:  # tg.scan's chains: no search
            walk(graph, self, dict.fromkeys(tops))
            return
        self._find_and_walk(graph)

    def _find_and_walk(self, graph):
        """Search the graph for the chains of loops, and walk it scanning them."""
        # The finder and the batching make many small lists; pausing the cyclic garbage
        # collector keeps it from re-scanning the whole graph meanwhile (none of it is
        # cyclic). Not for a plain walk: a collection held back over it lands on the next
        # allocation (an MLP's backward with `auto` took 2-50x the walk's time so).
        with gc_paused():
            found = self.find(graph)
            if found:
                walk(graph, self, found)
        if not found:
            graph.run_sequential()


def walk(graph, scheduler, chains):
    """The engine's walk (the newest pending node first, the leaves last) that scans a
    chain on reaching its top anchor (`chains`: the top's id -> its Segment, or None where
    `tg.scan` declared it: made here); a refusal's reason goes to `scheduler.refusals`."""
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
            if key in chains:
                try:
                    if chains[key] is None:  # (declared: its segment made once, here)
                        chains[key] = segment_of(declared_at(tensor), tensor, scheduler.min_steps)
                    scan_at(graph, scheduler, chains[key], chains)
                    continue
                except CannotScan as reason:
                    scheduler.refusals.append(str(reason))
            graph.visit(tensor, graph.pop(key))
    finally:
        graph.heap = graph.leaves = None
    graph.run_sequential()  # the leaves


def scan_at(graph, scheduler, segment, chains):
    """Scan `segment`, whose top anchor the walk has reached, after walking on through what is
    pending since its first node but the anchors, `Segment.held` (the lower layer of a stacked
    loop) and another chain met there (`_another_chain`): the readouts, whose gradients are
    the injections e_i (complete: a step reads only its carry, its own tensors and older
    inputs; the rules are linear, so a readout inside a step may go first). CannotScan, with
    nothing sent to the segment, when it cannot be scanned."""
    method, block_size = scheduler.choose(segment)
    if method == "sequential":
        raise CannotScan(f"{scheduler.name}: the walk is estimated cheaper")
    runner = SegmentRun(graph, segment)
    bound = segment.first_sequence
    waiting = {id(anchor) for anchor in segment.anchors}.union(segment.held or ())
    heap = graph.heap
    kept = []  # (pending still unless the scan takes them: put back)
    try:
        while heap and -heap[0][0] > bound:
            entry = heapq.heappop(heap)
            key = entry[1]
            if key not in graph.grads:
                continue
            if key in waiting or key in chains:
                kept.append(entry)
                if key not in waiting:  # another chain's top: it waits, and what it reads
                    waiting |= _another_chain(chains[key], graph.tensors[key], bound, segment)
                continue
            graph.visit(graph.tensors[key], graph.pop(key))
        runner.run(method, block_size)
    finally:
        for entry in kept:
            heapq.heappush(heap, entry)
    # Tell the graph (and whoever watches it: viz) which chain was scanned, and how.
    graph.scanned_segments.append(
        ScannedSegment(scheduler.name, segment.anchors, method, block_size)
    )


def _another_chain(other, top, bound, segment):
    """The ids of the tensors of another chain, whose top anchor `top` the walk meets before
    the scan of `segment`, and of those made after creation number `bound` (the first node
    of `segment`) that its steps read from outside: they wait for its own scan. `other` is
    its Segment, or None where it is declared (its segment not made yet): then what its
    top is made from since `bound` waits. CannotScan if one is a tensor of `segment`."""
    own = _ids(segment)
    if other is None:
        waiting = set()
        stack = [top]
    else:
        waiting = _ids(other)
        stack = list(other.outside_operands)
    while stack:
        tensor = stack.pop()
        node = getattr(tensor, "_ctx", None)
        if node is None or node.sequence <= bound or id(tensor) in waiting:
            continue
        waiting.add(id(tensor))
        stack.extend(node.inputs)
    if not waiting.isdisjoint(own):
        raise CannotScan("another chain met before the scan is made from its tensors")
    return waiting


def _ids(segment):
    """The ids of a segment's tensors: its anchors and its steps' tensors."""
    ids = {id(anchor) for anchor in segment.anchors}
    for column in segment.columns:
        ids.update(map(id, column))
    return ids
