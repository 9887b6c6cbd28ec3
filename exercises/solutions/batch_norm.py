"""BatchNorm of an (N, C) or (N, C, L) batch: train and eval, with running statistics.

    training:  per channel c, over its m = N·L values:
               μ = mean(x),  σ² = mean((x - μ)²)            (biased: divide by m)
               y = (x - μ) / sqrt(σ² + eps) w + b
               running_mean ← (1 - momentum) running_mean + momentum μ
               running_var  ← (1 - momentum) running_var  + momentum σ² m / (m - 1)
                                                           (unbiased: divide by m - 1)
    eval:      μ, σ² are running_mean, running_var; nothing is updated.

    backward (training):  the LayerNorm rule over each channel's m values,
               dx = (d x̂ - mean(d x̂) - x̂ mean(d x̂ · x̂)) / sqrt(σ² + eps),   d x̂ = g w
    backward (eval):      μ and σ² are constants: dx = g w / sqrt(running_var + eps)
    both:      dw = Σ g x̂,  db = Σ g  per channel

PyTorch normalises with the biased variance but keeps the unbiased one: mixing them up
is off by m / (m - 1), invisible for a big batch and wrong for a small one.
"""

import numpy as np


def _axes(x):
    """Every axis but the channel axis 1."""
    return (0,) + tuple(range(2, x.ndim))


def _per_channel(values, x):
    """A (C,) vector shaped to broadcast against x: (1, C) or (1, C, 1)."""
    return np.reshape(values, (1, -1) + (1,) * (x.ndim - 2))


def forward(
    x, running_mean, running_var, weight=None, bias=None, training=True, momentum=0.1, eps=1e-5
):
    """y; in training, update `running_mean` and `running_var` (C,) in place."""
    # BEGIN SOLUTION
    axes = _axes(x)
    if training:
        count = x.size // x.shape[1]
        mean = x.mean(axis=axes)
        var = ((x - _per_channel(mean, x)) ** 2).mean(axis=axes)
        running_mean *= 1 - momentum
        running_mean += momentum * mean
        running_var *= 1 - momentum
        running_var += momentum * var * count / (count - 1)
    else:
        mean, var = running_mean, running_var
    x_hat = (x - _per_channel(mean, x)) / np.sqrt(_per_channel(var, x) + eps)
    out = x_hat if weight is None else x_hat * _per_channel(weight, x)
    return out if bias is None else out + _per_channel(bias, x)
    # END SOLUTION


def backward(x, grad_output, running_mean, running_var, weight=None, training=True, eps=1e-5):
    """(dx, dweight, dbias); dweight and dbias are (C,) (computed also without weight)."""
    # BEGIN SOLUTION
    axes = _axes(x)
    if training:
        mean = _per_channel(x.mean(axis=axes), x)
        rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    else:
        mean = _per_channel(running_mean, x)
        rstd = 1.0 / np.sqrt(_per_channel(running_var, x) + eps)
    x_hat = (x - mean) * rstd
    d_x_hat = grad_output if weight is None else grad_output * _per_channel(weight, x)
    if training:
        mean_d = d_x_hat.mean(axis=axes, keepdims=True)
        mean_d_x_hat = (d_x_hat * x_hat).mean(axis=axes, keepdims=True)
        dx = rstd * (d_x_hat - mean_d - x_hat * mean_d_x_hat)
    else:
        dx = d_x_hat * rstd
    return dx, (grad_output * x_hat).sum(axis=axes), grad_output.sum(axis=axes)
    # END SOLUTION
