"""A loss at every step of an RNN: the running sum of the losses is a chain of numbers
scanned beside the RNN's, each step's readout and `mse_loss` batched (their gradients the
RNN chain's injections). Every reduction and a broadcast target give the walk's
gradients (1e-10 relative) and PyTorch's; an `mse_loss` on the chain itself is walked."""

import numpy as np
import pytest
import torch
from helpers import SpyScheduler

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)

torch.set_num_threads(1)
STEPS, BATCH, HIDDEN = 12, 3, 4
SCANS = ["hillis-steele", "blelloch", "blocked"]


def model(library, reduction, target_shape, through_the_chain=False, seed=0):
    generator = np.random.default_rng(seed)

    def tensor(array, grad=True):
        if library == "tg":
            return tg.Tensor(array, requires_grad=grad)
        return torch.tensor(array, requires_grad=grad)

    mse = F.mse_loss if library == "tg" else torch.nn.functional.mse_loss
    W = tensor(generator.standard_normal((3, HIDDEN)) / 2)
    U = tensor(generator.standard_normal((HIDDEN, HIDDEN)) / 2)
    V = tensor(generator.standard_normal((HIDDEN, 2)) / 2)
    h = tensor(np.zeros((BATCH, HIDDEN)), grad=False)
    loss = None
    for _ in range(STEPS):
        x = tensor(generator.standard_normal((BATCH, 3)), grad=False)
        target = tensor(generator.standard_normal(target_shape), grad=False)
        h = (x @ W + h @ U).tanh()
        if through_the_chain:  # the loss of the state feeds the next state
            h = h * mse(h @ V @ V.T, h, reduction=reduction)
        term = mse(h @ V, target, reduction=reduction)
        if reduction == "none":
            term = term.sum()
        loss = term if loss is None else loss + term
    return loss, [W, U, V]


def gradients(library, scheduler, *args):
    loss, parameters = model(library, *args)
    if library == "torch":
        loss.backward()
        return [parameter.grad.numpy() for parameter in parameters], None
    spy = SpyScheduler(scheduler)
    loss.backward(scheduler=spy)
    return [parameter.grad.numpy() for parameter in parameters], spy.graph


# PyTorch warns of a target that broadcasts (the case is here on purpose).
@pytest.mark.filterwarnings("ignore:.*that is different to the input")  # torch's and ours
@pytest.mark.parametrize("scheduler", SCANS)
@pytest.mark.parametrize(
    ("reduction", "target_shape"), [("mean", (BATCH, 2)), ("sum", (BATCH, 2)), ("mean", (2,))]
)
def test_a_loss_at_every_step_is_batched_beside_the_chain(reduction, target_shape, scheduler):
    expected, _ = gradients("tg", "sequential", reduction, target_shape)
    got, graph = gradients("tg", scan(scheduler), reduction, target_shape)
    theirs, _ = gradients("torch", None, reduction, target_shape)
    for mine, walked, reference in zip(got, expected, theirs, strict=True):
        np.testing.assert_allclose(mine, walked, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-11)
    scanned = sorted(len(segment.tensors) - 1 for segment in graph.scanned_segments)
    assert scanned == [STEPS - 1, STEPS - 1]  # the RNN's chain and the sum's


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_an_mse_loss_on_the_chain_is_walked(reduction):
    expected, _ = gradients("tg", "sequential", reduction, (BATCH, 2), True)
    got, graph = gradients("tg", scan("blelloch"), reduction, (BATCH, 2), True)
    theirs, _ = gradients("torch", None, reduction, (BATCH, 2), True)
    for mine, walked, reference in zip(got, expected, theirs, strict=True):
        np.testing.assert_allclose(mine, walked, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-11)
    # Only the running sum of the losses may be scanned: the RNN's steps hold an mse_loss.
    assert all(segment.tensors[-1].shape == () for segment in graph.scanned_segments)


def scan(method):
    return tg.scheduler.ScanScheduler(method, block_size=4, min_steps=2)
