"""Prefix scans over an associative operator, vectorised over stacked numpy arrays.

An *element* is a tuple of arrays that share a leading (stack) axis; `elements[0][i]`,
`elements[1][i]`, ... together are element i. An operator combines two stacks of elements
pairwise, earlier element on the left (the operators here are not commutative, so the
order matters everywhere). Every scan returns the inclusive prefixes

    out[i] = x[0] . x[1] . ... . x[i]

The scans, each a function over any operator with a doctest (docs/scan.md section 3):
`sequential_scan` (the fold, the reference), `hillis_steele_scan`, `blelloch_scan` and
`blocked_scan`, all on `scan_from_prefix`; `chain_scan` is the backward of a chain as one
of them, `work_and_depth` counts a scan's products.
"""

import numpy as np


def take(elements, index):
    """Element(s) `index` (an int, slice or index array) of a stack of elements."""
    return tuple(array[index] for array in elements)


def concatenate(*stacks):
    """Stacks of elements joined along the stack axis."""
    return tuple(np.concatenate(arrays, axis=0) for arrays in zip(*stacks))


def length(elements):
    return elements[0].shape[0]


class AssociativeOperator:
    """Base class: `combine(left, right)` pairs stacks element by element, left first.

    Prefixes that start at element 0 may be cheaper than general elements (for the backward
    affine operator element 0 is the seed gradient, so every prefix is a vector): a subclass
    says so with `to_prefix(elements)` (elements that start at 0 made prefixes) and
    `extend(prefixes, elements)` (prefix . element); the defaults treat prefixes as
    elements. (No scan here needs the identity element: a ragged length waits a level.)
    """

    def combine(self, left, right):  # pragma: no cover - subclasses override it
        raise NotImplementedError

    def to_prefix(self, elements):
        return elements

    def extend(self, prefixes, elements):
        return self.combine(prefixes, elements)


def apply_dense(vectors, matrices):
    """Row vectors (..., d) times matrices (..., d, e), batched: (..., e)."""
    return np.matmul(vectors[..., None, :], matrices)[..., 0, :]


# How a step's Jacobian of each kind composes with another (A B) and is applied to row
# vectors (g A): dense (..., d, d) matrices, or the diagonals (..., d) of diagonal
# matrices, kept as vectors (the Jacobians of elementwise ops).
DENSE = (np.matmul, apply_dense)
DIAGONAL = (np.multiply, np.multiply)


class MatrixProduct(AssociativeOperator):
    """Elements (A,) with A (..., d, d): A . B = A @ B, identity I."""

    def combine(self, left, right):
        return (np.matmul(left[0], right[0]),)


class AffineCompose(AssociativeOperator):
    """Elements (A, a), the map g -> g A + a on row vectors: (A, a) . (B, b) = (A B, a B + b).

    `A` is (..., d, d) and `a` is (..., d); identity (I, 0). This is the backward step of
    a chain (docs/scan.md section 2). With `seeded=True` element 0 is (anything, g_n): every
    prefix is then the vector alone, and extending it costs a vector-matrix product. With
    `diagonal=True` A and B are diagonal matrices stored as their diagonals (..., d), and
    (a, α) . (b, β) = (a b, α b + β) is all elementwise (docs/scan.md section 4).
    """

    def __init__(self, seeded=False, diagonal=False):
        self.seeded = seeded
        self.compose, self.apply = DIAGONAL if diagonal else DENSE

    def combine(self, left, right):
        A, a = left
        B, b = right
        return (self.compose(A, B), self.apply(a, B) + b)

    def to_prefix(self, elements):
        return (elements[1],) if self.seeded else elements

    def extend(self, prefixes, elements):
        if not self.seeded:
            return self.combine(prefixes, elements)
        B, b = elements
        return (self.apply(prefixes[0], B) + b,)


class SeededProduct(AssociativeOperator):
    """AffineCompose when every injection is zero: elements (A,) with A (..., d, d), or
    diagonals (..., d) with `diagonal=True`, composed as A B; element 0 is the seed, so
    every prefix is a vector (g -> g A). Half the work of the affine pairs."""

    def __init__(self, diagonal=False):
        self.compose, self.apply = DIAGONAL if diagonal else DENSE

    def combine(self, left, right):
        return (self.compose(left[0], right[0]),)

    def to_prefix(self, elements):  # pragma: no cover - the schedulers pass the seed itself
        raise TypeError("SeededProduct takes its seed as the first prefix")

    def extend(self, prefixes, elements):
        return (self.apply(prefixes[0], elements[0]),)


# ----------------------------------------------------------------------------------------------
# The scans


def sequential_scan(elements, operator):
    """Inclusive prefixes by a left fold: n - 1 combines, one after the other.

    >>> import numpy as np
    >>> matrices = (np.array([[[1, 1], [0, 1]]] * 3),)
    >>> sequential_scan(matrices, MatrixProduct())[0][2].tolist()
    [[1, 3], [0, 1]]
    """
    return _scan("sequential", elements, operator)


def hillis_steele_scan(elements, operator):
    """Inclusive prefixes in ceil(log2 n) rounds, O(n log n) combines (Hillis & Steele 1986):
    for k = 1, 2, 4, ..., round k sets x[i] = x[i-k] . x[i] for every i >= k at once.

    >>> import numpy as np
    >>> matrices = (np.array([[[1, 1], [0, 1]]] * 5),)
    >>> hillis_steele_scan(matrices, MatrixProduct())[0][:, 0, 1].tolist()
    [1, 2, 3, 4, 5]
    """
    return _scan("hillis-steele", elements, operator)


def _hillis_steele_from_prefix(first, rest, operator):
    """Hillis-Steele over [first (a prefix)] + rest (general elements)."""
    count = 1 + length(rest)
    prefixes = first
    interior = rest  # position p (not yet finished) lives at interior[p - step]
    step = 1  # (positions below `step` hold finished prefixes: they contain element 0)
    while step < count:
        # Positions [step, 2 step) take a finished prefix from the left.
        reach = min(step, count - step)
        finished = operator.extend(take(prefixes, slice(0, reach)), take(interior, slice(0, reach)))
        # Positions >= 2 step combine two general elements, step apart.
        if count > 2 * step:
            remaining = count - 2 * step
            interior = operator.combine(
                take(interior, slice(0, remaining)), take(interior, slice(step, step + remaining))
            )
        prefixes = concatenate(prefixes, finished)
        step *= 2
    return prefixes


def _sequential_from_prefix(first, rest, operator):
    prefixes = [first]
    for index in range(length(rest)):
        prefixes.append(operator.extend(prefixes[-1], take(rest, slice(index, index + 1))))
    return concatenate(*prefixes)


def blelloch_scan(elements, operator):
    """Inclusive prefixes with O(n) combines in 2 log2 n rounds, for any length n (Blelloch
    1990, in its recursive odd/even form; a ragged last element just waits one level).

    >>> import numpy as np
    >>> matrices = (np.array([[[1, 1], [0, 1]]] * 7),)
    >>> blelloch_scan(matrices, MatrixProduct())[0][:, 0, 1].tolist()
    [1, 2, 3, 4, 5, 6, 7]
    """
    return _scan("blelloch", elements, operator)


def _blelloch_from_prefix(first, rest, operator):
    """Blelloch over [first (a prefix)] + rest (general elements). Up-sweep: pair
    neighbours, p[j] = x[2j] . x[2j+1]; scan p the same way (recursively), which gives the
    prefixes at the odd positions; down-sweep: the prefix at an even position 2j is
    prefix(2j - 1) . x[2j]."""
    count = 1 + length(rest)
    if count == 1:
        return first
    pairs_count = count // 2
    # Position 0 is `first`; positions 1.. are rest[0..].
    if pairs_count > 1:
        inner_rest = operator.combine(
            take(rest, slice(1, 2 * pairs_count - 2, 2)),
            take(rest, slice(2, 2 * pairs_count - 1, 2)),
        )
    else:
        inner_rest = None
    pair_zero = operator.extend(first, take(rest, slice(0, 1)))
    if inner_rest is None:
        odd_prefixes = pair_zero
    else:
        odd_prefixes = _blelloch_from_prefix(pair_zero, inner_rest, operator)
    even_count = (count - 1) // 2
    if even_count:
        # Even position 2j (j >= 1) is rest[2j - 1].
        later_evens = operator.extend(
            take(odd_prefixes, slice(0, even_count)),
            take(rest, slice(1, 2 * even_count, 2)),
        )
        even_prefixes = concatenate(first, later_evens)
    else:
        even_prefixes = first
    return _interleave(even_prefixes, odd_prefixes, count)


def _interleave(evens, odds, count):
    """Positions 0, 2, 4, ... from `evens` and 1, 3, ... from `odds`, as one stack."""
    out = []
    for even_array, odd_array in zip(evens, odds):
        merged = np.empty(
            (count,) + even_array.shape[1:], dtype=np.result_type(even_array, odd_array)
        )
        merged[0::2] = even_array
        merged[1::2] = odd_array
        out.append(merged)
    return tuple(out)


def blocked_scan(elements, operator, block_size=64):
    """Inclusive prefixes, `block_size` elements at a time: each block is scanned in
    parallel (Blelloch) starting from the prefix carried in from the blocks before it
    (`scan_from_prefix`'s "blocked": its memory bounded by the block).

    >>> import numpy as np
    >>> matrices = (np.array([[[1, 1], [0, 1]]] * 10),)
    >>> blocked_scan(matrices, MatrixProduct(), block_size=4)[0][:, 0, 1].tolist()
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    """
    if block_size < 1:
        raise ValueError(f"blocked_scan: block_size must be at least 1, got {block_size}")
    return _scan("blocked", elements, operator, block_size)


def _scan(method, elements, operator, block_size=64):
    """The prefixes of `elements` by `method`: element 0 made a prefix, the rest built and
    scanned from it by `scan_from_prefix`."""
    blocks = []

    def build(start, stop):  # (elements start..stop-1 after element 0)
        return take(elements, slice(start + 1, stop + 1))

    def sink(start, stop, prefixes):
        blocks.append(prefixes)

    first = operator.to_prefix(take(elements, slice(0, 1)))
    scan_from_prefix(method, first, build, length(elements) - 1, operator, block_size, sink)
    return concatenate(*blocks)


def scan_from_prefix(method, first, build, count, operator, block_size=64, sink=None):
    """Prefixes of [first] + elements, where `first` is already a prefix (the seed) and
    `build(start, stop)` makes elements start..stop-1 of the rest (`count` of them).

    `sink(start, stop, prefixes)` receives the prefixes of positions start..stop-1
    (position 0 is `first`); "blocked" hands them over one block at a time and builds
    one block of elements at a time, so its memory is bounded by `block_size`.
    """
    if method == "blocked":
        sink(0, 1, first)
        carry = first
        for start in range(0, count, block_size):
            stop = min(start + block_size, count)
            block = build(start, stop)
            prefixes = take(_blelloch_from_prefix(carry, block, operator), slice(1, None))
            sink(start + 1, stop + 1, prefixes)
            carry = take(prefixes, slice(-1, None))
        return
    rest = build(0, count)
    scan = {
        "sequential": _sequential_from_prefix,
        "hillis-steele": _hillis_steele_from_prefix,
        "blelloch": _blelloch_from_prefix,
    }[method]
    sink(0, count + 1, scan(first, rest, operator))


def chain_scan(method, seed, build, count, diagonal, injected, sink, block_size=64):
    """The backward of a chain of `count` steps as one scan (docs/scan.md section 1): the
    prefixes of [(0, g_n), (J_n, e_{n-1}), ..., (J_1, e_0)] are g_n, g_{n-1}, ..., g_0.

    `seed` is g_n; `build(start, stop)` makes elements start..stop-1 after it: (J, e)
    pairs, or (J,) alone when nothing enters the chain between its ends (`injected`
    False: the scan composes the Jacobians alone, half the work of the pairs); J is a
    stack of matrices (..., d, d), or of diagonals (..., d) when `diagonal`. `sink(start,
    stop, (vectors,))` receives g_{n - start} .. g_{n - stop + 1} as they are made.
    """
    if injected:
        operator = AffineCompose(seeded=True, diagonal=diagonal)
    else:
        operator = SeededProduct(diagonal)
    scan_from_prefix(method, (seed[None],), build, count, operator, block_size, sink)


class WorkAndDepth(AssociativeOperator):
    """An operator that counts instead of computing: each element is its depth (how many
    products lie on its longest path of dependencies); `combine` is a matrix-matrix
    product (a general element's), `extend` a vector-matrix one (a prefix's)."""

    def __init__(self):
        self.matrix_products = self.vector_products = 0

    def combine(self, left, right):
        self.matrix_products += length(right)
        return (np.maximum(left[0], right[0]) + 1,)

    def extend(self, prefixes, elements):
        self.vector_products += length(elements)
        return (np.maximum(prefixes[0], elements[0]) + 1,)


def work_and_depth(method, count, block_size=64):
    """(matrix-matrix products, vector-matrix products, depth) of the backward of a chain of
    `count` steps by `method` (the seed a vector, every step's Jacobian a matrix), counted
    by running the scan itself on `WorkAndDepth` (with injections, each matrix product
    carries a vector product beside it, not counted). The walk: `count` vector products, one
    after the other.

    >>> work_and_depth("sequential", 1024)
    (0, 1024, 1024)
    >>> work_and_depth("blelloch", 1024)
    (1013, 1024, 18)
    """
    operator = WorkAndDepth()
    (depths,) = _scan(method, (np.zeros(count + 1, dtype=np.int64),), operator, block_size)
    return operator.matrix_products, operator.vector_products, int(depths.max())
