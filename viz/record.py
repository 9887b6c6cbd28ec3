"""Recording a backward pass: the order ops are visited and the gradient on every edge.

The engine is not changed: a `RecordingScheduler` runs the scheduler that would have run
(sequential by default, or any scan scheduler) with an observer on its `BackwardGraph`
(`graph.observers`). It is told `rule_ran(node, grad, results)` after every op's backward
rule (the order of those calls is the backward order; `results` are the gradients sent
back to each operand) and `visiting(tensor, grad)` where a tensor receives its total
gradient. Scan schedulers note each chain segment they scanned in
`graph.scanned_segments` (`ScannedSegment(scheduler, tensors, method, block_size)`
records, docs/scan.md); the record keeps that list.
"""

from __future__ import annotations

import numpy as np

from tinygrad_ops import Tensor


def _as_array(grad):
    return grad.data if isinstance(grad, Tensor) else np.asarray(grad)


SMALL_SIZE = 16  # a gradient of at most this many elements keeps its numbers (`values`)


class GradientInfo:
    """Shape and statistics of one gradient (or value); `values` (a flat list) only for
    small ones."""

    __slots__ = ("shape", "norm", "minimum", "mean", "maximum", "values")

    def __init__(self, grad):
        values = _as_array(grad)
        self.shape = tuple(values.shape)
        as_float = values.astype(np.float64)
        self.norm = float(np.sqrt(np.sum(as_float * as_float)))
        if values.size:
            self.minimum = float(as_float.min())
            self.mean = float(as_float.mean())
            self.maximum = float(as_float.max())
        else:
            self.minimum = self.mean = self.maximum = 0.0
        self.values = as_float.ravel().tolist() if values.size <= SMALL_SIZE else None

    def __repr__(self):
        return f"GradientInfo(shape={self.shape}, norm={self.norm:.4g})"


class BackwardRecord:
    """What a recorded backward saw: op visit order, gradients per edge and per tensor.

    Objects are held by reference (not by `id()` alone), so the keys stay valid while the
    record lives. Look-ups take the op or tensor objects themselves.
    """

    def __init__(self):
        self.scheduler_name = None
        self.visit_order = []  # op objects, in the order their backward ran
        self._step_of = {}  # id(op) -> 1-based step
        self._edge_grads = {}  # (id(op), operand index) -> GradientInfo
        self._op_grads = {}  # id(op) -> GradientInfo of the total gradient of its output
        self._visit_grads = {}  # id(tensor) -> GradientInfo of the total gradient at visit
        self._keep_alive = []  # the tensors whose ids are keys above (ops are in visit_order)
        self.scanned_segments = []  # ScannedSegment records from a scan scheduler

    def step(self, op):
        """The 1-based position of `op` in the backward walk, or None if not visited."""
        return self._step_of.get(id(op))

    def edge_grad(self, op, index):
        """The gradient `op`'s backward sent to its operand number `index` (or None)."""
        return self._edge_grads.get((id(op), index))

    def tensor_grad(self, tensor):
        """The total gradient that arrived at `tensor` (or None)."""
        if tensor._ctx is not None and id(tensor._ctx) in self._op_grads:
            return self._op_grads[id(tensor._ctx)]
        return self._visit_grads.get(id(tensor))

    def __len__(self):
        return len(self.visit_order)

    def __repr__(self):
        return (
            f"<BackwardRecord: {len(self.visit_order)} ops visited by "
            f"{self.scheduler_name}, {len(self.scanned_segments)} scanned segments>"
        )


class RecordingScheduler:
    """A scheduler that runs `inner` (a name, an object, or None for the default) and
    records what it does into `self.record` (a `BackwardRecord`, fresh on every run).

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> x = tg.Tensor([3.0], requires_grad=True)
    >>> recorder = viz.RecordingScheduler()
    >>> (x * x).sum().backward(scheduler=recorder)
    >>> [type(op).__name__ for op in recorder.record.visit_order]
    ['Sum', 'Mul']
    """

    def __init__(self, inner=None):
        self.inner = inner
        self.record = BackwardRecord()

    @property
    def name(self):
        return f"recording({getattr(self._resolve(), 'name', type(self._resolve()).__name__)})"

    def _resolve(self):
        from tinygrad_ops.scheduler import resolve_scheduler

        return resolve_scheduler(self.inner)

    def run(self, graph):
        inner = self._resolve()
        record = BackwardRecord()
        record.scheduler_name = getattr(inner, "name", type(inner).__name__)
        self.record = record
        observer = _RecordingObserver(record)
        graph.observers.append(observer)  # the graph calls it on every visit and rule
        try:
            inner.run(graph)
        finally:
            graph.observers.remove(observer)
        record.scanned_segments = list(getattr(graph, "scanned_segments", None) or [])


class _RecordingObserver:
    """Watches one backward pass (an observer of the BackwardGraph) into a BackwardRecord."""

    def __init__(self, record):
        self.record = record

    def visiting(self, tensor, grad):
        self.record._visit_grads[id(tensor)] = GradientInfo(grad)
        self.record._keep_alive.append(tensor)

    def rule_ran(self, node, grad, results):
        # Every scheduler runs an op's backward rule through the graph: one call per visit
        # (a scan scheduler computes the ops of the segments it scans without it).
        record = self.record
        record._step_of[id(node)] = len(record.visit_order) + 1
        record.visit_order.append(node)
        record._op_grads[id(node)] = GradientInfo(grad)
        # Results come in operand order, skipping operands that get no gradient; an
        # op such as x * x has the same tensor in two slots, so match slot by slot.
        next_index = 0
        for operand, operand_grad, _ in results:
            for index in range(next_index, len(node.inputs)):
                if node.inputs[index] is operand:
                    record._edge_grads[(id(node), index)] = GradientInfo(operand_grad)
                    next_index = index + 1
                    break


def backward(root, gradient=None, scheduler=None, retain_graph=False):
    """Run `root.backward(...)` through a `RecordingScheduler` and return its record.

    Leaves' `.grad` are written as by a plain `backward()`; pass the record to
    `draw(root, backward=record)` to number the ops and label edges with gradients.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> record = viz.backward((x * 2).sum())
    >>> len(record), x.grad.numpy()
    (2, array([2., 2.], dtype=float32))
    """
    recorder = RecordingScheduler(scheduler)
    root.backward(gradient, retain_graph=retain_graph, scheduler=recorder)
    return recorder.record
