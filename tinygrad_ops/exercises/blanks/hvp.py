"""A second-order gradient: the Hessian-vector product H v, without building H.

    H v = d/dx ( ∇f(x) · v )

Take the gradient of f once, keeping its graph (`create_graph=True`: the gradient is then
itself a Tensor that can be differentiated), contract it with v (a scalar: Σ ∇f(x) v),
and take the gradient of that. Two backward passes, whatever the size of x: the whole
Hessian (n × n) is never formed. With `tg.grad(outputs, inputs, create_graph=True)`; it
leaves every `.grad` as it was.
"""

import tinygrad_ops as tg


def hvp(f, x, v):
    """H v of the scalar function `f` at the Tensor `x` (requires_grad), `v` a Tensor of x's
    shape; returns a Tensor of x's shape."""
    raise NotImplementedError("exercise: write this part (see the docstring)")
