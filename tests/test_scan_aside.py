"""Chains read beside the walk down from the output (scheduler/first_look.py,
`chains_aside`): a second RNN of the same loss is found by a look from the input that
leads to it, and the searches of the first chain do not go through its tensors. Where
something else reads inside it (or an anchor below its top), it is searched through as
before. Every case gives the walk's gradients (1e-10 relative) and PyTorch's."""

import numpy as np
import pytest
import torch
from helpers import spied_backward
from rnn_formulations import Library

import tinygrad_ops as tg
from tinygrad_ops.autograd import BackwardGraph
from tinygrad_ops.scheduler import readers
from tinygrad_ops.scheduler.finder import find_chains

search = readers._search

torch.set_num_threads(1)
STEPS, BATCH, HIDDEN = 10, 3, 4


def tensor(library, array, requires_grad=True):
    return Library(library, np.float64).tensor(array, requires_grad)


@pytest.fixture
def search_sizes(monkeypatch):
    """How many tensors each search of the chains' readers met (`readers._search`)."""
    sizes = []

    def counted(*arguments):
        found = search(*arguments)
        sizes.append(None if found is None else len(found))
        return found

    monkeypatch.setattr(readers, "_search", counted)
    return sizes


def two_rnns(library, variant, seed=0):
    """Two tanh RNNs over the same inputs, loss h1.sum() + (h2 * h2).sum(); `variant`:
    "plain", "inside" (the loss also reads the first RNN's pre-activation at step 4),
    "anchor" (the loss also reads the first RNN's state at step 4)."""
    generator = np.random.default_rng(seed)
    shapes = [(3, HIDDEN), (HIDDEN, HIDDEN)] * 2
    weights = [tensor(library, generator.standard_normal(shape) / 2) for shape in shapes]
    inputs = generator.standard_normal((STEPS, BATCH, 3))
    h1 = h2 = tensor(library, np.zeros((BATCH, HIDDEN)), requires_grad=False)
    extra = None
    for step in range(STEPS):
        x = tensor(library, inputs[step], requires_grad=False)
        pre = x @ weights[0] + h1 @ weights[1]
        h1 = pre.tanh()
        h2 = (x @ weights[2] + h2 @ weights[3]).tanh()
        if step == 4 and variant != "plain":
            extra = (pre if variant == "inside" else h1).sum()
    loss = h1.sum() + (h2 * h2).sum()
    return (loss if extra is None else loss + extra), weights


def independent_of(loss):
    """The first look's plan (its `independent` tensors, its `nested` chains)."""
    graph = BackwardGraph([loss], None, False, True)
    graph.send(loss, np.ones_like(loss.data))
    return find_chains(graph, 2)


def test_the_second_rnn_is_not_searched_through(search_sizes):
    """No search of the first chain's readers goes through the second RNN's tensors one by
    one, and they are not among its independent tensors: only the loss's own ops and the
    second RNN's top state are."""
    loss, _ = two_rnns("tg", "plain")
    independent = independent_of(loss).independent
    assert max(search_sizes) <= 6, search_sizes
    # the sums, h2 * h2, and the second RNN's top state (its scan starts there)
    assert len(independent) <= 6, [type(t._ctx).__name__ for t in independent]


@pytest.mark.parametrize(("variant", "scanned"), [("plain", [9, 9]), ("inside", [9, 9])])
@pytest.mark.parametrize("scheduler", ["blelloch", "blocked", "hillis-steele"])
def test_every_case_gives_the_walks_gradients(variant, scanned, scheduler):
    expected = [w.grad.numpy() for w in _backward("tg", variant, "sequential")[1]]
    spy, weights = _backward("tg", variant, tg.scheduler.ScanScheduler(scheduler, block_size=4))
    theirs = [w.grad.numpy() for w in _backward("torch", variant, None)[1]]
    for mine, walked, oracle in zip(weights, expected, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), walked, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(mine.grad.numpy(), oracle, rtol=1e-9, atol=1e-11)
    lengths = [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments]
    assert lengths
    assert max(lengths) == max(scanned)


def test_a_chain_read_from_inside_is_searched_through():
    """The loss reads inside the first RNN: its tensors are searched one by one, as the
    independent tensors of the other (and walked)."""
    loss, _ = two_rnns("tg", "inside")
    assert len(independent_of(loss).independent) > 4 * STEPS


def test_a_chain_whose_state_is_read_gets_that_reader_walked_first():
    """The loss reads one of the first RNN's states below its top: that reader's gradient
    enters its chain, so it is walked right before the chain is scanned (`plan.nested`)."""
    loss, _ = two_rnns("tg", "anchor")
    plan = independent_of(loss)
    assert [segment.length for segment in plan.segments] == [STEPS - 1] * 2
    (walked_first,) = plan.nested.values()
    assert any(type(t._ctx).__name__ == "Sum" and t._ctx.inputs[0]._ctx for t in walked_first)


def test_the_anchor_case_gives_the_walks_gradients():
    expected = [w.grad.numpy() for w in _backward("tg", "anchor", "sequential")[1]]
    _, weights = _backward("tg", "anchor", tg.scheduler.ScanScheduler("blelloch"))
    for mine, walked in zip(weights, expected, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), walked, rtol=1e-10, atol=1e-12)


def _backward(library, variant, scheduler):
    loss, weights = two_rnns(library, variant)
    return spied_backward(loss, library, scheduler), weights


def loss_every_step(library, on_pre_activation, seed=0):
    """A tanh RNN with a readout and a loss at every step, read from its state, or (with
    `on_pre_activation`) from inside its step."""
    generator = np.random.default_rng(seed)
    shapes = [(3, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, 2)]
    weights = [tensor(library, generator.standard_normal(shape) / 2) for shape in shapes]
    inputs = generator.standard_normal((STEPS, BATCH, 3))
    targets = generator.standard_normal((STEPS, BATCH, 2))
    h = tensor(library, np.zeros((BATCH, HIDDEN)), requires_grad=False)
    loss = None
    for step in range(STEPS):
        pre = tensor(library, inputs[step], requires_grad=False) @ weights[0] + h @ weights[1]
        h = pre.tanh()
        read = pre if on_pre_activation else h
        mse = tg.functional.mse_loss if library == "tg" else torch.nn.functional.mse_loss
        term = mse(read @ weights[2], tensor(library, targets[step], requires_grad=False))
        loss = term if loss is None else loss + term
    return loss, weights


def test_a_loss_at_every_step_is_not_searched_through(search_sizes):
    """The running sum of the losses is found from the output's other input, with the
    RNN's tensors outside its steps; no search goes through it one by one."""
    loss, _ = loss_every_step("tg", False)
    plan = independent_of(loss)
    assert [segment.jacobian_kind for segment in plan.segments] == ["dense", "diagonal"]
    assert max(search_sizes) <= 6, search_sizes


@pytest.mark.parametrize("on_pre_activation", [False, True])
def test_a_loss_at_every_step_gives_the_walks_gradients(on_pre_activation):
    """Read from the state, or from inside the step (then the losses read inside the
    chain, which is walked: the gradients are the same either way)."""
    results = {}
    for scheduler in ("sequential", "blelloch", "blocked"):
        loss, weights = loss_every_step("tg", on_pre_activation)
        chosen = scheduler if scheduler == "sequential" else tg.scheduler.ScanScheduler(scheduler)
        loss.backward(scheduler=chosen)
        results[scheduler] = [weight.grad.numpy() for weight in weights]
    loss, weights = loss_every_step("torch", on_pre_activation)
    loss.backward()
    for scheduler in ("blelloch", "blocked"):
        for mine, walked, theirs in zip(results[scheduler], results["sequential"], weights):
            np.testing.assert_allclose(mine, walked, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(mine, theirs.grad.numpy(), rtol=1e-9, atol=1e-11)
