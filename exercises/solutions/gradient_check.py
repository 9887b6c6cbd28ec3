"""A gradient check by central differences.

    df/dx_i ≈ (f(x + h e_i) - f(x - h e_i)) / (2 h)      error O(h²)

(the one-sided difference (f(x + h e_i) - f(x)) / h has error O(h)). Work in float64
whatever the input's dtype: in float32, f(x ± h) for h = 1e-6 differ in the last few of
their 7 digits, and in float16 not at all. Leave `x` as you found it.
"""

import numpy as np


def numerical_gradient(f, x, h=1e-6):
    """The gradient of the scalar function `f` at `x` (an array), same shape as x, float64."""
    # BEGIN SOLUTION
    x = np.array(x, dtype=np.float64)  # a float64 copy: the caller's x is not touched
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + h
        above = float(f(x))
        x[index] = original - h
        below = float(f(x))
        x[index] = original
        grad[index] = (above - below) / (2 * h)
    return grad
    # END SOLUTION


def gradcheck(f, grad_f, x, rtol=1e-5, atol=1e-7):
    """True when `grad_f(x)` (an analytic gradient) agrees with the numerical one."""
    # BEGIN SOLUTION
    return bool(np.allclose(grad_f(x), numerical_gradient(f, x), rtol=rtol, atol=atol))
    # END SOLUTION
