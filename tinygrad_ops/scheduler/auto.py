"""`auto`: choose, per chain, between the sequential walk and the scans by a cost model
calibrated on this machine (docs/scan.md, "The cost model"), by the rule `RULE` (the first
words of `backward_plan`'s "decided by:"). What it measures (the model's constants, the
times of the chains of loops) is in `calibration.py`.
"""

import bisect
import math
import time

from . import jacobians
from .calibration import SCAN_MARGIN, SIZES, ChainTimes, calibrate, chains_key
from .scan_scheduler import ScanScheduler

CACHE_BYTES = 2**22  # Jacobians beyond this (per scan or per block) slow the products down
BLOCK_SIZES = (64, 256, 1024)


def per_product(table, size):
    """Seconds per d x d product from one of `calibrate`'s per-size tables: interpolated
    log-log between its sizes, the smallest's below them, growing as d^3 above them."""
    if size >= SIZES[-1]:
        return table[SIZES[-1]] * (size / SIZES[-1]) ** 3
    above = bisect.bisect_left(SIZES, size)
    if above == 0:
        return table[SIZES[0]]
    low, high = SIZES[above - 1], SIZES[above]
    fraction = math.log(size / low) / math.log(high / low)
    return table[low] ** (1 - fraction) * table[high] ** fraction


def held_costs(steps, rows, size, dense, costs):
    """(building, composing): seconds per step of a scan that holds `steps` steps'
    Jacobians at once, on a chain tensor of `rows` rows of `size` values, dense or diagonal."""
    if not dense:
        # Elementwise: a few flops per value; a 1 x 1 "product" is the measured unit.
        unit = rows * size * costs["t_mm"][1]
        # In flight: about four stacks of the states' size (the saved values, the
        # Jacobians, the gradients, their products).
        if 4 * steps * rows * size * 8 <= CACHE_BYTES:
            return unit, unit
        # Stacks beyond the caches slow an unblocked scan's elementwise passes down as
        # they do its products, and its side branches' passes over whole stacks: about
        # ten more passes over a step's values (measured: 2048 steps at hidden 128,
        # 8 MiB a stack, Blelloch took 1.18-1.26x the blocked scan, 13 ms more).
        return 1.5 * unit + 10 * rows * size * costs["c_element"], 1.5 * unit
    # Building a step's dense Jacobian: about three passes over its d x d values per row
    # (the product of the weight's matrix by the diagonal of the activation, its broadcast
    # to every row, the contiguous copy the scan reads).
    build = 3 * rows * size * size * costs["c_element"]
    matrix = rows * per_product(costs["t_mm"], size)
    if steps * rows * size * size * 8 <= CACHE_BYTES:
        return build, matrix
    # Beyond the caches the products slow down, and so do the copies around them
    # (pairing, interleaving) and the building of the Jacobians: measured here, an
    # unblocked scan of 8-64 MiB of Jacobians took 1.15-1.25x the blocked scan's time.
    # They are written to fresh memory twice (the Jacobians, the first pair products).
    large = max(rows * per_product(costs["t_mm_large"], size), 1.5 * matrix)
    fresh = 2 * rows * size * size * 8 * costs["c_fresh"]
    return 1.5 * build + fresh, large


def fixed_cost(nodes, rows, size, dense, costs):
    """What every scan of a chain already found pays whatever its method: batching its
    steps (per node, plus a part per chain), and the side branches' vjps."""
    fixed = nodes * costs["c_batch"] + costs["c_chain"]
    if dense:
        # The side branches' vjps do the walk's arithmetic, batched: the part of a visit
        # that grows with the arrays (rows * d^2) is paid by the scans too (it decides at
        # hidden 20 with 16 rows, BPPSA's setting, where leaving it out made 100-step
        # scans look as cheap as the walk: they took 1.3x longer).
        return fixed + nodes * costs["c_visit_area"] * rows * size * size
    # A diagonal chain's side branches are elementwise too (and a product by a weight
    # beside the chain, x_t W, is one batched product): a few passes over the stacked
    # values per node, not the walk's d^2 (which priced a 256-step chain at hidden 128 at
    # 0.86x the walk, where it took 0.7x, and `auto` walked it).
    return fixed + nodes * 4 * rows * size * costs["c_element"]


def estimate(steps, ops_per_step, state_shape, kind, workers=1):
    """Estimated seconds for each choice on a segment: {"sequential": ..., "blelloch": ...,
    "hillis-steele": ..., "blocked:64": ..., ...}, with `workers` parallel workers sharing
    out a scan's products (work / P, Brent's bound: the depth, one numpy call per level,
    and the walk, which has no parallel work, stay; P = 1 is this machine as calibrated).

    >>> times = estimate(2048, 5, (4, 8), "dense")
    >>> sorted(times)
    ['blelloch', 'blocked:1024', 'blocked:256', 'blocked:64', 'hillis-steele', 'sequential']
    """
    costs = calibrate()
    nodes = steps * ops_per_step
    # (R, d): the chain tensor's rows, and the values in a row.
    rows, size = math.prod(state_shape[:-1]), (state_shape[-1] if state_shape else 1)
    dense = kind == "dense"
    visit = costs["c_visit"] + costs["c_visit_area"] * rows * size * size
    fixed = fixed_cost(nodes, rows, size, dense, costs)
    # Every scan applies the composed Jacobians to the gradient, one vector product per
    # step (the prefixes are vectors).
    vector = rows * (per_product(costs["t_mv"], size) if dense else size * costs["t_mm"][1])

    def scan(held, products, calls):
        # Building the Jacobians and composing them, `products` matrix products per step,
        # holding `held` steps' Jacobians at once; then `calls` numpy calls.
        build, compose = held_costs(held, rows, size, dense, costs)
        work = steps * (vector + products * compose)
        return fixed + steps * build + work / workers + calls * costs["c_call"]

    # Blelloch about one matrix product per step, Hillis-Steele about log2 n, holding them
    # all at once; a blocked scan holds one block's.
    rounds = max(1, math.ceil(math.log2(steps + 1)))
    times = {"sequential": nodes * visit}
    times["hillis-steele"] = scan(steps, max(rounds - 1, 1), 4 * rounds)
    times["blelloch"] = scan(steps, 1, 12 * rounds)
    for block in BLOCK_SIZES:
        if block < steps:
            block_rounds = max(1, math.ceil(math.log2(block + 1)))
            calls = math.ceil(steps / block) * (12 * block_rounds + 8 * ops_per_step)
            times[f"blocked:{block}"] = scan(block, 1, calls)
    return times


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


TRUSTED = 3.0
"""Where the cost model estimates a chain's scan this many times cheaper (or dearer) than
its walk, its choice is not timed against the other way (a walk tried on a chain that a
scan takes ten times faster costs that training step ten times): its largest error seen,
at BPPSA's setting, was 2.5x (a scan estimated at 0.6 of the walk took 1.5 times as long)."""

SHALLOW = 32
"""No chain that a scan takes faster than the walk fits in fewer ops than this (8 steps of
an RNN cell's 4; an MLP's training step is shallower)."""

RULE = (
    f"auto: a graph under {SHALLOW} ops deep is walked, and one whose tensors {SHALLOW} ops "
    f"down are too wide for a chain of them to come within {TRUSTED:g}x of the walk by the "
    "cost model; else each chain takes the cheapest of the walk and the scans by the model "
    f"(a scan only under {SCAN_MARGIN}x the walk), or, where the model puts its best scan "
    f"within {TRUSTED:g}x of the walk, the faster as timed ({ChainTimes.TRIALS} backwards "
    "each way, by the minima); a graph shape walked so is walked at once after"
)


def probe(tensor, ops):
    """(the tensor `ops` ops below `tensor`, whether a dense Jacobian was met on the way)
    along the path a chain takes, or None when the graph is not that deep. At every op
    the path follows the input made last among those made from another op's output (down
    an RNN whatever the operand order: h_{t-1} @ U, not x_t @ W of a leaf x_t), else
    the input made last."""
    dense = False
    for _ in range(ops):
        node = tensor._ctx
        ranked = []
        for index, (operand, needs) in enumerate(zip(node.inputs, node.needs_input_grad)):
            made = operand._ctx if needs else None  # (an input not needing one: a number)
            if made is not None:
                leads_on = any(getattr(inner, "_ctx", None) is not None for inner in made.inputs)
                ranked.append((leads_on, made.sequence, -index))
        if not ranked:
            return None
        index = -max(ranked)[2]  # (the first of an input read twice)
        dense = dense or jacobians.chain_kind(node, index, tensor.shape) == "dense"
        tensor = node.inputs[index]
    return tensor, dense


def scan_ratio(times):
    """The best scan's estimate over the walk's, in `estimate`'s `times`."""
    scans = [seconds for name, seconds in times.items() if name != "sequential"]
    return min(scans) / times["sequential"]


def estimates_for(segment, workers=1):
    """`estimate`'s figures for a chain segment, found or declared."""
    shape, kind = segment.state_shape, segment.jacobian_kind
    return estimate(segment.length, segment.ops_per_step, shape, kind, workers=workers)


class AutoScheduler(ScanScheduler):
    """Per chain, the cheapest of sequential and the scans by the calibrated cost model,
    or the faster as timed where the model is not sure (`RULE`).

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([0.5, -0.3], requires_grad=True)
    >>> x.tanh().tanh().sum().backward(scheduler="auto")
    >>> x.grad.shape
    (2,)
    """

    def __init__(self):
        super().__init__("blelloch")
        self.name = "auto"
        self.chain_times = ChainTimes()
        self.clock = time.process_time  # (CPU time: what the other processes take is left out)
        self.trial = None  # (chains key, "scan" or "walk") of the run's chains, when timed
        self.graph_key = None  # the shape of the run's graph (`ChainTimes.graph_key`)
        self.start = None  # when the run's timed part began

    def run(self, graph):
        self.trial = None
        self.graph_key = self.chain_times.graph_key(graph)
        if self.graph_key in self.chain_times.walked:  # walked before: by the rule, or as timed
            graph.run_sequential()
            return
        self.start = self.clock()
        super().run(graph)
        if self.trial is not None:
            key, how = self.trial
            self.chain_times.record(key, how, self.clock() - self.start, self.graph_key)

    def find(self, graph):
        looks, _ = self.gate(graph)
        found = super().find(graph) if looks else {}
        self.trial = self.trial_of(found.values())
        if self.trial is not None and self.trial[1] == "walk":
            # A graph settled on the walk is walked without a look: the look is the
            # scan's cost alone (a fifth of the walk at hidden 32, 256 steps).
            self.start = self.clock()
        elif self.trial is None and all(
            self.choose(chain)[0] == "sequential" for chain in found.values()
        ):
            self.chain_times.remember_walked(self.graph_key)  # (no chain, or none can pay)
        return found

    def trial_of(self, segments):
        """(chains key, `ChainTimes.way`) for the found chains `segments` where they are
        timed; None where the cost model's choice stands untimed: no chain, or every
        chain's best scan estimated `TRUSTED` times cheaper than its walk, or every one
        that much dearer."""
        estimates = [estimates_for(segment) for segment in segments]
        ratios = [scan_ratio(times) for times in estimates]
        if not ratios or min(ratios) > TRUSTED or max(ratios) < 1 / TRUSTED:
            return None
        scans = any(best_choice(times)[0] != "sequential" for times in estimates)
        key = chains_key(segments)
        return key, self.chain_times.way(key, "scan" if scans else "walk")

    def gate(self, graph):
        """(whether to run the finder on `graph`, why): it runs where the tensors `SHALLOW`
        ops below an output are narrow enough for a long chain of them (8,192 steps of 4
        ops) to come within `TRUSTED` times the walk by the cost model."""
        for root in graph.roots:
            found = probe(root, SHALLOW) if root._ctx is not None else None
            if found is None:
                continue
            below, dense = found
            kind = "dense" if dense else "diagonal"
            # At hidden 64 in 4 rows no scan of a dense chain comes that close (its
            # calibrations put the best at 2.6-4.2x the walk; measured 3.6-4.2x), at
            # hidden 32 one does (0.65-0.9x; measured 0.6-0.9x).
            if scan_ratio(estimate(8192, 4, tuple(below.shape), kind)) < TRUSTED:
                return True, f"{kind} chains of tensors {below.shape} may pay: looked for chains"
            return False, f"no {kind} chain of tensors {below.shape} can pay: walked"
        return False, f"the graph is not {SHALLOW} ops deep: walked"

    def choose(self, segment):
        """(method, block size) for `segment`: the cost model's cheapest, or, where the
        run's chains are timed (`trial`), the walk or the cheapest scan."""
        way = None if self.trial is None else self.trial[1]
        if way == "walk":
            return "sequential", None
        times = estimates_for(segment)
        if way == "scan":
            times["sequential"] = math.inf
        method, block_size = best_choice(times)
        return method, block_size or self.block_size
