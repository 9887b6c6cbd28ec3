"""The (J, e) operator that turns backward along a chain into a scan.

A chain x_0 -> x_1 -> ... -> x_n has, with g_i = dL/dx_i (row vectors),

    g_{i-1} = g_i J_i + e_{i-1}

(J_i = dx_i/dx_{i-1}; e_{i-1} the gradient reaching x_{i-1} from off the chain). Write
step i as the pair (J_i, e_{i-1}), the map g -> g J_i + e_{i-1}. Applying (A, a) and then
(B, b) gives g -> (g A + a) B + b = g (A B) + (a B + b), so

    (A, a) · (B, b) = (A B, a B + b)

It is associative, not commutative (the earlier element stays on the left), and its
identity is (I, 0). The vector part of the i-th prefix of [(0, g_n), (J_n, e_{n-1}), ...]
is g_{n-i}. Worked example (docs/scan.md): [(0, 1), (3, 5), (2, 0)] -> g_1 = 8, g_0 = 16.
"""

import numpy as np


def combine(left, right):
    """left · right for pairs (A, a) with A (d, d) and a (d,)."""
    raise NotImplementedError("exercise: write this part (see the docstring)")


def identity(d):
    """The pair that changes nothing: (I, 0)."""
    raise NotImplementedError("exercise: write this part (see the docstring)")
