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
    raise NotImplementedError("exercise: write this part (see the docstring)")


def backward(x, grad_output, running_mean, running_var, weight=None, training=True, eps=1e-5):
    """(dx, dweight, dbias); dweight and dbias are (C,) (computed also without weight)."""
    raise NotImplementedError("exercise: write this part (see the docstring)")
