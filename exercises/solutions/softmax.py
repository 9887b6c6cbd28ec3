"""Softmax over any axis, stable for any input.

    forward:   y_i = exp(x_i - m) / Σ_j exp(x_j - m),   m = max_j x_j  (along `axis`)
    backward:  dx_i = y_i (g_i - Σ_j g_j y_j)          (along `axis`; g = dL/dy)

Subtracting m changes nothing mathematically (numerator and denominator are both scaled
by exp(-m)) but keeps every exponent <= 0, so exp never overflows. Take m along `axis`
(keepdims=True), not over the whole array: rows far apart would underflow to 0 / 0.
The Jacobian dy_i/dx_j = y_i (δ_ij - y_j) is never built: multiplying g by it gives the
rule. A row that is all -inf has no softmax (0 / 0): PyTorch returns nan there, and so
should you, without spoiling the other rows.
"""

import numpy as np


def forward(x, axis=-1):
    """y = softmax(x) along `axis`, for an array of any shape."""
    # BEGIN SOLUTION
    shifted = x - x.max(axis=axis, keepdims=True)
    exps = np.exp(shifted)
    return exps / exps.sum(axis=axis, keepdims=True)
    # END SOLUTION


def backward(y, grad_output, axis=-1):
    """dL/dx from the forward's output `y` and `grad_output` = dL/dy."""
    # BEGIN SOLUTION
    return y * (grad_output - (grad_output * y).sum(axis=axis, keepdims=True))
    # END SOLUTION
