"""`backward_plan`: what a scheduler would do with a backward pass, without running it."""

import numpy as np

from ..autograd.graph import BackwardGraph
from . import resolve_scheduler, scans
from .auto import AutoScheduler, best_choice, calibrate, estimate
from .below import next_chain_below, pending_after
from .calibration import per_product
from .declared import declared_at, declared_in, segment_of
from .finder import find_chains
from .scan_scheduler import ScanScheduler
from .steps import MIN_STEPS, CannotScan, ChainPlan


class SegmentPlan:
    """One chain segment: where it is, its shape, and what each choice would cost."""

    def __init__(self, segment, choice, block_size, estimates, estimated_by="the cost model"):
        self.length = segment.length
        self.ops_per_step = segment.ops_per_step
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
        size = self.state_shape[-1] if self.state_shape else 1
        rows = int(np.prod(self.state_shape[:-1])) if len(self.state_shape) > 1 else 1
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

    def __init__(self, scheduler_name, node_count, segments, independent_count, decision=None):
        self.scheduler = scheduler_name
        self.node_count = node_count
        self.segments = segments
        self.independent_count = independent_count
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
        if self.independent_count:
            lines.append(
                f"  {self.independent_count} independent tensors (the output side, per-step "
                "losses) walked first"
            )
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
    if gradient is None:
        seed = np.ones_like(loss.data)
    else:
        seed = gradient.data if hasattr(gradient, "data") else np.asarray(gradient)
    graph = BackwardGraph([loss], None, False, True)
    graph.send(loss, seed)
    name = getattr(chosen, "name", type(chosen).__name__)
    scanning = isinstance(chosen, ScanScheduler)
    min_steps = chosen.min_steps if scanning else MIN_STEPS
    if declared_in([loss]):  # tg.scan's chains: what the scan schedulers' walk takes (declared.py)
        decision, segments = _declared(loss, chosen, scanning, min_steps)
        return BackwardPlan(name, _count_tensors(loss), segments, 0, decision)
    # The same analysis the scan schedulers run: the first look, else the full analysis.
    plan = find_chains(graph, min_steps)
    if plan.index is None and plan.segments:
        _add_chains_below(graph, plan, min_steps)
    if isinstance(chosen, AutoScheduler):
        first = find_chains(graph, min_steps, chosen.worth_checking, full=False)
        if first is not None and first.refusal:
            plan.refusal = first.refusal
    independent = len(plan.independent)
    decision, segments = _decide(chosen, graph, plan, scanning)
    return BackwardPlan(name, _count_tensors(loss), segments, independent, decision)


def _declared(loss, chosen, scanning, min_steps):
    """(what decided, the SegmentPlans) for the chains `tg.scan` declared in the graph."""
    if not scanning:
        rule = "not a scan scheduler: the walk (or the scheduler's own run)"
    elif isinstance(chosen, AutoScheduler):
        rule = "auto: per declared chain, the cheapest of the walk and the scans (the cost model)"
    else:
        rule = f"{chosen.name}: every declared chain is scanned"
    segments, refusals = [], []
    for top in _declared_tops(loss):
        try:
            segment = segment_of(declared_at(top), top, None, min_steps)
        except CannotScan as reason:
            refusals.append(f"a tg.scan of {len(declared_at(top).below)} steps is walked: {reason}")
            continue
        if not scanning:
            method, block_size = "sequential", None
        else:
            method, block_size = chosen.choose(segment)
        by = "what auto compares" if isinstance(chosen, AutoScheduler) else "the cost model"
        times = chosen.estimates_for(segment) if by == "what auto compares" else None
        times = times or _estimates(segment, False)
        segments.append(
            SegmentPlan(segment, method, block_size if method == "blocked" else None, times, by)
        )
    return "; ".join([rule] + refusals), segments


def _declared_tops(root):
    """The top anchors of declared chains in the graph of `root`, the newest first."""
    tops = [tensor for tensor in _reached(root) if declared_at(tensor) is not None]
    return sorted(tops, key=lambda tensor: -tensor._ctx.sequence)


def _reached(root):
    """`root` and every tensor that requires grad the backward pass from it would reach,
    each once (an iterative search: no recursion limit)."""
    seen = {id(root)}
    stack = [root]
    while stack:
        tensor = stack.pop()
        yield tensor
        node = tensor._ctx
        if node is None:
            continue
        for operand, needs in zip(node.inputs, node.needs_input_grad):
            if needs and id(operand) not in seen:
                seen.add(id(operand))
                stack.append(operand)


def _add_chains_below(graph, plan, min_steps):
    """The chains a scan scheduler finds once the first look's chains are scanned (the
    lower layer of a stacked RNN: `below.py`), added to `plan`, from the gradients that
    would then be pending."""
    pending = [pending_after(plan)]

    def walk_one(tensor):
        pending[0] = pending_after(ChainPlan([], [tensor]), pending[0])

    while True:
        below = next_chain_below(graph, lambda: pending[0], walk_one, min_steps)
        if below is None:
            return
        plan.segments.extend(below.segments)
        pending[0] = pending_after(below, pending[0])


def _decide(chosen, graph, plan, scanning):
    """(what decided, the SegmentPlans): the choice the scheduler would make per segment,
    with the estimates it compares (auto) or the cost model's for comparison."""
    if not scanning:
        decision = "not a scan scheduler: the walk (or the scheduler's own run)"
    elif isinstance(chosen, AutoScheduler) and chosen.remembered_for(graph):
        looks, decision = False, chosen.remembered_for(graph)
    elif isinstance(chosen, AutoScheduler):
        looks, decision = chosen.gate(graph)
        if looks and plan.index is not None:
            full_looks, full_decision = chosen.gate(graph, full=True)
            looks, decision = full_looks, f"the first look found no chain; {full_decision}"
        if looks and plan.refusal:
            looks, decision = False, plan.refusal
        if looks:
            decision += "; per segment the estimates below (the chain check already paid)"
    else:
        decision = f"{chosen.name}: every chain found is scanned"
    segments = []
    for segment in plan.segments:
        times, by = _estimates(segment, plan.index is not None), "the cost model, for comparison"
        if not scanning:
            method, block_size = "sequential", None  # the walk (or a user's scheduler)
        elif isinstance(chosen, AutoScheduler):
            if looks:
                times, by = chosen.estimates_for(segment), "what auto compares"
                method, block_size = best_choice(times)
            else:
                method, block_size = "sequential", None
        else:
            method, block_size = chosen.choose(segment)
        segments.append([segment, method, block_size, times, by])
    if isinstance(chosen, AutoScheduler) and looks:
        decision = _measured(chosen, plan, segments, decision)
    return decision, [
        SegmentPlan(segment, method, block_size if method == "blocked" else None, times, by)
        for segment, method, block_size, times, by in segments
    ]


def _measured(auto, plan, segments, decision):
    """Apply what `auto` measured on these chains before (experience.py) to the model's
    choices in `segments` (edited in place); the decision's words, with it said."""
    model_scans = any(entry[1] != "sequential" for entry in segments)
    verdict, key = auto.verdict(plan, model_scans)
    if verdict is None:
        return decision
    for entry in segments:
        if verdict == "walk":
            entry[1:3] = ["sequential", None]
        elif not model_scans:
            entry[1:3] = auto._cheapest_scan(entry[0])[1:3]
    seen = auto.experience.measured(key)
    if auto.experience.settled(key):
        return (
            f"{decision}; measured on these chains before: scanned {seen['scan'] * 1e3:.2f} "
            f"ms, walked {seen['walk'] * 1e3:.2f} ms: {_PAST[verdict]}"
        )
    reason = "the model scans" if model_scans else "the model walks, a scan nearly as cheap"
    return f"{decision}; this backward is {_PAST[verdict]} and timed ({reason}; experience.py)"


_PAST = {"scan": "scanned", "walk": "walked"}


def _count_tensors(root):
    """How many tensors that require grad the backward pass would reach."""
    return sum(1 for _ in _reached(root))


def _estimates(segment, full):
    """The cost model's estimates; after the full analysis the scans pay its cost too."""
    times = estimate(
        segment.length, segment.ops_per_step, segment.state_shape, segment.jacobian_kind
    )
    if full:
        costs = calibrate()
        extra = (
            segment.length * segment.ops_per_step * (costs["c_analysis_full"] - costs["c_analysis"])
        )
        times = {
            name: seconds if name == "sequential" else seconds + max(extra, 0.0)
            for name, seconds in times.items()
        }
    return times
