"""Checks of scan_combine.py, hillis_steele.py, blelloch.py and blocked.py.

The scans are checked with three operators: string concatenation (the order of the
operands shows), intervals of positions that must be neighbours (and whose depth counts the
rounds), and the (J, e) pairs of a chain, against the recurrence and the engine's own
vectorised scans (`tinygrad_ops.scheduler.scans`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tinygrad_ops.scheduler import scans

from .checking import Case, MismatchError, close, random


def reference_combine(left, right):
    """(A, a) · (B, b) = (A B, a B + b): the checker's own, so a scan can be checked alone."""
    return left[0] @ right[0], left[1] @ right[0] + right[1]


def reference_blelloch(items, combine):
    """The in-block scan handed to the student's blocked scan (a plain fold: always right)."""
    out = list(items[:1])
    for item in items[1:]:
        out.append(combine(out[-1], item))
    return out


def chain(count, d, seed):
    """[(0, g), (J, e), ...]: a random chain's seed element and steps."""
    elements = [(np.zeros((d, d)), random((d,), seed))]
    for step in range(count - 1):
        elements.append((random((d, d), seed + 1 + step, 0.5), random((d,), seed + 100 + step)))
    return elements


def scan_combine_cases():
    def against_engine(module):
        left, right = chain(3, 3, 30)[1:]
        engine = scans.AffineCompose().combine(
            (left[0][None], left[1][None]), (right[0][None], right[1][None])
        )
        got = module.combine(left, right)
        close(got[0], engine[0][0], "combine's matrix vs the engine")
        close(got[1], engine[1][0], "combine's vector vs the engine")

    def worked_example(module):
        elements = [
            (np.zeros((1, 1)), np.ones(1)),
            (np.full((1, 1), 3.0), np.full(1, 5.0)),
            (np.full((1, 1), 2.0), np.zeros(1)),
        ]
        first = module.combine(elements[0], elements[1])
        close(first[1], [8.0], "g_1 of the worked example")
        close(module.combine(first, elements[2])[1], [16.0], "g_0 of the worked example")
        grouped = module.combine(elements[0], module.combine(elements[1], elements[2]))
        close(grouped[1], [16.0], "g_0 grouped the other way round")

    def the_identity(module):
        element = chain(2, 3, 31)[1]
        identity = module.identity(3)
        for what, result in (
            ("identity · x", module.combine(identity, element)),
            ("x · identity", module.combine(element, identity)),
        ):
            close(result[0], element[0], f"{what}: matrix")
            close(result[1], element[1], f"{what}: vector")

    return [
        Case(
            "random 3 × 3 pairs",
            "(A, a) · (B, b) = (A @ B, a @ B + b): a is a row vector, "
            "so it multiplies B from the left",
            against_engine,
        ),
        Case(
            "the worked example of docs/scan.md",
            "[(0, 1), (3, 5), (2, 0)] gives g_1 = 8, g_0 = 16 in either grouping (associativity)",
            worked_example,
        ),
        Case("the identity", "(I, 0): np.eye(d) and np.zeros(d)", the_identity),
    ]


BLOCK_SIZE = 3  # the blocked scan's block in the checks: several blocks, a ragged last one


@dataclass
class ScanMethod:
    """A scan exercise: its function's name, the engine's scan, and its bounds on the
    number of combines and on the depth (rounds) for n elements."""

    name: str
    engine_scan: Callable
    max_combines: Callable
    max_depth: Callable


def _run_scan(module, name, elements, combine):
    function = getattr(module, name)
    if name == "blocked":
        return function(elements, combine, BLOCK_SIZE, reference_blelloch)
    return function(elements, combine)


def _scan_order(method):
    def run(module):
        letters = list("abcdefghijk")
        got = _run_scan(module, method.name, letters, lambda a, b: a + b)
        expected = ["".join(letters[: i + 1]) for i in range(len(letters))]
        if got != expected:
            raise MismatchError(f"prefixes of 'abcdefghijk' by concatenation: got {got}")

    return run


def _scan_neighbours(method, count):
    def run(module):
        combines = []

        def combine(left, right):
            if left[1] + 1 != right[0]:
                raise MismatchError(
                    f"combined [{left[0]}..{left[1]}] with [{right[0]}..{right[1]}]"
                    ", which are not neighbours"
                )
            combines.append(1)
            return (left[0], right[1], max(left[2], right[2]) + 1)

        got = _run_scan(module, method.name, [(i, i, 0) for i in range(count)], combine)
        if [(start, end) for start, end, _ in got] != [(0, i) for i in range(count)]:
            raise MismatchError(f"the prefixes are {[(s, e) for s, e, _ in got]}")
        if len(combines) > method.max_combines(count):
            raise MismatchError(
                f"{len(combines)} combines for {count} elements; at most "
                f"{method.max_combines(count)} expected"
            )
        depth = max(level for _, _, level in got)
        if depth > method.max_depth(count):
            raise MismatchError(
                f"{depth} rounds deep for {count} elements; at most "
                f"{method.max_depth(count)} expected"
            )

    return run


def _scan_gradients(method, count):
    def run(module):
        elements = chain(count, 2, 32 + count)
        got = _run_scan(module, method.name, elements, reference_combine)
        stacked = (np.stack([m for m, _ in elements]), np.stack([v for _, v in elements]))
        engine = method.engine_scan(stacked, scans.AffineCompose())
        if len(got) != count:
            raise MismatchError(f"{len(got)} prefixes for {count} elements")
        close(
            np.stack([vector for _, vector in got]),
            engine[1],
            "prefix vectors vs the engine's scan",
            rtol=1e-10,
        )
        grad = elements[0][1]  # the recurrence g_{i-1} = g_i J_i + e_{i-1}, walked
        for step, (matrix, vector) in enumerate(elements[1:], start=1):
            grad = grad @ matrix + vector
            close(got[step][1], grad, f"prefix {step} vs the walked recurrence", rtol=1e-10)

    return run


def _scan_cases(*fields):
    method = ScanMethod(*fields)
    left = "keep the earlier element on the left: combine(items[i - k], items[i])"
    return [
        Case("order (strings)", left, _scan_order(method)),
        *[
            Case(
                f"{count} elements (intervals)",
                "combine only neighbouring partial products; "
                "stay within the combines and rounds of the method",
                _scan_neighbours(method, count),
            )
            for count in (1, 2, 7, 8, 13)
        ],
        *[
            Case(
                f"a chain of {count} (J, e) steps",
                "the vector of prefix i is g_(n - i)",
                _scan_gradients(method, count),
            )
            for count in (1, 5, 16)
        ],
    ]


def _log2(count):
    return math.ceil(math.log2(count)) if count > 1 else 0


def hillis_steele_cases():
    return _scan_cases(
        "hillis_steele",
        scans.hillis_steele_scan,
        lambda n: sum(n - step for step in (2**k for k in range(_log2(n)))),
        _log2,
    )


def blelloch_cases():
    return _scan_cases("blelloch", scans.blelloch_scan, lambda n: 2 * n, lambda n: 2 * _log2(n))


def blocked_cases():
    return _scan_cases(
        "blocked",
        lambda stacked, operator: scans.blocked_scan(stacked, operator, block_size=BLOCK_SIZE),
        lambda n: 2 * n,
        lambda n: n,
    )
