"""The RNN formulations the scan schedulers must find a chain in, however the step is
written (issue table of docs/scan.md, "Formulations"). Each builds the same model in this
engine or in PyTorch (for the oracle) from the same seeded arrays:

    build(library, dtype, steps, hidden, batch, seed) -> (loss, parameters)

`library` is "tg" or "torch" (the loops written in Python), or "tg-scan" (the same loops as
`tg.scan`, whose chains are declared). Shared by the tests and benchmarks/bench_scan.py.
"""

import numpy as np

INPUT_SIZE = 3


class Library:
    """The few operations the formulations use, in this engine or in PyTorch."""

    def __init__(self, name, dtype):
        self.scan = name == "tg-scan"
        name = "tg" if self.scan else name
        self.name = name
        self.dtype = dtype
        if name == "tg":
            import tinygrad_ops as tg
            from tinygrad_ops import functional

            self.tg, self.F = tg, functional
        else:
            import torch

            self.torch = torch
            self.F = torch.nn.functional

    def tensor(self, array, requires_grad=True):
        array = np.asarray(array, dtype=self.dtype)
        if self.name == "tg":
            return self.tg.Tensor(array, requires_grad=requires_grad)
        return self.torch.tensor(array, requires_grad=requires_grad)

    def loop(self, step, carry, *sequences):
        """(carry, ys): `carry, y = step(carry, *x)` over the steps' inputs (lists), as a
        Python loop, or as one `tg.scan` ("tg-scan": ys stacked, or None)."""
        if self.scan:
            xs = tuple(self.tg.stack(sequence) for sequence in sequences)
            return self.tg.scan(lambda state, x: step(state, *x), carry, xs)
        ys = []
        for x in zip(*sequences):
            carry, y = step(carry, *x)
            ys.append(y)
        return carry, ys

    def linear(self, x, weight, bias):
        return self.F.linear(x, weight, bias)

    def layer_norm(self, x, weight, bias):
        return self.F.layer_norm(x, (x.shape[-1],), weight, bias)

    def mse(self, x, target):
        return self.F.mse_loss(x, target)

    def cat(self, tensors):
        """The tensors joined along their last axis."""
        if self.name == "tg":
            return self.tg.cat(tensors, dim=-1)
        return self.torch.cat(tensors, dim=-1)

    def dropout(self, x, p, generator):
        """Dropout with the mask drawn from `generator` as this engine draws it."""
        if self.name == "tg":
            return self.F.dropout(x, p=p, generator=generator)
        kind = np.float64 if self.dtype == np.float64 else np.float32
        keep = generator.random(tuple(x.shape), dtype=kind) >= p
        mask = np.multiply(keep, self.dtype(1.0 / (1.0 - p)), dtype=self.dtype)
        return x * self.torch.tensor(mask)


class Weights:
    """Seeded arrays for one RNN layer (W: input x hidden, U: hidden x hidden, b)."""

    def __init__(self, lib, generator, hidden, input_size=INPUT_SIZE):
        self.W = lib.tensor(generator.standard_normal((input_size, hidden)) * 0.5)
        self.U = lib.tensor(generator.standard_normal((hidden, hidden)) / np.sqrt(hidden))
        self.b = lib.tensor(generator.standard_normal(hidden) * 0.1)

    @property
    def parameters(self):
        return [self.W, self.U, self.b]


def _inputs(lib, generator, steps, batch, size=INPUT_SIZE):
    arrays = generator.standard_normal((steps, batch, size))
    return [lib.tensor(array, requires_grad=False) for array in arrays]


def _start(lib, batch, hidden):
    return lib.tensor(np.zeros((batch, hidden)), requires_grad=False)


def _one_layer(lib, generator, steps, hidden, batch, step):
    """The loop of the one-layer forms: h_0 constant, h = step(x_t, h, layer), loss h.sum()
    (the weights drawn before the inputs)."""
    layer = Weights(lib, generator, hidden)
    h = _start(lib, batch, hidden)
    h, _ = lib.loop(
        lambda h, x: (step(x, h, layer), None), h, _inputs(lib, generator, steps, batch)
    )
    return h.sum(), layer.parameters


def benchmark_form(lib, generator, steps, hidden, batch):
    """tanh(x_t @ W + h @ U + b), h_0 constant, loss h.sum() (the benchmark's)."""

    def step(x, h, layer):
        return (x @ layer.W + h @ layer.U + layer.b).tanh()

    return _one_layer(lib, generator, steps, hidden, batch, step)


def operands_swapped(lib, generator, steps, hidden, batch):
    """tanh(h @ U + x_t @ W + b)."""

    def step(x, h, layer):
        return (h @ layer.U + x @ layer.W + layer.b).tanh()

    return _one_layer(lib, generator, steps, hidden, batch, step)


def bias_placed(lib, generator, steps, hidden, batch):
    """tanh((h @ U + b) + x_t @ W)."""

    def step(x, h, layer):
        return ((h @ layer.U + layer.b) + x @ layer.W).tanh()

    return _one_layer(lib, generator, steps, hidden, batch, step)


def residual(lib, generator, steps, hidden, batch):
    """h + tanh(h @ U + x_t @ W) (b unused: scaled into the start state)."""
    layer = Weights(lib, generator, hidden)
    h = lib.tensor(np.full((batch, hidden), 0.1), requires_grad=False)

    def step(h, x):
        return h + (h @ layer.U + x @ layer.W).tanh() * 0.1, None

    h, _ = lib.loop(step, h, _inputs(lib, generator, steps, batch))
    return h.sum(), [layer.W, layer.U]


def rnn_cell(lib, generator, steps, hidden, batch):
    """nn.RNNCell's step: tanh(linear(x_t, W_ih, b_ih) + linear(h, W_hh, b_hh))."""
    bound = 1 / np.sqrt(hidden)
    weight_ih = lib.tensor(generator.uniform(-bound, bound, (hidden, INPUT_SIZE)))
    weight_hh = lib.tensor(generator.uniform(-bound, bound, (hidden, hidden)))
    bias_ih = lib.tensor(generator.uniform(-bound, bound, hidden))
    bias_hh = lib.tensor(generator.uniform(-bound, bound, hidden))
    h = _start(lib, batch, hidden)

    def step(h, x):
        return (lib.linear(x, weight_ih, bias_ih) + lib.linear(h, weight_hh, bias_hh)).tanh(), None

    h, _ = lib.loop(step, h, _inputs(lib, generator, steps, batch))
    return h.sum(), [weight_ih, weight_hh, bias_ih, bias_hh]


def loss_every_step(lib, generator, steps, hidden, batch):
    """A readout and a loss at every step: sum of mse(h_t @ V, y_t)."""
    layer = Weights(lib, generator, hidden)
    readout = lib.tensor(generator.standard_normal((hidden, 2)) / np.sqrt(hidden))
    targets = _inputs(lib, generator, steps, batch, size=2)
    h = _start(lib, batch, hidden)
    inputs = _inputs(lib, generator, steps, batch)
    if lib.scan:  # the losses as the scan's ys, summed after it

        def step(h, x, target):
            h = (x @ layer.W + h @ layer.U + layer.b).tanh()
            return h, lib.mse(h @ readout, target)

        _, terms = lib.loop(step, h, inputs, targets)
        return terms.sum(), layer.parameters + [readout]
    loss = None
    for x, target in zip(inputs, targets):
        h = (x @ layer.W + h @ layer.U + layer.b).tanh()
        term = lib.mse(h @ readout, target)
        loss = term if loss is None else loss + term
    return loss, layer.parameters + [readout]


def stacked(lib, generator, steps, hidden, batch):
    """Two stacked tanh RNN layers, loss on the top layer's last state."""
    lower = Weights(lib, generator, hidden)
    upper = Weights(lib, generator, hidden, input_size=hidden)
    h1 = _start(lib, batch, hidden)
    h2 = _start(lib, batch, hidden)
    inputs = _inputs(lib, generator, steps, batch)
    if lib.scan:  # one scan per layer, the lower layer's states the upper one's inputs

        def lower_step(h1, x):
            h1 = (x @ lower.W + h1 @ lower.U + lower.b).tanh()
            return h1, h1

        def upper_step(h2, h1):
            return (h1 @ upper.W + h2 @ upper.U + upper.b).tanh(), None

        _, states = lib.tg.scan(lower_step, h1, lib.tg.stack(inputs))
        h2, _ = lib.tg.scan(upper_step, h2, states)
        return h2.sum(), lower.parameters + upper.parameters
    for x in inputs:
        h1 = (x @ lower.W + h1 @ lower.U + lower.b).tanh()
        h2 = (h1 @ upper.W + h2 @ upper.U + upper.b).tanh()
    return h2.sum(), lower.parameters + upper.parameters


def layer_norm(lib, generator, steps, hidden, batch):
    """tanh(layer_norm(x_t @ W + h @ U) + b)... with the norm's own weight and bias."""
    layer = Weights(lib, generator, hidden)
    gamma = lib.tensor(generator.uniform(0.5, 1.5, hidden))
    beta = lib.tensor(generator.standard_normal(hidden) * 0.1)
    h = _start(lib, batch, hidden)

    def step(h, x):
        return lib.layer_norm(x @ layer.W + h @ layer.U + layer.b, gamma, beta).tanh(), None

    h, _ = lib.loop(step, h, _inputs(lib, generator, steps, batch))
    return h.sum(), layer.parameters + [gamma, beta]


def dropout(lib, generator, steps, hidden, batch):
    """tanh(x_t @ W + dropout(h) @ U + b), the masks drawn from a seeded generator."""
    masks = np.random.default_rng(1234)

    def step(x, h, layer):
        return (x @ layer.W + lib.dropout(h, 0.2, masks) @ layer.U + layer.b).tanh()

    return _one_layer(lib, generator, steps, hidden, batch, step)


def two_rnns(lib, generator, steps, hidden, batch):
    """Two independent tanh RNNs over the same inputs, one loss."""
    first = Weights(lib, generator, hidden)
    second = Weights(lib, generator, hidden)
    h1 = _start(lib, batch, hidden)
    h2 = _start(lib, batch, hidden)
    inputs = _inputs(lib, generator, steps, batch)
    if lib.scan:  # one scan per RNN
        h1, _ = lib.loop(
            lambda h, x: ((x @ first.W + h @ first.U + first.b).tanh(), None), h1, inputs
        )
        h2, _ = lib.loop(
            lambda h, x: ((x @ second.W + h @ second.U + second.b).tanh(), None), h2, inputs
        )
        return h1.sum() + (h2 * h2).sum(), first.parameters + second.parameters
    for x in inputs:
        h1 = (x @ first.W + h1 @ first.U + first.b).tanh()
        h2 = (x @ second.W + h2 @ second.U + second.b).tanh()
    return h1.sum() + (h2 * h2).sum(), first.parameters + second.parameters


def elementwise(lib, generator, steps, hidden, batch):
    """A diagonal chain: h = tanh(h * a + x_t @ W), a a vector (no matrix on the chain)."""
    layer = Weights(lib, generator, hidden)
    scale = lib.tensor(generator.uniform(0.5, 1.0, hidden))
    h = _start(lib, batch, hidden)
    h, _ = lib.loop(
        lambda h, x: ((h * scale + x @ layer.W).tanh(), None),
        h,
        _inputs(lib, generator, steps, batch),
    )
    return h.sum(), [layer.W, scale]


def _lstm_weights(lib, generator, hidden):
    """W (input x 4 hidden), U (hidden x 4 hidden), b: the gates i, f, g, o side by side."""
    weight = lib.tensor(generator.standard_normal((INPUT_SIZE, 4 * hidden)) * 0.5)
    recurrent = lib.tensor(generator.standard_normal((hidden, 4 * hidden)) / np.sqrt(hidden))
    bias = lib.tensor(generator.standard_normal(4 * hidden) * 0.1)
    return weight, recurrent, bias


def _lstm_cell(lib, x, h, c, weights):
    """(h', c') of one LSTM step (nn.LSTM's equations, tinygrad_ops/nn/gated.py)."""
    weight, recurrent, bias = weights
    gates = x @ weight + h @ recurrent + bias
    size = h.shape[-1]
    i, f, g, o = (gates[..., k * size : (k + 1) * size] for k in range(4))
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def lstm(lib, generator, steps, hidden, batch):
    """An LSTM with two states h and c, as nn.LSTM records it, loss h.sum()."""
    weights = _lstm_weights(lib, generator, hidden)
    start = _start(lib, batch, hidden)
    (h, _), _ = lib.loop(
        lambda state, x: (_lstm_cell(lib, x, *state, weights), None),
        (start, start),
        _inputs(lib, generator, steps, batch),
    )
    return h.sum(), list(weights)


def lstm_joint(lib, generator, steps, hidden, batch):
    """The same LSTM carrying one joint state s = [h | c]: h and c sliced off s at each step,
    s' = cat(h', c') (one tensor per step: a chain), loss on the last h."""
    weights = _lstm_weights(lib, generator, hidden)
    state = _start(lib, batch, 2 * hidden)

    def step(state, x):
        h, c = _lstm_cell(lib, x, state[..., :hidden], state[..., hidden:], weights)
        return lib.cat([h, c]), None

    state, _ = lib.loop(step, state, _inputs(lib, generator, steps, batch))
    return state[..., :hidden].sum(), list(weights)


FORMULATIONS = {
    "benchmark": benchmark_form,
    "swapped": operands_swapped,
    "bias-placed": bias_placed,
    "residual": residual,
    "rnn-cell": rnn_cell,
    "loss-every-step": loss_every_step,
    "stacked": stacked,
    "layer-norm": layer_norm,
    "dropout": dropout,
    "two-rnns": two_rnns,
    "elementwise": elementwise,
    "lstm": lstm,
    "lstm-joint": lstm_joint,
}


def build(name, library, dtype=np.float64, steps=16, hidden=4, batch=3, seed=0):
    """(loss, parameters) of formulation `name` in `library` ("tg" or "torch")."""
    lib = Library(library, dtype)
    generator = np.random.default_rng(seed)
    return FORMULATIONS[name](lib, generator, steps, hidden, batch)
