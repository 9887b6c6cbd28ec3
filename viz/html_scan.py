"""The levels of a scan, for the HTML page: which partial products each call combines.

A scanned chain of n steps is the list [g, J_n, ..., J_1] (the seed gradient, then the
steps' Jacobians from the top down; docs/scan.md). The engine's scan function is run on
*intervals* instead: element i is the interval [i, i], and combining [a, b] with [c, d]
gives [a, d] (the product of elements a..d). Every call the scan makes to its operator is
one level: one vectorised numpy call, every combine in it independent of the others. So
the levels are the engine's own, not a drawing of the textbook algorithm.
"""

from __future__ import annotations

import numpy as np

from tinygrad_ops.scheduler import resolve_scheduler, scans

METHODS = ("hillis-steele", "blelloch", "blocked")


class IntervalOperator(scans.AssociativeOperator):
    """Combines intervals of positions and notes each call's pairs as a level."""

    def __init__(self):
        self.levels = []

    def combine(self, left, right):
        (left_intervals,), (right_intervals,) = left, right
        self.levels.append(
            [
                [int(a), int(b), int(c), int(d)]
                for (a, b), (c, d) in zip(left_intervals.tolist(), right_intervals.tolist())
            ]
        )
        return (np.stack([left_intervals[:, 0], right_intervals[:, 1]], axis=1),)

    def identity(self, like, count):  # pragma: no cover - the scans here never ask for it
        raise NotImplementedError("intervals have no identity element")


def scan_levels(method, steps, block_size=None):
    """{"method", "block_size", "levels"} for a chain of `steps` steps scanned with
    `method` (the scan a scheduler noted in its `ScannedSegment`; `block_size` defaults to
    the registered scheduler's), or {"unknown": reason} when `method` is not a scan.

    >>> levels = scan_levels("blelloch", 4)["levels"]
    >>> len(levels), levels[-1]  # the last call fills in the even positions 2 and 4
    (4, [[0, 1, 2, 2], [0, 3, 4, 4]])
    """
    if method not in METHODS:
        return {
            "unknown": f"the {method} scheduler does not say which scan it ran "
            "(only hillis-steele, blelloch and blocked have one fixed method)"
        }
    if block_size is None:
        block_size = resolve_scheduler(method).block_size
    operator = IntervalOperator()
    first = (np.array([[0, 0]]),)

    def build(start, stop):
        positions = np.arange(start + 1, stop + 1)
        return (np.stack([positions, positions], axis=1),)

    scans.scan_from_prefix(
        method, first, build, steps, operator, block_size=block_size, sink=lambda *_: None
    )
    return {"method": method, "block_size": block_size, "levels": operator.levels}
