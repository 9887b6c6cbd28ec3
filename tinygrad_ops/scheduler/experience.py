"""What `auto` has measured: per chain, its whole backward's time scanned and walked.

A cost model calibrated on one small RNN misjudges some chains: at BPPSA's setting
(hidden 20, 16 rows, `F.linear` steps; docs/scan.md) it estimated a 100-step scan at
two thirds of the walk, and the scan took 1.45x the walk. So `auto` also keeps what each
choice took on the chains it met, keyed by what decides the cost (the step's op classes,
the chain's length, shape and dtype): the first backward of a chain follows the model;
when the model chose a scan (not by far: `auto.CONFIDENT`) or nearly did, the backwards
after it alternate, the other way first, until each way has been timed twice (a first
run pays for fresh memory and cold caches); from then on the faster of the two is
taken (the scan only when it beat the walk by `auto.SCAN_MARGIN`), each backward's time
improving that choice's best, the slower one tried again now and then when the two are
nearly tied. A training loop meets the same chains every step, so its choice settles
after four steps. The gradients are the same whichever way is taken (the tests check
every scheduler against the walk).
"""

SIZE = 64  # chains remembered (the oldest forgotten first)
TRIALS = 2  # runs timed each way before the faster is taken
RETRY = 8
TIE = 1.3


def signature(segments):
    """What decides a backward's cost among the chains found: per segment the op
    classes of its step, its length, the chain tensor's shape and dtype."""
    return tuple(
        (
            tuple(segment.template.classes),
            segment.length,
            tuple(segment.state_shape),
            segment.anchors[-1].data.dtype.str,
        )
        for segment in segments
    )


class Experience:
    """The best whole-backward time measured per chain signature, scanned and walked.

    >>> experience = Experience()
    >>> for seconds in (0.012, 0.006, 0.009, 0.007):  # scan, walk, scan, walk
    ...     how = experience.verdict("rnn", model_scans=True, close=False)
    ...     experience.record("rnn", how, seconds)
    >>> experience.verdict("rnn", model_scans=True, close=False), experience.measured("rnn")
    ('walk', {'scan': 0.009, 'walk': 0.006})
    """

    def __init__(self, margin=0.95):
        self.margin = margin
        self.best = {}  # signature -> {"scan": best seconds, "walk": best seconds}
        self.runs = {}  # signature -> {"scan": runs timed, "walk": runs timed}
        self.count = {}  # backwards decided from both measurements, per signature

    def measured(self, key):
        return dict(self.best.get(key, {}))

    def settled(self, key):
        """Whether both ways have been timed `TRIALS` times on these chains."""
        runs = self.runs.get(key, {})
        return min(runs.get("scan", 0), runs.get("walk", 0)) >= TRIALS

    def walks(self, key):
        """Whether both ways are timed on these chains and the walk is the faster."""
        seen = self.best.get(key, {})
        return self.settled(key) and not seen["scan"] < self.margin * seen["walk"]

    def verdict(self, key, model_scans, close):
        """'scan' or 'walk' for the next backward of chains with this signature: the
        faster measured once each has been timed `TRIALS` times (a first run pays for
        fresh memory and cold caches), until then the one timed fewer times, the model's
        choice first."""
        seen = self.best.get(key, {})
        runs = self.runs.get(key, {})
        first = "scan" if model_scans else "walk"
        other = "walk" if model_scans else "scan"
        if not (model_scans or close):
            return "walk"
        if min(runs.get(first, 0), runs.get(other, 0)) < TRIALS:
            return other if runs.get(other, 0) < runs.get(first, 0) else first
        faster = "scan" if seen["scan"] < self.margin * seen["walk"] else "walk"
        slower = "walk" if faster == "scan" else "scan"
        # Near a tie a slow spell of the machine may have decided: the slower choice is
        # tried again every RETRY backwards (at most ~4% lost).
        self.count[key] = count = self.count.get(key, 0) + 1
        if count % RETRY == 0 and seen[slower] < TIE * seen[faster]:
            return slower
        return faster

    def record(self, key, how, seconds):
        """Keep the best time of `how` ('scan' or 'walk') on chains with this signature."""
        seen = self.best.pop(key, {})  # re-inserted: the newest key is forgotten last
        seen[how] = min(seconds, seen.get(how, seconds))
        self.best[key] = seen
        runs = self.runs.setdefault(key, {})
        runs[how] = runs.get(how, 0) + 1
        while len(self.best) > SIZE:
            oldest = next(iter(self.best))
            del self.best[oldest]
            self.count.pop(oldest, None)
            self.runs.pop(oldest, None)
