"""The Blelloch scan (Blelloch, 1990), in its recursive odd/even form.

Inclusive prefixes out[i] = x[0] · ... · x[i] with O(n) combines in 2 log2 n rounds:

    up-sweep:    p[j] = x[2j] · x[2j + 1]        (pairs of neighbours)
    recurse:     P = prefixes of p               (P[j] = x[0] · ... · x[2j + 1])
    down-sweep:  out[2j + 1] = P[j],  out[0] = x[0],  out[2j] = P[j - 1] · x[2j]

Any length works: an odd last element waits one level. Fewer than 2n combines in all.
"""


def blelloch(elements, combine):
    """The list of inclusive prefixes of `elements` under `combine(earlier, later)`."""
    raise NotImplementedError("exercise: write this part (see the docstring)")
