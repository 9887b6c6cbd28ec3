"""`auto`: choose, per chain, between the sequential walk and the scans (docs/scan.md section 4).

The cost model, in seconds, for a segment of n steps of s ops each, whose chain tensor
has R rows of d values:

    sequential      n s c_visit
    any scan        n s (c_analysis + c_batch) + c_chain
                    + R (products_mm t_mm(d) + products_mv t_mv(d)) + calls c_call

with products counted per scan: Hillis-Steele n log2 n matrix-matrix products, Blelloch
about n, blocked(b) about n plus n/b blocks of 6 log2 b calls each; a diagonal chain does
elementwise work instead of products. The constants are measured once per process by a
quick micro-benchmark on this machine (`calibration.py`, about half a second): c_visit (one
node of the engine's sequential walk), c_analysis and c_batch (the scan scheduler's
chain check and its batching, per node), c_chain (what a scan costs once per chain:
finding the step template, the scan's numpy calls), t_mm(d) and t_mv(d) (one d x d
product in a stacked `np.matmul`) and c_call (one numpy call). The per-node and
per-chain parts come from timing two chain lengths.

Before paying for the chain analysis, `auto` looks at the shape of the tensors near the
output: when even an endless chain of that width could not beat the walk, it walks. And a
graph of a shape it walked before (a training loop's next step) is walked at once
(`verdicts.py`).
"""

import math
import time
from typing import NamedTuple

from .calibration import calibrate, per_product
from .declared import declared_in
from .experience import Experience, signature
from .scan_scheduler import ScanScheduler
from .spine import deeper_than, probe_shape, window_from
from .steps import MAX_PERIOD
from .verdicts import ShapeVerdicts

CACHE_BYTES = 2**22  # Jacobians beyond this (per scan or per block) slow the products down
BLOCK_SIZES = (64, 256, 1024)


def visit_cost(state_shape, costs):
    """Seconds per node of the sequential walk on a chain tensor of `state_shape`."""
    size = state_shape[-1] if state_shape else 1
    rows = math.prod(state_shape[:-1]) if len(state_shape) > 1 else 1
    return costs["c_visit"] + costs.get("c_visit_area", 0.0) * rows * size * size


def diagonal_bytes(steps, rows, size):
    """What a diagonal chain's scan keeps in flight: about four stacks of its states' size
    (the saved values, the Jacobians, the gradients, their products)."""
    return 4 * steps * rows * size * 8


class StepCosts(NamedTuple):
    """Seconds per step of a scan's numpy work (see `step_costs`)."""

    matrix: float  # composing two steps' Jacobians, in cache
    vector: float  # applying one to a gradient
    build: float  # building one step's Jacobian, in cache
    unblocked: float  # composing, for a scan that holds the whole chain's Jacobians
    unblocked_build: float  # building, for such a scan
    large: float  # composing, beyond the caches


def step_costs(steps, rows, size, dense, costs):
    """The numpy work per step of a chain of `steps` steps whose tensors have `rows` rows
    of `size` values: dense Jacobians (products of d x d matrices) or diagonal ones."""
    if not dense:
        # Elementwise: a few flops per value; a 1 x 1 "product" is the measured unit.
        unit = rows * size * costs["t_mm"][1]
        unblocked = unblocked_build = unit
        if diagonal_bytes(steps, rows, size) > CACHE_BYTES:
            # Stacks beyond the caches slow an unblocked scan's elementwise passes down as
            # they do its products, and its side branches' passes over whole stacks: about
            # ten more passes over a step's values (measured: 2048 steps at hidden 128,
            # 8 MiB a stack, Blelloch took 1.18-1.26x the blocked scan, 13 ms more).
            unblocked = 1.5 * unit
            unblocked_build = unblocked + 10 * rows * size * costs.get("c_element", 0.0)
        return StepCosts(unit, unit, unit, unblocked, unblocked_build, unblocked)
    # Building a step's dense Jacobian: d x d values per row (a product by a weight
    # scaled row by row), elementwise work.
    # About three passes over them: the product of the weight's matrix by the diagonal
    # of the activation, its broadcast to every row, the contiguous copy the scan reads.
    build = 3 * rows * size * size * costs.get("c_element", 0.0)
    matrix = rows * per_product(costs["t_mm"], size)
    vector = rows * per_product(costs["t_mv"], size)
    # Beyond the caches the products slow down, and so do the copies around them
    # (pairing, interleaving) and the building of the Jacobians: measured here, an
    # unblocked scan of 8-64 MiB of Jacobians took 1.15-1.25x the blocked scan's time.
    large = 1.5 * matrix
    if "t_mm_large" in costs:
        large = max(rows * per_product(costs["t_mm_large"], size), large)
    if steps * rows * size * size * 8 <= CACHE_BYTES:
        return StepCosts(matrix, vector, build, matrix, build, large)
    # Written to fresh memory twice (the Jacobians, the first pair products).
    fresh = 2 * rows * size * size * 8 * costs.get("c_fresh", 0.0)
    return StepCosts(matrix, vector, build, large, 1.5 * build + fresh, large)


def fixed_cost(nodes, rows, size, dense, costs):
    """What every scan pays whatever its method: finding the chain and batching its steps
    (per node, plus a part per chain), and the side branches' vjps."""
    fixed = nodes * (costs["c_analysis"] + costs["c_batch"]) + costs.get("c_chain", 0.0)
    if dense:
        # The side branches' vjps do the walk's arithmetic, batched: the part of a visit
        # that grows with the arrays (rows * d^2) is paid by the scans too (it decides at
        # hidden 20 with 16 rows, BPPSA's setting, where leaving it out made 100-step
        # scans look as cheap as the walk: they took 1.3x longer).
        return fixed + nodes * costs.get("c_visit_area", 0.0) * rows * size * size
    # A diagonal chain's side branches are elementwise too (and a product by a weight
    # beside the chain, x_t W, is one batched product): a few passes over the stacked
    # values per node, not the walk's d^2 (which priced a 256-step chain at hidden 128 at
    # 0.86x the walk, where it took 0.7x, and `auto` walked it).
    return fixed + nodes * 4 * rows * size * costs.get("c_element", 0.0)


def estimate(steps, ops_per_step, state_shape, kind, costs=None):
    """Estimated seconds for each choice on a segment: {"sequential": ..., "blelloch": ...,
    "hillis-steele": ..., "blocked:64": ..., ...}.

    >>> times = estimate(2048, 5, (4, 8), "dense")
    >>> sorted(times)
    ['blelloch', 'blocked:1024', 'blocked:256', 'blocked:64', 'hillis-steele', 'sequential']
    """
    costs = calibrate() if costs is None else costs
    nodes = steps * ops_per_step
    size = state_shape[-1] if state_shape else 1
    rows = math.prod(state_shape[:-1]) if len(state_shape) > 1 else 1
    dense = kind == "dense"
    per_step = step_costs(steps, rows, size, dense, costs)
    fixed = fixed_cost(nodes, rows, size, dense, costs)
    # Then building the Jacobians, and the scan's products: Blelloch about one matrix
    # product and one vector product per step (the seeded scan composes the Jacobians;
    # prefixes are vectors), Hillis-Steele about log2 n products per step.
    rounds = max(1, math.ceil(math.log2(steps + 1)))
    times = {"sequential": nodes * visit_cost(state_shape, costs)}
    times["hillis-steele"] = (
        fixed
        + steps * per_step.unblocked_build
        + steps * max(rounds - 1, 1) * per_step.unblocked
        + steps * per_step.vector
        + 4 * rounds * costs["c_call"]
    )
    times["blelloch"] = (
        fixed
        + steps * (per_step.unblocked_build + per_step.unblocked + per_step.vector)
        + 12 * rounds * costs["c_call"]
    )
    for block in BLOCK_SIZES:
        if block >= steps:
            continue
        blocks = math.ceil(steps / block)
        block_rounds = max(1, math.ceil(math.log2(block + 1)))
        # A block's Jacobians beyond the caches cost what an unblocked scan's do.
        block_cost, block_build = per_step.matrix, per_step.build
        if dense and block * rows * size * size * 8 > CACHE_BYTES:
            block_cost, block_build = per_step.large, per_step.unblocked_build
        elif not dense and diagonal_bytes(block, rows, size) > CACHE_BYTES:
            block_cost, block_build = per_step.unblocked, per_step.unblocked_build
        times[f"blocked:{block}"] = (
            fixed
            + steps * (block_build + block_cost + per_step.vector)
            + blocks * (12 * block_rounds + 8 * ops_per_step) * costs["c_call"]
        )
    return times


SCAN_MARGIN = 0.95
"""A scan is chosen only when its estimate beats the walk's by this factor (a slight
preference for the walk: past the crossover a wrong scan loses more than a wrong walk)."""


def analysis_cost(steps, ops_per_step, costs=None):
    """The part of a scan's estimate already spent once the chain has been found (the
    lean chain check): sunk when `auto` chooses, so left out of that comparison."""
    costs = calibrate() if costs is None else costs
    return steps * ops_per_step * costs["c_analysis"] + costs.get("c_analysis_chain", 0.0)


CLOSE_CALL = 1.25
"""Where the model walks a chain but estimated a scan within this factor of the walk, the
scan is measured once too (`experience.py`): the model's errors are about that large."""

CONFIDENT = 0.25
"""Where the model estimates every scan of a backward at under a quarter of the walk, its
choice is not measured against the walk (a walk tried on a chain a scan takes 4x faster
would cost that training step 4x). Its errors can be large: calibrated on a loaded
machine it put BPPSA's 10,000-step chain under half the walk, and the scan took 1.46x."""

FULL_MARGIN = 0.5
"""The full analysis is run only when even its best case costs under half the walk: its
cost per node varies with the graph's shape by about that much around its calibration
(on a stacked RNN it took 0.9-1.0x the walk)."""

_PROBE_OPS_PER_STEP = 5  # before the analysis a step's ops are unknown: an RNN cell's five
_PROBE_HOPS = 32  # how far down from the output the gate looks for the widest tensor

CHECK_MARGIN = 0.85
"""A chain is checked only when its best scan, checks included, is estimated this much
cheaper than the walk. A check that ends in a walk is paid for nothing (15-25% of a
64-step chain's backward at hidden 32), and near the crossover the estimates move by
about as much between calibrations; walking a chain that a scan would have done 10%
faster costs less."""

_HANDICAP = {"hillis-steele": 1.05}
"""Hillis-Steele must beat the other scans' estimates by 5% to be chosen: it does
n log n work, and where the model calls it even with Blelloch (hidden 8, 64 steps) it
measured 8-10% slower."""


def best_choice(times):
    """(method, block size) of the cheapest entry of `estimate`'s result, keeping the
    sequential walk unless a scan is clearly cheaper (`SCAN_MARGIN`).

    >>> best_choice({"sequential": 1.0, "blelloch": 0.97})
    ('sequential', None)
    >>> best_choice({"sequential": 1.0, "blelloch": 0.5, "blocked:256": 0.6})
    ('blelloch', None)
    """
    name = min(times, key=lambda choice: times[choice] * _HANDICAP.get(choice, 1.0))
    if name != "sequential" and times[name] > SCAN_MARGIN * times["sequential"]:
        name = "sequential"
    if name.startswith("blocked:"):
        return "blocked", int(name.split(":")[1])
    return name, None


def remembered(reason):
    """The gate's words for a graph of a shape walked before."""
    return f"graphs of this shape were walked before ({reason}): walked, not looked at again"


def walked_because(plan, verdict, measured):
    """Why a backward that looked for chains walked them all (`measured`: what `auto`
    measured on these chains, `Experience.measured`)."""
    if plan is None:
        return "the first look found no chain, the full analysis would not pay"
    if plan.refusal:
        return plan.refusal
    if not plan.segments:
        return "no chain found"
    lengths = ", ".join(str(segment.length) for segment in plan.segments)
    if verdict == "walk" and len(measured) == 2:
        return (
            f"chains of {lengths} steps found; measured on these chains before: scanned "
            f"{measured['scan'] * 1e3:.2f} ms, walked {measured['walk'] * 1e3:.2f} ms: walked"
        )
    return f"chains of {lengths} steps found; the cost model walks them"


class AutoScheduler(ScanScheduler):
    """Per chain, the cheapest of sequential and the scans by the calibrated cost model.

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([0.5, -0.3], requires_grad=True)
    >>> x.tanh().tanh().sum().backward(scheduler="auto")
    >>> x.grad.shape
    (2,)
    """

    name = "auto"

    def __init__(self):
        super().__init__("blelloch")
        self.name = "auto"
        self.last_estimates = []
        self._shortest = {}  # state shape -> fewest steps worth checking (see worth_analysing)
        self.last_gate = None  # why the latest backward looked for chains or not
        self.experience = Experience(SCAN_MARGIN)  # what each choice took (experience.py)
        self.clock = time.process_time
        self._measuring = None  # (signature, "scan" or "walk") of the backward running
        self._walks = None  # the gate's walk down the graph being run
        self.verdicts = ShapeVerdicts()  # graph shapes walked before (verdicts.py)
        self._shape = None  # the shape of the graph being run, once the gate has read it

    def run(self, graph):
        if graph.wanted is None and declared_in(
            graph.roots
        ):  # a tg.scan's chain: the cost model decides at its top anchor
            super().run(graph)
            return
        shape = self.verdicts.shape_of(graph)
        walked = self.verdicts.lookup(shape)
        if walked is not None:  # a graph of a shape walked before: no gate, no look
            self.last_gate = walked
            graph.run_sequential()
            return
        self._measuring = None
        self._shape = shape
        start = self.clock()
        try:
            super().run(graph)
        finally:
            self._walks = None  # it holds the graph's tensors
        if self._measuring is not None:
            self.experience.record(*self._measuring, self.clock() - start)
        self._remember(graph)

    def _remember(self, graph):
        """Keep the verdict for this graph's shape: walked (unless it was walked to be
        timed, `experience.py`, while the scan was not measured slower), or scanned
        (forgotten)."""
        shape = self._shape
        if shape is None:
            return
        if graph.scanned_segments:
            self.verdicts.forget(shape)
        elif self._measuring is None or self.experience.walks(self._measuring[0]):
            self.verdicts.remember(shape, remembered(self.last_gate))

    def window(self, graph):
        """The walk down from the output that the gate made (`deeper_than`), reused by the
        first look instead of walking down again."""
        walks = self._walks
        if walks is None or walks.get("graph") is not graph or len(graph.roots) != 1:
            return None
        return window_from(walks, graph.roots[0], 8 * MAX_PERIOD)

    def chosen_segments(self, plan):
        """The cost model's choices, unless what this scheduler measured on the same
        chains says otherwise (`experience.py`); a backward whose choice is measured is
        timed by `run`."""
        chosen = super().chosen_segments(plan)
        verdict, key = self.verdict(plan, bool(chosen))
        if verdict is not None:
            self._measuring = (key, verdict)
            if verdict == "walk":
                chosen = []
            else:
                chosen = chosen or [self._cheapest_scan(segment)[:3] for segment in plan.segments]
        if not chosen:  # why, for the shape's verdict (`_remember`)
            self.last_gate = walked_because(plan, verdict, self.experience.measured(key))
        return chosen

    def verdict(self, plan, model_scans):
        """('scan', 'walk' or None: the model's choice stands unmeasured, the signature)."""
        if plan is None or not plan.segments:
            return None, None
        key = signature(plan.segments)
        ratios = [
            self._cheapest_scan(segment)[3] / self.estimates_for(segment)["sequential"]
            for segment in plan.segments
        ]
        close = not model_scans and min(ratios) < CLOSE_CALL
        confident = model_scans and max(ratios) < CONFIDENT
        if confident or not (model_scans or close):
            return None, key
        return self.experience.verdict(key, model_scans, close), key

    def _cheapest_scan(self, segment):
        """(segment, method, block size, estimate) of the scan estimated cheapest."""
        times = self.estimates_for(segment)
        name = min((name for name in times if name != "sequential"), key=times.get)
        method, _, block = name.partition(":")
        return segment, method, int(block) if block else self.block_size, times[name]

    def choose(self, segment):
        method, block_size = best_choice(self.estimates_for(segment))
        return method, block_size or self.block_size

    def estimates_for(self, segment):
        """The estimates `choose` compares for a found segment: the chain is found already,
        so what is left to pay is the scan without its analysis (sunk, left out)."""
        times = estimate(
            segment.length, segment.ops_per_step, segment.state_shape, segment.jacobian_kind
        )
        sunk = analysis_cost(segment.length, segment.ops_per_step)
        times = {
            name: (seconds if name == "sequential" else max(seconds - sunk, 0.0))
            for name, seconds in times.items()
        }
        self.last_estimates.append(times)
        del self.last_estimates[:-16]  # the latest few, for inspection (a training loop runs long)
        return times

    def worth_checking(self, steps, ops_per_step, state_shape, kind=None):
        """Once the first look has walked down a chain and knows its length (and the kind
        of its Jacobians): whether its best scan, checks included, would clearly beat the
        walk (`CHECK_MARGIN`; a short chain at hidden 32 does not)."""
        if kind is None:
            kind = "dense" if len(state_shape) and state_shape[-1] > 1 else "diagonal"
        times = estimate(steps, ops_per_step, state_shape, kind)
        scan = min(seconds for name, seconds in times.items() if name != "sequential")
        return scan < CHECK_MARGIN * times["sequential"]

    def worth_analysing(self, graph, full=False):
        """Whether any chain near the output could be scanned faster than walked (with
        `full`, paying for the full analysis, which looks at every tensor several times).
        The reason is kept in `last_gate` (shown by `tg.backward_plan`)."""
        self._walks = {"graph": graph}  # the gate's walk down, for the first look (`window`)
        looks, self.last_gate = self.gate(graph, full)
        return looks

    def remembered_for(self, graph):
        """What decides `graph` if it is of a shape walked before (for `tg.backward_plan`,
        which reads without counting), else None."""
        return self.verdicts.lookup(self.verdicts.shape_of(graph, advance=False), count=False)

    def gate(self, graph, full=False):
        """(whether to look for chains, why) for `worth_analysing` (which keeps the walk
        down the graph that this makes, for the first look)."""
        walks = self._walks if self._walks and self._walks.get("graph") is graph else None
        # No chain worth checking is shallower than this (8 steps, below): a small graph is
        # walked before the width probe and the cost model's figures (the MLP of a
        # training step, where they cost 30% of its backward).
        shallowest = 0.6 * 8 * _PROBE_OPS_PER_STEP
        # Walked only as far as the width probe reads (its 32 ops) until the gate knows it
        # will look: where the tensors near the output are too wide to pay, the 128 ops
        # the first look reads were 1-2% of a walk at hidden 64 paid for nothing.
        if not deeper_than(graph.roots, shallowest, walks, at_least=_PROBE_HOPS + 2):
            return False, f"the graph is not {shallowest:.0f} ops deep: walked"
        costs = calibrate()
        shape, kind = probe_shape(graph.roots, _PROBE_HOPS, walks, at_least=_PROBE_HOPS + 2)
        what = "the full analysis" if full else "the first look"
        if shape is None:
            return False, "no tensor made by an op near the output: walked"
        size = shape[-1] if shape else 1
        rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
        # Best case: an endless chain, blocked's work (building the Jacobians, a matrix
        # product and a vector product per step; a diagonal chain's elementwise work),
        # steps of at least three ops.
        analysis = costs["c_analysis_full"] if full else costs["c_analysis"]
        if kind == "diagonal":
            per_step = 3 * size * costs["t_mm"][1]
        else:
            per_step = (
                per_product(costs["t_mm"], size)
                + per_product(costs["t_mv"], size)
                + size * size * costs.get("c_element", 0.0)
            )
        per_node_scan = analysis + costs["c_batch"] + rows * per_step / 3
        visit = visit_cost(shape, costs)
        if per_node_scan >= visit * (FULL_MARGIN if full else 1.0):
            return False, (
                f"with {what}, a scan of tensors {tuple(shape)} ({kind} Jacobians near the "
                f"output) costs at least "
                f"{per_node_scan * 1e6:.2f} us a node, the walk {visit * 1e6:.2f}: walked"
            )
        # A scan also costs once per chain (c_chain): a chain of fewer nodes than this
        # cannot repay it. Following the graph that deep is cheaper than finding the chain
        # (the path followed skips the side ops of a step, x_t W: hence the 0.6).
        nodes = costs.get("c_chain", 0.0) / (visit - per_node_scan)
        # And the shortest chain of this width that `worth_checking` would check: finding
        # a chain's steps costs ~0.2 ms before its length is known, 15-20% of a 64-step
        # chain's walk, paid for nothing if the chain is then too short (hidden 32).
        steps = self._shortest_worth_checking(tuple(shape), kind)
        if steps is None:
            return False, f"no chain of tensors {tuple(shape)} is long enough to pay: walked"
        # No deeper than the walk the first look reads anyway (its window): following the
        # graph further down took as long as the look (the whole of a 256-step chain,
        # 0.2-0.4 ms of a 2.7 ms scan, where `c_chain` came out large), and a chain that is
        # then too short is refused by the look once (`worth_checking`), its shape
        # remembered (`verdicts.py`).
        depth = min(0.6 * max(nodes, steps * _PROBE_OPS_PER_STEP), 8 * MAX_PERIOD - 2)
        if not deeper_than(graph.roots, depth, walks):
            return False, f"the graph is not {depth:.0f} ops deep: walked"
        return True, f"{what} may pay (tensors {tuple(shape)}): looked for chains"

    def _shortest_worth_checking(self, state_shape, kind="dense"):
        """The fewest steps (a power of two, from 8) of `_PROBE_OPS_PER_STEP` ops for which
        `worth_checking` says yes at this state shape; None if no length up to 2**16 does.
        Cached per shape (the calibration is fixed for the process)."""
        if (state_shape, kind) not in self._shortest:
            self._shortest[state_shape, kind] = next(
                (
                    steps
                    for steps in (2**power for power in range(3, 17))
                    if self.worth_checking(steps, _PROBE_OPS_PER_STEP, state_shape, kind)
                ),
                None,
            )
        return self._shortest[state_shape, kind]
