"""The scan schedulers' fast chain check refuses what is not provably a chain.

`find_simple_chain` checks the steps of an RNN column by column against the first step's
template. Each test here builds a chain that breaks the template part way (another op, a
different weight, an in-place op, an op option, an extra reader, a broadcast start) and
checks that every scan scheduler still gives the sequential walk's gradients (and
PyTorch's where the model runs there too), and that the scanned part stops where the
chain stops.
"""

import numpy as np
import pytest
import torch
from helpers import SpyScheduler

import tinygrad_ops as tg
from tinygrad_ops import Tensor
from tinygrad_ops.scheduler import ScanScheduler

torch.set_num_threads(1)

SCANS = ["hillis-steele", "blelloch", "blocked"]


class Spy(SpyScheduler):
    """Runs a scan scheduler (small blocks, short chains allowed) and keeps the graph."""

    def __init__(self, method):
        super().__init__(ScanScheduler(method, block_size=4, min_steps=2))
        self.name = method


def scanned_lengths(graph):
    return [len(segment.tensors) - 1 for segment in graph.scanned_segments]


def assert_close(ours, expected, rtol=1e-10):
    for mine, reference in zip(ours, expected, strict=True):
        scale = max(float(np.max(np.abs(reference))), 1e-300)
        np.testing.assert_allclose(mine, reference, rtol=rtol, atol=1e-12 * scale)


def rnn(library, steps=16, size=3, batch=2, step_hook=None, seed=0):
    """h_t = tanh(x_t W + h_{t-1} U_t + b); `step_hook(t, pre, h, parameters)` may change
    a step (return the new (pre, h)). Returns the loss and the parameters."""
    generator = np.random.default_rng(seed)

    def make(array, requires_grad=True):
        if library == "torch":
            return torch.tensor(array, requires_grad=requires_grad)
        return Tensor(array, requires_grad=requires_grad)

    W = make(generator.standard_normal((3, size)) * 0.5)
    U = make(generator.standard_normal((size, size)) / np.sqrt(size))
    V = make(generator.standard_normal((size, size)) / np.sqrt(size))
    b = make(generator.standard_normal(size) * 0.1)
    h0 = make(generator.standard_normal((batch, size)))
    inputs = generator.standard_normal((steps, batch, 3))
    parameters = {"W": W, "U": U, "V": V, "b": b, "h0": h0}
    h = h0
    for step in range(steps):
        x = make(inputs[step], requires_grad=False)
        pre = x @ W + h @ U + b
        new = pre.tanh()
        if step_hook is not None:
            pre, new = step_hook(step, pre, new, h, x, parameters, library)
        h = new
    loss = (h * h).sum()
    return loss, [W, U, V, b, h0]


def grads_of(parameters):
    return [
        np.zeros(1) if parameter.grad is None else np.asarray(parameter.grad.numpy())
        for parameter in parameters
    ]


def run(step_hook, scheduler, steps=16):
    loss, parameters = rnn("ours", steps=steps, step_hook=step_hook)
    spy = Spy(scheduler) if scheduler != "sequential" else "sequential"
    loss.backward(scheduler=spy)
    return grads_of(parameters), (spy.graph if scheduler != "sequential" else None)


def run_torch(step_hook, steps=16):
    loss, parameters = rnn("torch", steps=steps, step_hook=step_hook)
    loss.backward()
    return [
        np.zeros(1) if parameter.grad is None else parameter.grad.numpy()
        for parameter in parameters
    ]


def backward_grads(loss, parameters, library, scheduler):
    """Backward (PyTorch's own for torch, else with `scheduler`); the gradients that came."""
    if library == "torch":
        loss.backward()
    else:
        loss.backward(scheduler=Spy(scheduler) if scheduler != "sequential" else scheduler)
    return [parameter.grad.numpy() for parameter in parameters if parameter.grad is not None]


def relu_after(step_count):
    """Steps from `step_count` on use ReLU instead of tanh: another op class."""

    def hook(step, pre, new, h, x, parameters, library):
        if step >= step_count:
            new = pre.relu()
        return pre, new

    return hook


def other_weight_after(step_count):
    """Steps from `step_count` on multiply the state by V instead of U."""

    def hook(step, pre, new, h, x, parameters, library):
        if step >= step_count:
            pre = x @ parameters["W"] + h @ parameters["V"] + parameters["b"]
            new = pre.tanh()
        return pre, new

    return hook


def in_place_at(step_count):
    """Step `step_count` shifts its pre-activation in place before the tanh."""

    def hook(step, pre, new, h, x, parameters, library):
        if step == step_count:
            pre = pre * 1.0
            pre.add_(0.25)
            new = pre.tanh()
        return pre, new

    return hook


@pytest.mark.parametrize("scheduler", SCANS)
@pytest.mark.parametrize(
    ("name", "hook", "longest_run"),
    [
        ("another op mid-run", relu_after(6), 10),
        ("an in-place op mid-chain", in_place_at(9), 9),
    ],
)
def test_a_step_that_differs_ends_the_scanned_run(scheduler, name, hook, longest_run):
    expected, _ = run(hook, "sequential")
    got, graph = run(hook, scheduler)
    assert_close(got, expected)
    assert_close(got, run_torch(hook), rtol=1e-9)
    lengths = scanned_lengths(graph)
    assert lengths, f"{name}: nothing was scanned"
    # Anchors may sit at another phase of the step (after the sum, before the tanh), so
    # a run can gain one step at its edge, but no scan spans the step that differs.
    assert max(lengths) <= longest_run + 1, f"{name}: scanned {lengths}"


@pytest.mark.parametrize("scheduler", SCANS)
def test_a_weight_that_changes_mid_run_becomes_a_per_step_input(scheduler):
    """U for six steps, then V: not the same tensor in every step, so the weight is
    stacked per step (like x_t) and each step's product sends its gradient to its own
    weight."""
    hook = other_weight_after(6)
    expected, _ = run(hook, "sequential")
    got, graph = run(hook, scheduler)
    assert_close(got, expected)
    assert_close(got, run_torch(hook), rtol=1e-9)
    assert graph.scanned_segments


@pytest.mark.parametrize("scheduler", SCANS)
def test_an_unchanged_chain_is_scanned_whole(scheduler):
    expected, _ = run(None, "sequential", steps=40)
    got, graph = run(None, scheduler, steps=40)
    assert_close(got, expected)
    assert scanned_lengths(graph) == [40]


@pytest.mark.parametrize("scheduler", SCANS)
def test_an_op_option_that_changes_mid_run_is_not_scanned_with_the_first_option(scheduler):
    """PowScalar keeps its exponent as an option, not a saved array: the template compares
    it (a chain once scanned every step with the top step's exponent)."""

    def model(name):
        x = Tensor(np.linspace(0.5, 0.9, 6).reshape(2, 3), requires_grad=True)
        y = x
        for step in range(16):
            y = (y ** (2.0 if step < 8 else 0.5)).tanh() + 0.5
        spy = Spy(name) if name != "sequential" else name
        y.sum().backward(scheduler=spy)
        return [x.grad.numpy()], spy

    expected, _ = model("sequential")
    got, spy = model(scheduler)
    assert_close(got, expected)
    assert max(scanned_lengths(spy.graph)) <= 8


def check_extra_reader(scheduler, at_step, which, extra_term):
    """The tensor `which` ("pre", the pre-activation, or "new", the state) of step `at_step`
    also feeds the loss through `extra_term`: the scan gives the walk's and PyTorch's grads."""
    kept = {}

    def hook(step, pre, new, h, x, parameters, library):
        if step == at_step:
            kept[library] = pre if which == "pre" else new
        return pre, new

    def model(library, name):
        loss, parameters = rnn(library, step_hook=hook)
        loss = loss + extra_term(kept[library])
        return backward_grads(loss, parameters, library, name)

    expected = model("ours", "sequential")
    assert_close(model("ours", scheduler), expected)
    assert_close(model("torch", None), expected, rtol=1e-9)


@pytest.mark.parametrize("scheduler", SCANS)
def test_an_extra_reader_of_an_inner_tensor_is_not_lost(scheduler):
    """A tensor inside step 7 (its pre-activation) also feeds the loss: the fast check must
    see that reader (the full analysis or the walk then handles it)."""
    check_extra_reader(scheduler, 7, "pre", lambda pre: (pre * pre).sum() * 0.5)


@pytest.mark.parametrize("scheduler", SCANS)
def test_an_extra_reader_of_an_anchor_is_not_lost(scheduler):
    check_extra_reader(scheduler, 5, "new", lambda new: new.sum())


@pytest.mark.parametrize("scheduler", SCANS)
def test_a_saved_state_changed_in_place_without_recording_still_raises(scheduler):
    """An in-place change under no_grad bumps the version only (no new node): the batched
    check of the saved values must catch it as the walk does."""
    states = []

    def hook(step, pre, new, h, x, parameters, library):
        states.append(new)
        return pre, new

    loss, _ = rnn("ours", step_hook=hook)
    with tg.no_grad():
        states[6].mul_(1.0)
    with pytest.raises(RuntimeError, match="in-place"):
        loss.backward(scheduler=Spy(scheduler))


@pytest.mark.parametrize("scheduler", SCANS)
def test_per_step_inputs_that_need_gradients(scheduler):
    """x_t requires grad: its gradient is one per step (the "step" wiring)."""

    def model(name):
        generator = np.random.default_rng(3)
        U = Tensor(generator.standard_normal((3, 3)) * 0.5, requires_grad=True)
        xs = [Tensor(generator.standard_normal((2, 3)), requires_grad=True) for _ in range(12)]
        h = Tensor(np.zeros((2, 3)))
        for x in xs:
            h = (x + h @ U).tanh()
        spy = Spy(name) if name != "sequential" else name
        (h * h).sum().backward(scheduler=spy)
        return [U.grad.numpy()] + [x.grad.numpy() for x in xs], spy

    expected, _ = model("sequential")
    got, spy = model(scheduler)
    assert_close(got, expected)
    assert max(scanned_lengths(spy.graph)) >= 11


@pytest.mark.parametrize("scheduler", SCANS)
def test_a_broadcast_start_state(scheduler):
    """h_0 of shape (1, d) broadcast over the batch: its gradient sums the rows, so the
    step that reads it is walked, not scanned."""

    def model(name):
        generator = np.random.default_rng(4)
        x = Tensor(np.linspace(-0.5, 0.5, 3).reshape(1, 3), requires_grad=True)
        scale = Tensor(generator.uniform(0.5, 1.5, (4, 3)), requires_grad=True)
        y = x
        for _ in range(10):
            y = (y * scale).tanh()
        spy = Spy(name) if name != "sequential" else name
        (y * y).sum().backward(scheduler=spy)
        return [x.grad.numpy(), scale.grad.numpy()], spy

    expected, _ = model("sequential")
    got, _ = model(scheduler)
    assert got[0].shape == (1, 3)
    assert_close(got, expected)


def linear_rnn(library, made_in_step, steps=12, seed=4):
    """h = tanh(linear(h, W_t, b_t)) + x_t where the weight, the bias or both are a
    different tensor in each step: made from a parameter inside the step, or taken from a
    list of per-step weights (`made_in_step` picks which, by name)."""
    generator = np.random.default_rng(seed)
    arrays = [
        generator.standard_normal((3, 3)) * 0.4,
        generator.standard_normal(3) * 0.1,
        generator.standard_normal((steps, 2, 3)),
        generator.standard_normal((steps, 3, 3)) * 0.4,
    ]
    if library == "torch":
        weight, bias, xs, listed = (torch.tensor(a, requires_grad=True) for a in arrays)
        linear = torch.nn.functional.linear
        h = torch.zeros((2, 3), dtype=torch.float64)
    else:
        weight, bias, xs, listed = (Tensor(a, requires_grad=True) for a in arrays)
        linear = tg.functional.linear
        h = Tensor(np.zeros((2, 3)))
    for t in range(steps):
        w = {"weight": weight * 1.0, "listed": listed[t]}.get(made_in_step, weight)
        b = bias * 1.0 if made_in_step == "bias" else bias
        h = linear(h, w, b).tanh() + xs[t]
    return (h * h).sum(), [weight, bias, xs, listed]


@pytest.mark.parametrize("made_in_step", ["weight", "bias", "listed"])
@pytest.mark.parametrize("scheduler", [*SCANS, "auto"])
def test_a_linear_whose_weight_differs_per_step_is_walked(scheduler, made_in_step):
    # Linear's rule sums dW and db over x's leading axes: run once over stacked steps, it
    # would give every step the sum over all of them. Its weight and bias must be the
    # same in every step for a scan (Linear.takes_per_step); otherwise the walk runs.
    loss, parameters = linear_rnn("torch", made_in_step)
    loss.backward()
    used = [p.grad is not None for p in parameters]  # (the weight or the listed ones)
    expected = [p.grad.numpy() for p in parameters if p.grad is not None]
    loss, parameters = linear_rnn("ours", made_in_step)
    spy = Spy(scheduler) if scheduler != "auto" else "auto"
    loss.backward(scheduler=spy)
    assert [p.grad is not None for p in parameters] == used
    assert_close([p.grad.numpy() for p in parameters if p.grad is not None], expected)
    if scheduler != "auto":
        assert scanned_lengths(spy.graph) == []


def test_a_tg_scan_whose_linear_weight_is_made_in_each_step_says_why_it_is_walked():
    generator = np.random.default_rng(5)
    weight = Tensor(generator.standard_normal((3, 3)) * 0.4, requires_grad=True)
    xs = Tensor(generator.standard_normal((10, 2, 3)))

    def step(h, x):
        h = tg.functional.linear(h, weight * 1.0).tanh() + x
        return h, None

    h, _ = tg.scan(step, Tensor(np.zeros((2, 3))), xs)
    loss = (h * h).sum()
    plan = tg.backward_plan(loss, scheduler="blelloch")
    assert plan.scanned_segments == []
    assert "its op's rule cannot take per step, such as a Linear's weight" in str(plan)
    loss.backward(scheduler="blelloch")
    scanned = weight.grad.numpy().copy()
    weight.grad = None
    h, _ = tg.scan(step, Tensor(np.zeros((2, 3))), xs)
    (h * h).sum().backward()
    np.testing.assert_allclose(scanned, weight.grad.numpy(), rtol=1e-12)
