"""`backward_plan`: what a scheduler would do with a backward pass, without running it."""

import copy

import numpy as np

from ..autograd.graph import BackwardGraph
from . import resolve_scheduler, scans
from .auto import RULE, AutoScheduler, estimates_for
from .declared import declared_at, declared_in, segment_of
from .scan_scheduler import ScanScheduler
from .steps import CannotScan

WORKERS = (1, 64)  # the parallel workers the plan gives the cost model's times for (1: here)


class SegmentPlan:
    """One chain segment: where it is, its shape, the choice of `chooser` (a scheduler, or
    None for the walk), and what each choice would cost."""

    def __init__(self, segment, chooser):
        self.length = segment.length
        self.state_shape = tuple(segment.state_shape)
        self.jacobian_kind = segment.jacobian_kind
        self.step_ops = segment.describe()
        self.anchors = segment.anchors
        method, block_size = ("sequential", None) if chooser is None else chooser.choose(segment)
        self.choice = method
        self.block_size = block_size if method == "blocked" else None
        # Whose figures: what auto compares, or the model's for show.
        auto = isinstance(chooser, AutoScheduler)
        self.estimated_by = "what auto compares" if auto else "the cost model, for comparison"
        # Per P workers, the cost model's seconds per choice (P = 1: the estimates).
        self.predicted = {workers: estimates_for(segment, workers) for workers in WORKERS}
        self.estimates = self.predicted[1]  # name -> estimated seconds
        # Per scheduler: (matrix products, vector products, depth), counted by the scans.
        self.work_and_depth = {
            method: scans.work_and_depth(method, self.length, self.block_size or 256)
            for method in ("sequential", "hillis-steele", "blelloch", "blocked")
        }

    def lines(self, number):
        """The printed plan's lines for this segment, segment `number`."""
        choice = f"blocked (block size {self.block_size})" if self.block_size else self.choice
        counts = ", ".join(
            f"{method} {products}+{applied} / {depth}"
            for method, (products, applied, depth) in self.work_and_depth.items()
        )
        lines = [
            f"  segment {number}: {self.step_ops}, chain tensor {self.state_shape}, "
            f"{self.jacobian_kind} Jacobians -> {choice}",
            f"    work (matrix+vector products) / depth (levels): {counts}",
        ]
        for workers, times in self.predicted.items():
            by = self.estimated_by if workers == 1 else "the products shared out: work/P + depth"
            lines.append(f"    estimated with {workers} worker(s) ({by}): {_milliseconds(times)}")
        return lines

    @property
    def scanned(self):
        return self.choice != "sequential"

    def __repr__(self):
        return (
            f"SegmentPlan(length={self.length}, kind={self.jacobian_kind!r}, "
            f"choice={self.choice!r})"
        )


def _milliseconds(times):
    """{name: seconds} as "name 1.23 ms, ...", the cheapest first."""
    ranked = sorted(times.items(), key=lambda item: item[1])
    return ", ".join(f"{name} {seconds * 1e3:.2f} ms" for name, seconds in ranked)


class BackwardPlan:
    """The plan of one backward pass: the chain segments found, the scheduler's choice for
    each, and the cost model's estimates. `print(plan)` shows it as a table."""

    def __init__(self, scheduler_name, node_count, segments, decision=None):
        self.scheduler = scheduler_name
        self.node_count = node_count
        self.segments = segments
        self.decision = decision  # what decided, in words (auto's gate, a refusal)

    @property
    def scanned_segments(self):
        return [segment for segment in self.segments if segment.scanned]

    def __str__(self):
        lines = [
            f"backward plan for scheduler {self.scheduler!r}: {self.node_count} tensors, "
            f"{len(self.segments)} chain segment(s), {len(self.scanned_segments)} scanned"
        ]
        if self.decision:
            lines.append(f"  decided by: {self.decision}")
        for number, segment in enumerate(self.segments):
            lines.extend(segment.lines(number))
        if not self.segments:
            lines.append("  no chain found: the whole graph is walked sequentially")
        return "\n".join(lines)

    __repr__ = __str__


def backward_plan(loss, scheduler=None, gradient=None):
    """What `loss.backward(scheduler=scheduler)` would do, without running it: the chain
    segments it would scan, their lengths and Jacobian kinds, and the `auto` cost model's
    estimate for each choice. Nothing is computed or freed.

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([0.5, -0.3], requires_grad=True)
    >>> y = x
    >>> for _ in range(16):
    ...     y = y.tanh()
    >>> plan = tg.backward_plan(y.sum(), scheduler="blelloch")
    >>> [(segment.length, segment.jacobian_kind, segment.choice) for segment in plan.segments]
    [(16, 'diagonal', 'blelloch')]
    """
    chosen = resolve_scheduler(scheduler)
    seed = np.ones_like(loss.data) if gradient is None else getattr(gradient, "data", gradient)
    graph = BackwardGraph([loss], None, False, True)
    graph.send(loss, np.asarray(seed))
    declared = declared_in([loss])
    scanning = isinstance(chosen, ScanScheduler)
    refusals = []
    min_steps = chosen.min_steps if scanning else ScanScheduler("blelloch").min_steps
    found = _segments(graph, declared, min_steps, refusals)
    if isinstance(chosen, AutoScheduler):
        chooser, rules = _auto(chosen, graph, found, declared)
    elif scanning:
        chooser, rules = chosen, [f"{chosen.name}: every chain is scanned"]
    else:
        chooser, rules = None, ["not a scan scheduler: the walk (or the scheduler's own run)"]
    segments = [SegmentPlan(segment, chooser) for segment in found]
    name = getattr(chosen, "name", type(chosen).__name__)
    return BackwardPlan(name, len(graph.order), segments, "; ".join(rules + refusals))


def _auto(scheduler, graph, found, declared):
    """(what chooses as `scheduler`'s run would: a copy of it, with the trial its run would
    make, or None where its gate walks the graph; the words of its decision) for the
    chains `found` of `graph`. A declared chain is decided at its top, by the model."""
    if declared:
        return scheduler, [RULE]
    looks, why = scheduler.gate(graph)
    if not looks:
        return None, [RULE, why]
    chooser = copy.copy(scheduler)  # (the scheduler itself is left as it was)
    chooser.trial = scheduler.trial_of(found)
    measured = {} if chooser.trial is None else scheduler.chain_times.measured(chooser.trial[0])
    if not measured:  # (the model's choice stands, or its trials begin with the model's way)
        return chooser, [RULE, why]
    figures = _milliseconds(measured)  # what `auto` timed on these chains decides, as in its run
    timed = f"timed on these chains before: {figures}; this backward: {chooser.trial[1]}"
    return chooser, [RULE, why, timed]


def _segments(graph, declared, min_steps, refusals):
    """The segments a scan scheduler's walk would reach, newest first: the declared
    chains (tg.scan) if the graph has any, else those the finder finds. Declared chains
    that cannot be scanned add their reason to `refusals`."""
    if not declared:
        found = ScanScheduler("blelloch", min_steps=min_steps).find(graph)
        return sorted(found.values(), key=lambda segment: -segment.anchors[-1]._ctx.sequence)
    segments = []
    for top in reversed(graph.order):  # (the newest first)
        declaration = declared_at(top)
        if declaration is None:
            continue
        try:
            segments.append(segment_of(declaration, top, min_steps))
        except CannotScan as reason:
            refusals.append(f"a tg.scan of {len(declaration.below)} steps is walked: {reason}")
    return segments
