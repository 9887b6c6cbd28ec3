"""The constants of `auto`'s cost model, measured once per process on this machine
(`calibrate`), and what `auto` timed on the chains of hand-written loops (`ChainTimes`).
The model that reads them is `auto.estimate`.
"""

import itertools
import time

import numpy as np

from ..mode import enable_grad, gc_paused, in_fresh_thread
from .scan_scheduler import ScanScheduler

SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
SCAN_MARGIN = 0.95
"""A scan is chosen only when its time (estimated or measured) beats the walk's by this
factor: past the crossover a wrong scan loses more than a wrong walk."""
_CALIBRATION = {}


def _timed(function):
    """Seconds of one call of `function()`, the cyclic garbage collector paused (as the scan
    schedulers pause it; the walk allocates too little to care)."""
    with gc_paused():
        start = time.perf_counter()
        function()
        return time.perf_counter() - start


def _best_time(function, repeats=3):
    return min(_timed(function) for _ in range(repeats))


@enable_grad()  # calibration records graphs whatever the caller's grad mode
def _small_rnn(steps, size=2, batch=2, seed=0):
    """A tanh RNN of `steps` steps (4 ops each) on tiny arrays: (loss, number of nodes)."""
    from ..tensor import Tensor

    generator = np.random.default_rng(seed)
    weight = Tensor(generator.standard_normal((size, size)) * 0.5, requires_grad=True)
    bias = Tensor(np.zeros(size), requires_grad=True)
    inputs = generator.standard_normal((steps, batch, size))
    state = Tensor(np.zeros((batch, size)))
    for step in range(steps):
        state = (Tensor(inputs[step]) + state @ weight + bias).tanh()
    return state.sum(), 4 * steps + 1


def calibrate():
    """Measure the cost model's constants on this machine, in about half a second (cached
    for the process): the walk's and a found chain's scan's costs (`_engine_costs`), and
    numpy's (`_numpy_costs`), the stacked products t_mm(d), t_mv(d) per size among them.

    >>> costs = calibrate()
    >>> {"c_visit", "c_batch", "c_chain", "t_mm"} <= set(costs)
    True
    """
    if _CALIBRATION:
        return _CALIBRATION
    costs = {}
    # Its small RNNs' backward passes are this scheduler's own timing, not the caller's
    # work: they run in a thread of their own, which nothing watches (the first backward
    # with `auto` may be inside a tg.compile capture).
    in_fresh_thread(_engine_costs, costs)
    _numpy_costs(costs)
    # The wide walk's extra cost is a small difference of two noisy timings and came out
    # at 0 in some runs: at least half a vector-matrix product per row and node (about
    # one in two nodes of an RNN step is a product by the weight).
    costs["c_visit_area"] = max(costs["c_visit_area"], 0.5 * costs["t_mv"][32] / (32 * 32))
    _CALIBRATION.update(costs)
    return _CALIBRATION


def _engine_costs(costs):
    """The walk's and the scan's costs per node and per chain, on small RNNs."""
    from ..autograd.graph import BackwardGraph

    # The walk, and the scan of a chain found beforehand (`auto` estimates once it has
    # the chain: the finder's cost is sunk) at two chain lengths, runs interleaved (a slow
    # spell of a shared machine then hits both), best of five: the scan's cost splits
    # into a part per node and a part per chain (the scan's numpy calls). The longer
    # chain is long enough that the per-node costs include the cache misses of a big graph.
    short, long = 64, 640

    def walked(steps, **sizes):
        loss, nodes = _small_rnn(steps, **sizes)
        return _timed(lambda: loss.backward(scheduler="sequential")) / nodes

    def scanned(steps):
        loss, _ = _small_rnn(steps)
        graph = BackwardGraph([loss], None, False, True)
        graph.send(loss, np.ones_like(loss.data))
        scan = ScanScheduler("blelloch")
        found = scan.find(graph)
        scan.find = lambda graph: found  # (the chain found before the timing)
        return _timed(lambda: loss.backward(scheduler=scan))

    rounds = [(walked(long), scanned(short), scanned(long)) for _ in range(5)]
    visit, short_time, long_time = (min(times) for times in zip(*rounds))
    short_nodes, long_nodes = 4 * short + 1, 4 * long + 1
    per_node = (long_time - short_time) / (long_nodes - short_nodes)
    costs["c_visit"] = visit
    costs["c_batch"] = max(per_node, 0.1 * long_time / long_nodes)
    costs["c_chain"] = max(short_time - per_node * short_nodes, 0.0)
    # The walk's cost grows with the arrays (its matrix products are d x d): a second
    # walk, on states of 32 values in 4 rows, gives the part per node that grows with
    # rows * d^2.
    wide = min(walked(160, size=32, batch=4) for _ in range(3))
    costs["c_visit_area"] = max((wide - costs["c_visit"]) / (4 * 32 * 32), 0.0)


def _numpy_costs(costs):
    """Fresh memory, elementwise work, a numpy call, stacked products per size."""
    # Fresh memory, per byte (page faults and the first write): a scan that keeps all of
    # a long chain's Jacobians at once pays it on them and again on their pair products.
    fresh = 2**22
    costs["c_fresh"] = _best_time(lambda: np.ones(fresh)) / (8 * fresh)
    # Elementwise work (building the Jacobians: d x d values per row and step).
    values = np.ones((64, 4, 32, 32))
    costs["c_element"] = _best_time(lambda: np.multiply(values, values)) / values.size
    tiny = np.ones((1, 2, 2))
    costs["c_call"] = _best_time(lambda: [np.matmul(tiny, tiny) for _ in range(100)]) / 100

    def each(left, right, repeats=3):
        """Seconds per product of the stacked `np.matmul(left, right)`, less a call's."""
        seconds = _best_time(lambda: np.matmul(left, right), repeats) - costs["c_call"]
        return max(seconds / len(right), 1e-10)

    # The large products: on a stack of 16 MiB, beyond the caches, what an unblocked scan
    # of a long chain pays (a block of 256 steps mostly stays in cache).
    matrix, vector, large = {}, {}, {}
    generator = np.random.default_rng(0)
    for size in SIZES:
        left = generator.standard_normal((max(4, int(1e5 / size**3)), size, size))
        np.matmul(left, left)  # warm up (thread pools, page faults)
        matrix[size] = each(left, left)
        vector[size] = each(left[:, :1, :], left)
        stack = left
        if size <= 64:
            stack = generator.standard_normal((2**24 // (8 * size * size), size, size))
        large[size] = max(each(stack, stack, 2), matrix[size])
    # A stray slow measurement (a thread pool waking up) must not make a size look
    # impossibly expensive: a doubling of d costs at most 16x (8x in theory).
    for table in (matrix, vector):
        for low, high in itertools.pairwise(SIZES):
            table[high] = min(table[high], 16 * table[low])
    costs["t_mm"], costs["t_mv"], costs["t_mm_large"] = matrix, vector, large


class ChainTimes:
    """What `auto` timed on the chains of hand-written loops where its cost model is not
    sure of its choice (docs/scan.md, "The cost model"): per chains key (`chains_key`),
    `TRIALS` CPU times of the whole backward each way, scanned and walked; and the graph
    shapes (`graph_key`) walked at once from then on. An entry per chains and graph shape
    met (a few small tuples)."""

    TRIALS = 3

    def __init__(self):
        self.times = {}  # chains key -> {"scan": [seconds, ...], "walk": [...]}
        self.walked = set()  # graph keys walked at once
        self.newest = None  # the creation number of the output of the latest backward

    def way(self, key, model_way):
        """ "scan" or "walk" for the next backward of these chains: the way timed fewer
        times (the model's on a tie) until both are timed `TRIALS` times, then the faster."""
        times = self.times.get(key, {})
        other = "walk" if model_way == "scan" else "scan"
        ran, other_ran = len(times.get(model_way, ())), len(times.get(other, ()))
        if min(ran, other_ran) < self.TRIALS:
            return model_way if ran <= other_ran else other
        measured = self.measured(key)
        return "scan" if measured["scan"] < SCAN_MARGIN * measured["walk"] else "walk"

    def record(self, key, how, seconds, graph_key=None):
        """Keep a trial's time (`TRIALS` each way: the same number of samples on both
        sides); remember `graph_key` if these chains settle on the walk."""
        times = self.times.setdefault(key, {})
        trials = times.setdefault(how, [])
        if len(trials) < self.TRIALS:
            trials.append(seconds)
        settled = all(len(times.get(way, ())) >= self.TRIALS for way in ("scan", "walk"))
        if settled and self.way(key, how) == "walk":
            self.remember_walked(graph_key)

    def remember_walked(self, graph_key):
        """Backwards of this graph shape are walked at once from now on."""
        if graph_key is not None:
            self.walked.add(graph_key)

    def measured(self, key):
        """{"scan": best seconds, "walk": ...} of what was timed on these chains."""
        return {how: min(seconds) for how, seconds in self.times.get(key, {}).items()}

    def graph_key(self, graph):
        """The shape of `graph`, read without walking it: the class of the op that made its
        output, the output's shape, and how many ops were recorded since the previous
        backward that asked (a training step's forward: the same count every step); None
        for several outputs or `tg.grad` inputs. A shape mistaken for another costs only
        speed: the gradients are the walk's either way."""
        if len(graph.roots) != 1 or graph.wanted is not None or graph.roots[0]._ctx is None:
            return None
        node = graph.roots[0]._ctx
        newest, self.newest = self.newest, node.sequence
        return (
            None if newest is None else (type(node), graph.roots[0].shape, node.sequence - newest)
        )


def chains_key(segments):
    """What decides the cost of a backward among its chains: per segment its steps' ops
    and length (`Segment.describe`), the chain tensor's shape and dtype."""
    return tuple(
        (segment.describe(), tuple(segment.state_shape), segment.anchors[-1].data.dtype.str)
        for segment in segments
    )
