"""Matrix multiplication: a loop version, a vectorised one, and the backward rule.

    forward:   C[..., i, j] = Σ_k A[..., i, k] B[..., k, j]
               (the leading "batch" dims broadcast as numpy does: (2, 3, 4) @ (4, 5)
               multiplies each of the 2 matrices by the same B)
    backward:  dA = dC Bᵀ,   dB = Aᵀ dC     (Bᵀ swaps the last two dims)
               then sum each over the batch dims it was broadcast along, back to its
               own shape: B (4, 5) used by 2 matrices gets the sum of 2 products.

Derive it from shapes: dA must be (m, k) and only dC (m, n) with Bᵀ (n, k) makes it.
"""

import numpy as np


def matmul_loops(A, B):
    """C = A B for 2-D A (m, k) and B (k, n), as the triple loop of the definition."""
    raise NotImplementedError("exercise: write this part (see the docstring)")


def matmul(A, B):
    """C = A B with batch dims, vectorised without `@`, np.matmul, np.dot or einsum:
    broadcast A[..., i, k, None] against B[..., None, k, j] and sum over k."""
    raise NotImplementedError("exercise: write this part (see the docstring)")


def sum_to_shape(grad, shape):
    """Sum `grad` over the dims that broadcasting added or stretched, back to `shape`."""
    raise NotImplementedError("exercise: write this part (see the docstring)")


def matmul_backward(A, B, grad_output):
    """(dA, dB) of C = A B (A, B at least 2-D, batch dims broadcast), shapes of A and B."""
    raise NotImplementedError("exercise: write this part (see the docstring)")
