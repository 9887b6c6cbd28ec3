"""LayerNorm over the last k dims.

    forward:   μ = mean(x),  σ² = mean((x - μ)²)  over the last k dims (n values),
               x̂ = (x - μ) / sqrt(σ² + eps),      y = x̂ w + b
    backward:  d x̂ = g w
               dx  = (d x̂ - mean(d x̂) - x̂ mean(d x̂ · x̂)) / sqrt(σ² + eps)
               dw  = Σ over the leading dims of g x̂,   db = Σ over the leading dims of g

The two means are the two paths by which every x_i also moves μ and σ². Divide by
sqrt(σ² + eps), never by σ alone: a row with (nearly) constant values has σ ≈ 0.
"""

import numpy as np


def statistics(x, k, eps):
    """(x̂, 1 / sqrt(σ² + eps)) over the last k dims (keepdims)."""
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    return (x - mean) * rstd, rstd


def forward(x, k, weight=None, bias=None, eps=1e-5):
    """y = x̂ w + b; `weight` and `bias` have the shape of the last k dims (or are None)."""
    x_hat, _ = statistics(x, k, eps)
    out = x_hat if weight is None else x_hat * weight
    return out if bias is None else out + bias


def backward(x, grad_output, k, weight=None, eps=1e-5):
    """(dx, dweight, dbias): dweight and dbias have the shape of the last k dims."""
    # BEGIN SOLUTION
    axes = tuple(range(x.ndim - k, x.ndim))
    leading = tuple(range(x.ndim - k))
    x_hat, rstd = statistics(x, k, eps)
    d_x_hat = grad_output if weight is None else grad_output * weight
    mean_d = d_x_hat.mean(axis=axes, keepdims=True)
    mean_d_x_hat = (d_x_hat * x_hat).mean(axis=axes, keepdims=True)
    dx = rstd * (d_x_hat - mean_d - x_hat * mean_d_x_hat)
    return dx, (grad_output * x_hat).sum(axis=leading), grad_output.sum(axis=leading)
    # END SOLUTION
