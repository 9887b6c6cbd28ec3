"""nn.RNN against torch.nn.RNN: outputs, last states and every gradient (the input's too),
walked and with every scan scheduler, float64 and float32; each layer projects its input
once and scans the rest of its step, one declared chain per layer."""

import numpy as np
import pytest
import torch
from helpers import SpyScheduler, assert_parameter_grads_match

import tinygrad_ops as tg
from tinygrad_ops import nn
from tinygrad_ops.ops import Linear, MatMul
from tinygrad_ops.scheduler import ScanScheduler

torch.set_num_threads(1)


SCHEDULERS = ["sequential", "hillis-steele", "blelloch", "blocked", "auto"]


def scheduler_object(name):
    """A scan with blocks of 3 steps and chains from 2 (several blocks in a short chain)."""
    if name in ("hillis-steele", "blelloch", "blocked"):
        return ScanScheduler(name, block_size=3, min_steps=2)
    return name


def pair(num_layers, nonlinearity="tanh", batch_first=False, bias=True, dtype=np.float64):
    torch.manual_seed(0)
    theirs = torch.nn.RNN(
        3, 4, num_layers=num_layers, nonlinearity=nonlinearity, bias=bias, batch_first=batch_first
    ).to(torch.float64 if dtype == np.float64 else torch.float32)
    ours = nn.RNN(
        3, 4, num_layers=num_layers, nonlinearity=nonlinearity, bias=bias, batch_first=batch_first
    ).to(dtype)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("scheduler", ["sequential", "blelloch", "auto"])
@pytest.mark.parametrize(
    ("num_layers", "nonlinearity", "batch_first", "bias"),
    [(1, "tanh", False, True), (2, "tanh", True, True), (1, "relu", False, False)],
)
def test_rnn_matches_pytorch(num_layers, nonlinearity, batch_first, bias, scheduler):
    ours, theirs = pair(num_layers, nonlinearity, batch_first, bias)
    generator = np.random.default_rng(1)
    shape = (2, 9, 3) if batch_first else (9, 2, 3)
    inputs = generator.standard_normal(shape)
    start = generator.standard_normal((num_layers, 2, 4))
    output, last = ours(tg.Tensor(inputs), tg.Tensor(start))
    expected, expected_last = theirs(torch.tensor(inputs), torch.tensor(start))
    np.testing.assert_allclose(output.numpy(), expected.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(last.numpy(), expected_last.detach().numpy(), atol=1e-12)
    ((output * output).sum() + last.sum()).backward(scheduler=scheduler)
    ((expected * expected).sum() + expected_last.sum()).backward()
    assert_parameter_grads_match(ours, theirs, rtol=1e-10)


def run_both(ours, theirs, inputs, start, scheduler):
    """The same forward and loss (every output and the last states) through both, and our
    backward with `scheduler`: (the scanned chains' lengths, our input's gradient, theirs)."""
    dtype = inputs.dtype
    ours_x = tg.Tensor(inputs, requires_grad=True)
    theirs_x = torch.tensor(inputs, requires_grad=True)
    ours_h = None if start is None else tg.Tensor(start, requires_grad=True)
    theirs_h = None if start is None else torch.tensor(start, requires_grad=True)
    output, last = ours(ours_x, ours_h)
    expected, expected_last = theirs(theirs_x, theirs_h)
    atol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(output.numpy(), expected.detach().numpy(), atol=atol)
    np.testing.assert_allclose(last.numpy(), expected_last.detach().numpy(), atol=atol)
    spy = SpyScheduler(scheduler_object(scheduler))
    ((output * output).sum() + last.sum()).backward(scheduler=spy)
    ((expected * expected).sum() + expected_last.sum()).backward()
    scanned = [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments]
    grads = [ours_x.grad.numpy()] + ([] if start is None else [ours_h.grad.numpy()])
    theirs_grads = [theirs_x.grad.numpy()] + ([] if start is None else [theirs_h.grad.numpy()])
    return scanned, grads, theirs_grads


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize(
    ("num_layers", "batch_first", "given_state", "batched"),
    [
        (1, False, False, True),
        (2, True, True, True),
        (2, False, False, True),
        (1, False, True, False),
    ],
)
def test_every_scheduler_gives_torchs_gradients(
    num_layers, batch_first, given_state, batched, scheduler, dtype
):
    ours, theirs = pair(num_layers, batch_first=batch_first, dtype=dtype)
    generator = np.random.default_rng(3)
    shape = ((2, 10, 3) if batch_first else (10, 2, 3)) if batched else (10, 3)
    inputs = generator.standard_normal(shape).astype(dtype)
    rows = (2,) if batched else ()
    start = generator.standard_normal((num_layers, *rows, 4)).astype(dtype)
    scanned, grads, expected = run_both(
        ours, theirs, inputs, start if given_state else None, scheduler
    )
    rtol, atol = (1e-10, 1e-12) if dtype == np.float64 else (2e-4, 1e-5)
    assert_parameter_grads_match(ours, theirs, rtol=rtol, atol=atol)
    for mine, reference in zip(grads, expected, strict=True):
        np.testing.assert_allclose(mine, reference, rtol=rtol, atol=atol)
    if scheduler in ("hillis-steele", "blelloch", "blocked"):
        # One chain per layer: from h_0 when it is given (it needs a gradient), else from h_1.
        assert scanned == [10 if given_state else 9] * num_layers


def test_each_layer_projects_its_input_once():
    # One Linear over the whole sequence per layer; the steps hold only h W_hhᵀ (T of them).
    ours, _ = pair(2)
    output, _ = ours(tg.Tensor(np.random.default_rng(4).standard_normal((12, 2, 3))))
    products = []
    stack = [output]
    seen = set()
    while stack:
        node = stack.pop()._ctx
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, (Linear, MatMul)):
            products.append((type(node).__name__, node.inputs[0].shape))
        stack.extend(operand for operand in node.inputs if isinstance(operand, tg.Tensor))
    expected = [("Linear", (12, 2, 3)), ("Linear", (12, 2, 4))] + [("MatMul", (2, 4))] * 24
    assert sorted(products) == sorted(expected)
    plan = tg.backward_plan(output.sum(), scheduler="blelloch")
    assert "steps of [MatMul->Add->Tanh]" in str(plan)


def test_a_one_layer_rnn_is_one_scanned_chain():
    ours, _ = pair(1)
    inputs = np.random.default_rng(2).standard_normal((12, 2, 3))
    output, _ = ours(tg.Tensor(inputs))
    plan = tg.backward_plan(output.sum(), scheduler="blelloch")
    # h_0 is a constant (zeros): the chain runs from h_1 to h_12, 11 steps.
    assert [(segment.length, segment.scanned) for segment in plan.segments] == [(11, True)]


def test_rnn_rejects_what_it_does_not_do():
    with pytest.raises(ValueError, match="dropout"):
        nn.RNN(3, 4, dropout=0.5)
    with pytest.raises(ValueError, match="expected an input of shape"):
        nn.RNN(3, 4)(tg.zeros(5, 2, 7))
    with pytest.raises(ValueError, match="hx must have shape"):
        nn.RNN(3, 4)(tg.zeros(5, 2, 3), tg.zeros(2, 2, 4))
