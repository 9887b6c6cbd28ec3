"""A scanned chain, compiled: the scan scheduler's segment run replayed as one kernel.

With a scan scheduler (`"blelloch"`, `"hillis-steele"`, `"blocked"`, or `"auto"` when it
picks one), the capture's backward finds the chains of the graph (finder.py: the analysis
runs once, here) and scans each one (`scan_scheduler.SegmentRun`): the saved values of
all its steps stacked, every step's Jacobian built by one vectorised call per op, one
prefix scan for every gradient along the chain, one vectorised call per op for the side
gradients (the weights'). The recorder watches that run (`Recorder.record_scan`): which
pending gradients it takes (the anchors' x_0 .. x_n) and, in order, where it sends its
results. The replay then runs the same `SegmentRun` on the segment the capture found,
over the saved values the replayed forward kernels left on the steps' nodes, and adds
what it sends into the slots the capture's sends went to. So the chain analysis, the
graph walk around the chain and every ownership decision are made once; what runs at
each call is the scheduler's own vectorised code, bit for bit the eager scan.
"""

from __future__ import annotations

from ..scheduler.scan_scheduler import SegmentRun
from .kernels import Kernel


class ReplayGraph:
    """What `SegmentRun` uses of a BackwardGraph: the anchors' pending gradients in, the
    gradients it sends out (in order), a list for what backward would release."""

    __slots__ = ("grads", "sent", "visited")

    def __init__(self, grads):
        self.grads = grads
        self.sent = []
        self.visited = []

    def pop_grad(self, tensor):
        return self.grads.pop(id(tensor), None)

    def send(self, tensor, grad, owned=False):
        self.sent.append(grad)


class ScanKernel(Kernel):
    """Scan one segment: `taken` lists, per anchor, the slot of the pending gradient the
    scan takes (None where none was pending); `sent` the slot of each gradient it sends."""

    __slots__ = ("segment", "method", "block_size", "taken", "sent", "nodes", "keys", "saving")

    def __init__(self, segment, method, block_size, taken, sent):
        self.segment = segment
        self.method = method
        self.block_size = block_size
        self.taken = taken
        self.sent = sent
        self.nodes = [node for column in segment.nodes for node in column]
        # The anchors whose pending gradient the scan takes (the others get None).
        self.keys = [id(anchor) for anchor, slot in zip(segment.anchors, taken) if slot is not None]
        self.saving = None  # the nodes that save values (known at the first replay)
        self.frees = ()

    def __call__(self, *pending):
        """Run the scan on the anchors' pending gradients; return what it sends, in order."""
        if self.saving is None:
            for node in self.nodes:  # (a node that saves nothing: Op.apply's empty tuple)
                if node.saved is None:
                    node.saved = ()
            self.saving = [node for node in self.nodes if node.saved]
        graph = ReplayGraph(dict(zip(self.keys, pending)))
        SegmentRun(graph, self.segment).run(self.method, self.block_size)
        for node in self.saving:  # (as backward releases a scanned segment's buffers)
            node.saved = None
        return graph.sent

    def emit(self, code, number):
        taken = [slot for slot in self.taken if slot is not None]
        arguments = ", ".join(code.slot(slot) for slot in taken)
        for slot in taken:
            code.consume(slot)
        scan = code.bind(self, "scan")
        code.line(f"r = {scan}({arguments})  # {self.describe(None)}")
        code.free(taken)
        for index, slot in enumerate(self.sent):
            code.accumulate(slot, f"r[{index}]", False)

    def reads(self):
        return tuple(slot for slot in self.taken if slot is not None)

    def consumes(self):
        return self.reads()

    def writes(self):
        return self.sent

    def describe(self, name):
        steps = len(self.segment.anchors) - 1
        return f"scan of a chain of {steps} steps ({self.method}, {len(self.sent)} gradients out)"
