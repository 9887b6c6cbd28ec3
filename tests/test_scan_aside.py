"""Chains beside one another in one loop (scheduler/loops.py): a second RNN of the same loss,
and the running sum of a loss at every step beside the RNN it reads. Each is found and
scanned, also where the loss reads inside the first RNN or one of its states below its
top; every case gives the walk's gradients (1e-10 relative) and PyTorch's."""

import numpy as np
import pytest
import torch
from helpers import spied_backward
from rnn_formulations import Library

import tinygrad_ops as tg
from tinygrad_ops.autograd import BackwardGraph
from tinygrad_ops.scheduler.loops import find

torch.set_num_threads(1)
STEPS, BATCH, HIDDEN = 10, 3, 4


def tensor(library, array, requires_grad=True):
    return Library(library, np.float64).tensor(array, requires_grad)


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


def found_in(loss):
    """The chains of 4 steps or more, as a scan scheduler finds them by default."""
    return find(BackwardGraph([loss], None, False, True), 4)


@pytest.mark.parametrize("variant", ["plain", "inside", "anchor"])
def test_both_rnns_are_found_and_neither_holds_the_other(variant):
    """Neither RNN's steps read the other's tensors: nothing is held for either scan."""
    loss, _ = two_rnns("tg", variant)
    found = found_in(loss)
    assert [segment.length for segment in found.values()] == [STEPS - 1] * 2
    assert all(not segment.held for segment in found.values())


@pytest.mark.parametrize(
    ("variant", "scanned"), [("plain", [9, 9]), ("inside", [9, 9]), ("anchor", [9, 9])]
)
@pytest.mark.parametrize("scheduler", ["blelloch", "blocked", "hillis-steele"])
def test_every_case_gives_the_walks_gradients(variant, scanned, scheduler):
    expected = [w.grad.numpy() for w in _backward("tg", variant, "sequential")[1]]
    spy, weights = _backward("tg", variant, tg.scheduler.ScanScheduler(scheduler, block_size=4))
    theirs = [w.grad.numpy() for w in _backward("torch", variant, None)[1]]
    for mine, walked, oracle in zip(weights, expected, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), walked, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(mine.grad.numpy(), oracle, rtol=1e-9, atol=1e-11)
    lengths = [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments]
    assert sorted(lengths) == scanned


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


@pytest.mark.parametrize("on_pre_activation", [False, True])
def test_a_loss_at_every_step_is_a_chain_beside_the_rnn(on_pre_activation):
    """The running sum of the losses is a chain of numbers (diagonal) whose steps are the
    readout and the loss; it reads the RNN's states (or pre-activations) per step, so those
    and the RNN's tensors are held until its scan has sent to them."""
    loss, _ = loss_every_step("tg", on_pre_activation)
    total, rnn = found_in(loss).values()
    assert (total.jacobian_kind, rnn.jacobian_kind) == ("diagonal", "dense")
    assert {id(tensor) for column in rnn.columns for tensor in column} <= total.held


@pytest.mark.parametrize("on_pre_activation", [False, True])
def test_a_loss_at_every_step_gives_the_walks_gradients(on_pre_activation):
    """Read from the state, or from inside the step: both chains scanned either way."""
    results = {}
    for scheduler in ("sequential", "blelloch", "blocked"):
        loss, weights = loss_every_step("tg", on_pre_activation)
        chosen = scheduler if scheduler == "sequential" else tg.scheduler.ScanScheduler(scheduler)
        spy = spied_backward(loss, "tg", chosen)
        results[scheduler] = [weight.grad.numpy() for weight in weights]
        if scheduler != "sequential":
            scanned = [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments]
            assert sorted(scanned) == [STEPS - 1] * 2
    loss, weights = loss_every_step("torch", on_pre_activation)
    loss.backward()
    for scheduler in ("blelloch", "blocked"):
        for mine, walked, theirs in zip(results[scheduler], results["sequential"], weights):
            np.testing.assert_allclose(mine, walked, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(mine, theirs.grad.numpy(), rtol=1e-9, atol=1e-11)
