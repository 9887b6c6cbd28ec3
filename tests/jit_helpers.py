"""What the tg.compile tests share: models, steps, eager and compiled runs side by side."""

import gc
import tracemalloc

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import optim


def batches(count, batch=16, features=6, classes=3, seed=1, dtype=np.float32):
    generator = np.random.default_rng(seed)
    return [
        (
            tg.Tensor(generator.standard_normal((batch, features)).astype(dtype)),
            generator.integers(0, classes, batch),
        )
        for _ in range(count)
    ]


def mlp(seed=0, norm="layer", dropout=0.2, dtype=np.float32):
    tg.manual_seed(seed)
    layers = [tg.nn.Linear(6, 12, dtype=dtype)]
    if norm == "layer":
        layers.append(tg.nn.LayerNorm(12, dtype=dtype))
    elif norm == "batch":
        layers.append(tg.nn.BatchNorm1d(12, dtype=dtype))
    layers.append(tg.nn.ReLU())
    if dropout:
        layers.append(tg.nn.Dropout(dropout))
    layers.append(tg.nn.Linear(12, 3, dtype=dtype))
    return tg.nn.Sequential(*layers)


def training_step(model, optimizer, scheduler=None):
    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward(scheduler=scheduler)
        optimizer.step()
        return loss

    return step


def state_of(model, optimizer):
    """Every array a training run changes: parameters, grads, buffers, optimizer state."""
    arrays = {name: tensor.data.copy() for name, tensor in model.state_dict().items()}
    for name, parameter in model.named_parameters():
        arrays[name + ".grad"] = None if parameter.grad is None else parameter.grad.data.copy()
    for number, entry in optimizer.state_dict()["state"].items():
        for key, value in entry.items():
            arrays[f"optimizer.{number}.{key}"] = np.asarray(value).copy()
    return arrays


def assert_same(eager, compiled):
    assert eager.keys() == compiled.keys()
    for name in eager:
        if eager[name] is None:
            assert compiled[name] is None, name
        else:
            assert eager[name].dtype == compiled[name].dtype, name
            np.testing.assert_array_equal(eager[name], compiled[name], err_msg=name)


def run_both(make, data, scheduler=None):
    """Train two identical setups on `data`, eager and compiled; compare everything."""
    results = {}
    for compiled in (False, True):
        model, optimizer = make()
        tg.manual_seed(123)  # the dropout masks draw from the shared generator
        step = training_step(model, optimizer, scheduler)
        if compiled:
            step = tg.compile(step)
        losses = [step(x, y) for x, y in data]
        results[compiled] = ([loss.data.copy() for loss in losses], losses, model, optimizer)
    eager_losses, _, eager_model, eager_optimizer = results[False]
    compiled_losses, kept, compiled_model, compiled_optimizer = results[True]
    np.testing.assert_array_equal(np.stack(eager_losses), np.stack(compiled_losses))
    # The returned tensors are the caller's: no later call overwrote them.
    np.testing.assert_array_equal(np.stack([loss.data for loss in kept]), np.stack(eager_losses))
    assert_same(
        state_of(eager_model, eager_optimizer), state_of(compiled_model, compiled_optimizer)
    )


def rnn_step(weights, steps, scheduler):
    w_in, w_hidden, optimizer = weights

    def step(inputs):
        optimizer.zero_grad()
        state = tg.zeros(inputs.shape[1], 8, dtype=np.float64)
        for time in range(steps):
            state = (inputs[time] @ w_in + state @ w_hidden).tanh()
        loss = (state * state).sum()
        loss.backward(scheduler=scheduler)
        optimizer.step()
        return loss

    return step


def rnn_weights():
    generator = np.random.default_rng(0)
    w_in = tg.Tensor(generator.standard_normal((3, 8)) * 0.5, requires_grad=True)
    w_hidden = tg.Tensor(generator.standard_normal((8, 8)) * 0.3, requires_grad=True)
    return w_in, w_hidden, optim.SGD([w_in, w_hidden], lr=0.01)


def run_rnn(scheduler, compiled, inputs, calls=6):
    weights = rnn_weights()
    step = rnn_step(weights, 40, scheduler)
    step = tg.compile(step) if compiled else step
    losses = [step(inputs).item() for _ in range(calls)]
    return step, losses, [weights[0].data.copy(), weights[1].data.copy()]


def simple_setup(dropout=0.0):
    tg.manual_seed(0)
    model = mlp(norm=None, dropout=dropout)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    return model, optimizer, tg.compile(training_step(model, optimizer))


def refused(function, *args):
    compiled = tg.compile(function)
    with pytest.raises(tg.CompileError) as error:
        compiled(*args)
    return str(error.value)


def backward_with_a_hook(x):
    y = x * x
    y.register_hook(lambda grad: grad * 2)
    y.sum().backward()


def peak_memory(function, *args):
    gc.collect()
    tracemalloc.start()
    try:
        function(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def compiled_peaks(step, *args):
    """The peak memory of the first replay (which compiles the program and its guards) and
    of a later one: [first, later]."""
    step(*args)  # the capture
    peaks = [peak_memory(step, *args)]
    for _ in range(2):
        step(*args)
    peaks.append(peak_memory(step, *args))
    return peaks


def manual_sgd_step(parameters, write):
    def step(x, y):
        w, b = parameters
        loss = F.cross_entropy(F.linear(x, w, b), y)
        loss.backward()
        with tg.no_grad():
            for parameter in parameters:
                write(parameter, 0.1 * parameter.grad)
                parameter.grad = None
        return loss

    return step


class Helpers:
    """A @staticmethod called for its effect, as Optimizer._subtract (inline.py's helpers)."""

    @staticmethod
    def scale(p, factor):
        data = p._data
        np.multiply(data, factor, out=data)

    @staticmethod
    def scaled(p, factor):
        return p._data * factor


def update_calling_a_helper(p, factor):
    Helpers.scale(p, factor * 2.0)


def update_whose_names_would_clash(p, factor):
    scale_data = factor  # (the name the helper's `data` would get)
    Helpers.scale(p, scale_data)


def update_whose_local_hides_a_global_of_the_helper(p, np):
    Helpers.scale(p, np)


def update_calling_a_helper_that_returns(p, factor):
    Helpers.scaled(p, factor)
