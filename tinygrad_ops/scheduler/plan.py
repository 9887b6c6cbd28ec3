"""`backward_plan`: what a scheduler would do with a backward pass, without running it."""

import numpy as np

from ..autograd.graph import BackwardGraph
from . import resolve_scheduler, scans
from .auto import RULE, AutoScheduler, calibrate, estimates_for, per_product, rows_and_size
from .declared import declared_at, declared_in, segment_of
from .scan_scheduler import ScanScheduler
from .steps import CannotScan


class SegmentPlan:
    """One chain segment: where it is, its shape, and what each choice would cost."""

    def __init__(self, segment, choice, block_size, estimates, estimated_by="the cost model"):
        self.length = segment.length
        self.state_shape = tuple(segment.state_shape)
        self.jacobian_kind = segment.jacobian_kind
        self.step_ops = segment.describe()
        self.choice = choice
        self.block_size = block_size
        self.estimates = estimates  # name -> estimated seconds
        self.estimated_by = estimated_by  # whose figures: what auto compared, or for show
        self.anchors = segment.anchors
        # Per scheduler: (matrix products, vector products, depth), counted by the scans.
        self.work_and_depth = {
            method: scans.work_and_depth(method, self.length, block_size or 256)
            for method in ("sequential", "hillis-steele", "blelloch", "blocked")
        }

    def predicted(self, workers):
        """Seconds per scheduler with `workers` parallel workers: the cost model's estimate
        (P = 1, this machine as calibrated) with the scan's products shared out (work / P;
        Brent's bound, the depth a sum of one numpy call per level, already in the
        estimate). The walk has no parallel work: its figure stays."""
        costs = calibrate()
        rows, size = rows_and_size(self.state_shape)
        matrix, vector = per_product(costs["t_mm"], size), per_product(costs["t_mv"], size)
        times = {}
        for method, (products, applied, _) in self.work_and_depth.items():
            estimate = self.estimates.get(method)
            if estimate is None:
                continue
            work = 0.0 if method == "sequential" else rows * (products * matrix + applied * vector)
            times[method] = max(estimate - work * (1 - 1 / workers), 0.0)
        return times

    def work_and_depth_lines(self):
        """The trade-off in words: per scheduler, work and depth, and the predicted times."""
        counts = ", ".join(
            f"{method} {products}+{applied} / {depth}"
            for method, (products, applied, depth) in self.work_and_depth.items()
        )
        lines = [f"    work (matrix+vector products) / depth (levels): {counts}"]
        for workers in (1, 64):
            times = ", ".join(
                f"{method} {seconds * 1e3:.2f}"
                for method, seconds in self.predicted(workers).items()
            )
            lines.append(f"    predicted ms with {workers} worker(s) (work/P + depth): {times}")
        return lines

    @property
    def scanned(self):
        return self.choice != "sequential"

    def __repr__(self):
        return (
            f"SegmentPlan(length={self.length}, kind={self.jacobian_kind!r}, "
            f"choice={self.choice!r})"
        )


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
            choice = segment.choice
            if choice == "blocked":
                choice = f"blocked (block size {segment.block_size})"
            lines.append(
                f"  segment {number}: {segment.step_ops}, chain tensor {segment.state_shape}, "
                f"{segment.jacobian_kind} Jacobians -> {choice}"
            )
            estimates = ", ".join(
                f"{name} {seconds * 1e3:.2f} ms"
                for name, seconds in sorted(segment.estimates.items(), key=lambda item: item[1])
            )
            lines.append(f"    estimated ({segment.estimated_by}): {estimates}")
            lines.extend(segment.work_and_depth_lines())
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
    name = getattr(chosen, "name", type(chosen).__name__)
    looks = scanning = isinstance(chosen, ScanScheduler)
    declared = declared_in([loss])
    is_auto = isinstance(chosen, AutoScheduler)
    if not scanning:
        rules = ["not a scan scheduler: the walk (or the scheduler's own run)"]
    elif is_auto:
        rules = [RULE]
        if not declared:  # (a declared chain is decided at its top)
            looks, why = chosen.gate(graph)
            rules.append(why)
    else:
        rules = [f"{chosen.name}: every chain is scanned"]
    refusals = []
    min_steps = chosen.min_steps if scanning else ScanScheduler("blelloch").min_steps
    found = _segments(graph, declared, min_steps, refusals)
    trial = chosen.trial_of(found) if is_auto and looks and not declared else None
    if trial is not None:  # what `auto` timed on these chains decides, as in its run
        measured = chosen.chain_times.measured(trial[0])
        if measured:
            figures = ", ".join(
                f"{how} {seconds * 1e3:.2f} ms" for how, seconds in measured.items()
            )
            rules.append(f"timed on these chains before: {figures}; this backward: {trial[1]}")
    segments = [_segment_plan(segment, chosen, looks, trial) for segment in found]
    return BackwardPlan(name, len(graph.order), segments, "; ".join(rules + refusals))


def _segment_plan(segment, chosen, looks, trial):
    """The SegmentPlan of the scheduler's choice for `segment` (the walk unless `looks`;
    `auto`'s as timed where `trial` says so)."""
    by = "the cost model, for comparison"
    if not looks:
        method, block_size = "sequential", None  # the walk (or a user's scheduler)
    elif isinstance(chosen, AutoScheduler):
        method, block_size = chosen.choice(segment, None if trial is None else trial[1])
        by = "what auto compares"
    else:
        method, block_size = chosen.choose(segment)
    block_size = block_size if method == "blocked" else None
    return SegmentPlan(segment, method, block_size, estimates_for(segment), by)


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
