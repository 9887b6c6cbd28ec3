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

from .checking import Check, Diagnosis, MismatchError, close, gives, matches, random


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


def scan_combine_checks():
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
        Check("combine of random 3 × 3 pairs equals the engine's", "combine", against_engine),
        Check(
            "the worked example of docs/scan.md, [(0, 1), (3, 5), (2, 0)], gives g_1 = 8 and "
            "g_0 = 16 in either grouping",
            "combine",
            worked_example,
        ),
        Check("identity(d) changes nothing on either side", "identity", the_identity),
    ]


def scan_combine_diagnoses():
    left, right = chain(3, 3, 33)[1:]

    def combine_is(wrong):
        return lambda m: matches(gives(m.combine, left, right), wrong(left, right))

    return [
        Diagnosis(
            "combine",
            "the earlier pair's vector goes through the later matrix: (A, a) · (B, b) = "
            "(A B, a B + b); you wrote it the other way round",
            combine_is(lambda p, q: (p[0] @ q[0], q[1] @ p[0] + p[1])),
        ),
        Diagnosis(
            "combine",
            "a is carried through B: the vector is a B + b, not a + b",
            combine_is(lambda p, q: (p[0] @ q[0], p[1] + q[1])),
        ),
        Diagnosis(
            "combine",
            "a is a row vector: it multiplies B from the left, a @ B (B @ a is Bᵀ's product)",
            combine_is(lambda p, q: (p[0] @ q[0], q[0] @ p[1] + q[1])),
        ),
        Diagnosis(
            "combine",
            "the matrices compose in order: A @ B, the earlier on the left",
            combine_is(lambda p, q: (q[0] @ p[0], p[1] @ q[0] + q[1])),
        ),
        Diagnosis(
            "identity",
            "the identity is (I, 0): its vector adds nothing, np.zeros(d)",
            lambda m: matches((gives(m.identity, 3) or (None, None))[1], np.ones(3)),
        ),
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


def _scan_checks(*fields):
    method = ScanMethod(*fields)
    return [
        Check(
            "the prefixes of 'abcdefghijk' under concatenation (the order of operands)",
            method.name,
            _scan_order(method),
        ),
        *[
            Check(
                f"{count} elements: only neighbouring parts are combined, within the "
                "method's combines and rounds",
                method.name,
                _scan_neighbours(method, count),
            )
            for count in (1, 2, 7, 8, 13)
        ],
        *[
            Check(
                f"a chain of {count} (J, e) steps: the engine's scan and the walked recurrence",
                method.name,
                _scan_gradients(method, count),
            )
            for count in (1, 5, 16)
        ],
    ]


def _log2(count):
    return math.ceil(math.log2(count)) if count > 1 else 0


def _strings(module, name):
    return gives(_run_scan, module, name, list("abcdefg"), lambda a, b: a + b)


def _swapped(name):
    def probe(module):
        got = _strings(module, name)
        right = ["abcdefg"[: i + 1] for i in range(7)]
        if not isinstance(got, list) or len(got) != 7 or got == right:
            return False
        return all(sorted(str(g)) == sorted(r) for g, r in zip(got, right))

    return Diagnosis(
        name,
        "the right parts in the wrong order: keep the earlier element on the left, "
        "combine(earlier, later); the operator is not commutative",
        probe,
    )


def _rounds(module, name, count=8):
    depth = []

    def combine(left, right):
        level = max(left, right) + 1
        depth.append(level)
        return level

    gives(_run_scan, module, name, [0] * count, combine)
    return max(depth, default=0), len(depth)


def hillis_steele_checks():
    return _scan_checks(
        "hillis_steele",
        scans.hillis_steele_scan,
        lambda n: sum(n - step for step in (2**k for k in range(_log2(n)))),
        _log2,
    )


def _hillis_steele_in_place(items):
    items, step = list(items), 1
    while step < len(items):
        for i in range(step, len(items)):
            items[i] = items[i - step] + items[i]
        step *= 2
    return items


def hillis_steele_diagnoses():
    return [
        _swapped("hillis_steele"),
        Diagnosis(
            "hillis_steele",
            "double the step each round (k = 1, 2, 4, ...): ceil(log2 n) rounds, not n - 1",
            lambda m: _rounds(m, "hillis_steele")[0] > 3,
        ),
        Diagnosis(
            "hillis_steele",
            "a round reads the old values only: build the round's new list from the "
            "previous one, never update it in place",
            lambda m: _strings(m, "hillis_steele") == _hillis_steele_in_place("abcdefg"),
        ),
    ]


def blelloch_checks():
    return _scan_checks("blelloch", scans.blelloch_scan, lambda n: 2 * n, lambda n: 2 * _log2(n))


def _blelloch_off_by_one(items):
    if len(items) <= 1:
        return list(items)
    pairs = [items[i] + items[i + 1] for i in range(0, len(items) - 1, 2)]
    prefixes = _blelloch_off_by_one(pairs)
    out = [items[0]]
    for i in range(1, len(items)):
        if i % 2 == 1:
            out.append(prefixes[i // 2])
        else:
            out.append(prefixes[min(i // 2, len(prefixes) - 1)] + items[i])
    return out


def blelloch_diagnoses():
    return [
        _swapped("blelloch"),
        Diagnosis(
            "blelloch",
            "the down-sweep is off by one: out[2j] = P[j - 1] · x[2j], the pair prefix "
            "that ends just before 2j",
            lambda m: _strings(m, "blelloch") == _blelloch_off_by_one(list("abcdefg")),
        ),
        Diagnosis(
            "blelloch",
            "a fold is n - 1 rounds deep: combine neighbours in pairs (up-sweep), scan the "
            "pairs, then fill in the even positions (down-sweep)",
            lambda m: _rounds(m, "blelloch")[0] >= 7,
        ),
    ]


def _blocks_scanned(module):
    calls = []

    def scan(block, combine):
        calls.append(list(block))
        return reference_blelloch(block, combine)

    got = module.blocked(list("abcdefgh"), lambda a, b: a + b, BLOCK_SIZE, scan)
    return got, calls


def _blocks_check(module):
    got, calls = _blocks_scanned(module)
    expected = [list("abc"), list("def"), list("gh")]
    if calls != expected:
        raise MismatchError(f"scan was called on {calls}; expected the blocks {expected}")
    if got != ["abcdefgh"[: i + 1] for i in range(8)]:
        raise MismatchError(f"prefixes {got}")


def blocked_checks():
    return [
        Check(
            "scan is called on each block of block_size elements, in order (a ragged last "
            "one), and nothing else",
            "blocked",
            _blocks_check,
        ),
        *_scan_checks(
            "blocked",
            lambda stacked, operator: scans.blocked_scan(stacked, operator, block_size=BLOCK_SIZE),
            lambda n: 2 * n,
            lambda n: n,
        ),
    ]


def blocked_diagnoses():
    def calls(module):
        result = gives(_blocks_scanned, module)
        return None if result is None else result[1]

    return [
        _swapped("blocked"),
        Diagnosis(
            "blocked",
            "scan each block with the `scan` you are given: scan(items[start:start + "
            "block_size], combine); a plain fold never blocks",
            lambda m: calls(m) == [],
        ),
        Diagnosis(
            "blocked",
            "cut the list into blocks of block_size before scanning: one scan of the whole "
            "list is not blocked",
            lambda m: any(len(call) > BLOCK_SIZE for call in calls(m) or []),
        ),
        Diagnosis(
            "blocked",
            "the carry is the last prefix of everything so far (out[-1]), and it is the "
            "earlier operand: combine(carry, prefix)",
            lambda m: (
                calls(m) == [list("abc"), list("def"), list("gh")]
                and (gives(_blocks_scanned, m) or [None])[0]
                != ["abcdefgh"[: i + 1] for i in range(8)]
            ),
        ),
    ]
