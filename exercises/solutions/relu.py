"""ReLU: out = max(x, 0).

    forward:   out_i = max(x_i, 0)
    backward:  dx_i = g_i * [x_i > 0]      (g = dL/dout; at x_i = 0 the subgradient 0,
                                            as PyTorch)

The in-place trap: `grad_output` is not yours. The engine may hand one array to several
rules (an Add passes its gradient on to both of its inputs unchanged), so writing into it
(`grad_output[x <= 0] = 0`) silently changes the gradient of another branch. Return a new
array. (The same holds for `x`: other ops may have saved it for their own backward.)
"""

import numpy as np


def forward(x):
    """out = max(x, 0), elementwise."""
    return np.maximum(x, 0)


def backward(x, grad_output):
    """dL/dx, from the input `x` and `grad_output` = dL/dout (same shape and dtype as x)."""
    # BEGIN SOLUTION
    return grad_output * (x > 0)
    # END SOLUTION
