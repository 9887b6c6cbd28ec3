"""Small graphs worth looking at, built from raw Tensor ops with named weights.

Each builder returns the scalar loss of one forward pass, seeded, so that the same call
always gives the same picture. `EXAMPLES` maps the names the command line accepts
(`tinygrad-ops graph mlp`) to the builders.
"""

from __future__ import annotations

import itertools

import numpy as np

import tinygrad_ops as tg


def _weight(rng, shape, name, scale=None):
    scale = 1.0 / np.sqrt(shape[0]) if scale is None else scale
    tensor = tg.Tensor((rng.standard_normal(shape) * scale).astype(np.float32), requires_grad=True)
    tensor.name = name
    return tensor


def _data(rng, shape, name):
    tensor = tg.Tensor(rng.standard_normal(shape).astype(np.float32))
    tensor.name = name
    return tensor


def _grouped(calls, function, name, type_name):
    return function if calls is None else calls.wrap(function, name, type_name)


def mlp(batch=8, sizes=(4, 16, 3), seed=0, calls=None):
    """A two-layer MLP with tanh and a mean squared error: the loss tensor.

    With `calls` (a `viz.ModuleCalls`) each layer's ops are recorded as one group.

    >>> from tinygrad_ops.viz import examples
    >>> examples.mlp().shape
    ()
    """
    rng = np.random.default_rng(seed)
    x = _data(rng, (batch, sizes[0]), "x")
    target = _data(rng, (batch, sizes[-1]), "target")
    hidden = x
    for layer, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes), start=1):
        weight = _weight(rng, (fan_in, fan_out), f"layer{layer}.weight")
        bias = _weight(rng, (fan_out,), f"layer{layer}.bias", scale=0.1)
        linear = _grouped(calls, lambda x, w=weight, b=bias: x @ w + b, f"layer{layer}", "Linear")
        hidden = linear(hidden)
        if layer < len(sizes) - 1:
            hidden = _grouped(calls, lambda x: x.tanh(), f"act{layer}", "Tanh")(hidden)
    error = hidden - target
    return (error * error).mean()


def rnn(steps=4, batch=2, input_size=3, hidden_size=5, seed=0, calls=None):
    """An Elman RNN, h_t = tanh(x_t W + h_{t-1} U + b), with a loss on the last state.

    With `calls` (a `viz.ModuleCalls`) each step's ops are recorded as one call of "cell".

    >>> from tinygrad_ops.viz import examples
    >>> examples.rnn(steps=3).shape
    ()
    """
    rng = np.random.default_rng(seed)
    inputs = _data(rng, (steps, batch, input_size), "x")
    w_input = _weight(rng, (input_size, hidden_size), "cell.weight_ih")
    w_hidden = _weight(rng, (hidden_size, hidden_size), "cell.weight_hh")
    bias = _weight(rng, (hidden_size,), "cell.bias", scale=0.1)
    state = tg.zeros(batch, hidden_size)
    state.name = "h0"

    def cell(x, h):
        return (x @ w_input + h @ w_hidden + bias).tanh()

    cell = _grouped(calls, cell, "cell", "RNNCell")
    for step in range(steps):
        x_step = inputs[step]
        x_step.name = f"x[{step}]"
        state = cell(x_step, state)
    return (state * state).mean()


def softmax(batch=2, classes=4, seed=0):
    """Softmax cross-entropy written out: exp(z - max) / sum, then -mean(log p[target]).

    The intermediates carry the names of docs/derivations.md's softmax section (m = max x,
    e = exp(x - m), S = Σ e, y = e / S), so the picture maps onto the derivation.

    >>> from tinygrad_ops.viz import examples
    >>> examples.softmax().shape
    ()
    """
    rng = np.random.default_rng(seed)
    logits = _weight(rng, (batch, classes), "logits", scale=1.0)
    largest = logits.max(axis=-1, keepdims=True)
    largest.name = "m = max x"
    shifted = logits - largest
    shifted.name = "x - m"
    exps = shifted.exp()
    exps.name = "e = exp(x - m)"
    total = exps.sum(axis=-1, keepdims=True)
    total.name = "S = Σ e"
    probabilities = exps / total
    probabilities.name = "y = e / S"
    targets = rng.integers(0, classes, size=batch)
    picked = probabilities[np.arange(batch), targets]
    picked.name = "y[target]"
    loss = -picked.log().mean()
    loss.name = "loss"
    return loss


def layernorm(batch=3, features=4, eps=1e-5, seed=0):
    """Layer norm written out: (x - mean) / sqrt(var + eps) * weight + bias, summed.

    The intermediates carry the names of docs/derivations.md's layer-norm section (μ,
    x - μ, σ², 1/r, x̂, y), so the picture maps onto the derivation.

    >>> from tinygrad_ops.viz import examples
    >>> examples.layernorm().shape
    ()
    """
    rng = np.random.default_rng(seed)
    x = _weight(rng, (batch, features), "x", scale=1.0)
    x.name = None  # an input that requires grad: drawn as a (green) leaf
    weight = tg.ones(features, requires_grad=True)
    weight.name = "norm.weight"
    bias = tg.zeros(features, requires_grad=True)
    bias.name = "norm.bias"
    mean = x.mean(axis=-1, keepdims=True)
    mean.name = "μ"
    centred = x - mean
    centred.name = "x - μ"
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    variance.name = "σ²"
    deviation = (variance + eps).sqrt()
    deviation.name = "sqrt(σ² + ε) = 1/r"
    normalised = centred / deviation
    normalised.name = "x̂"
    out = normalised * weight + bias
    out.name = "y"
    return (out * out).sum()


EXAMPLES = {"mlp": mlp, "rnn": rnn, "softmax": softmax, "layernorm": layernorm}
