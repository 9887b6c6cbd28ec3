"""A gradient check by central differences.

    df/dx_i ≈ (f(x + h e_i) - f(x - h e_i)) / (2 h)      error O(h²)

(the one-sided difference (f(x + h e_i) - f(x)) / h has error O(h)). Work in float64
whatever the input's dtype: in float32, f(x ± h) for h = 1e-6 differ in the last few of
their 7 digits, and in float16 not at all. Leave `x` as you found it.
"""

import numpy as np


def numerical_gradient(f, x, h=1e-6):
    """The gradient of the scalar function `f` at `x` (an array), same shape as x, float64."""
    raise NotImplementedError("exercise: write this part (see the docstring)")


def gradcheck(f, grad_f, x, rtol=1e-5, atol=1e-7):
    """True when `grad_f(x)` (an analytic gradient) agrees with the numerical one."""
    raise NotImplementedError("exercise: write this part (see the docstring)")
