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
    # BEGIN SOLUTION
    rows, inner = A.shape
    columns = B.shape[1]
    C = np.zeros((rows, columns), dtype=np.result_type(A, B))
    for i in range(rows):
        for j in range(columns):
            for k in range(inner):
                C[i, j] += A[i, k] * B[k, j]
    return C
    # END SOLUTION


def matmul(A, B):
    """C = A B with batch dims, vectorised without `@`, np.matmul, np.dot or einsum:
    broadcast A[..., i, k, None] against B[..., None, k, j] and sum over k."""
    # BEGIN SOLUTION
    return (A[..., :, :, None] * B[..., None, :, :]).sum(axis=-2)
    # END SOLUTION


def sum_to_shape(grad, shape):
    """Sum `grad` over the dims that broadcasting added or stretched, back to `shape`."""
    # BEGIN SOLUTION
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad
    stretched = tuple(
        axis for axis, size in enumerate(shape) if size == 1 and grad.shape[axis] != 1
    )
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad
    # END SOLUTION


def matmul_backward(A, B, grad_output):
    """(dA, dB) of C = A B (A, B at least 2-D, batch dims broadcast), shapes of A and B."""
    # BEGIN SOLUTION
    grad_A = grad_output @ np.swapaxes(B, -1, -2)
    grad_B = np.swapaxes(A, -1, -2) @ grad_output
    return sum_to_shape(grad_A, A.shape), sum_to_shape(grad_B, B.shape)
    # END SOLUTION
