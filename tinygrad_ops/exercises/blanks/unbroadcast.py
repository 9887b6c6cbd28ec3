"""Broadcasting's gradient: sum each gradient back to its operand's shape.

numpy lines shapes up from the right and stretches size-1 (or missing) dims: a (3,) row
times a (2, 3) matrix uses the row twice. Whatever is used twice gets the sum of the
gradients of its uses, so the gradient of a stretched operand is the gradient of the
output *summed* over the copies:

    unbroadcast(grad, shape):  sum over the leading dims that broadcasting added
                               (grad.ndim - len(shape) of them), then over every dim
                               where `shape` has 1 and grad does not, keeping it (size 1)
    out = a * b:               da = unbroadcast(g * b, a.shape),  db = unbroadcast(g * a, b.shape)

For example grad (4, 2, 3) to shape (1, 3): sum axis 0 -> (2, 3), then axis 0 again with
keepdims -> (1, 3). A sum, not a mean: every copy's gradient counts in full. Do not
write into `grad` (return new arrays).
"""

import numpy as np


def unbroadcast(grad, shape):
    """`grad` summed back to `shape` (a tuple; () for a scalar)."""
    raise NotImplementedError("exercise: write this part (see the docstring)")


def mul_backward(a, b, grad_output):
    """(da, db) of out = a * b, with numpy's broadcasting: da has a's shape, db b's."""
    raise NotImplementedError("exercise: write this part (see the docstring)")
