"""The Hillis-Steele scan (Hillis and Steele, 1986).

Inclusive prefixes out[i] = x[0] · x[1] · ... · x[i] in ceil(log2 n) rounds:

    for k = 1, 2, 4, ... while k < n:
        x[i] = x[i - k] · x[i]   for every i >= k, all at once (from the old values)

O(n log n) combines; every combine of a round is independent of the others. Keep the
earlier element on the left: the operator (scan_combine.py) is not commutative.
"""


def hillis_steele(elements, combine):
    """The list of inclusive prefixes of `elements` under `combine(earlier, later)`."""
    raise NotImplementedError("exercise: write this part (see the docstring)")
