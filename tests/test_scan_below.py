"""The chain below a chain (scheduler/loops.py): the lower layer of a stacked RNN written as one
loop is found with the upper layer, its states the upper layer's per-step inputs, and
scanned once the upper layer's scan has sent them its gradients; where the layers feed each
other back, neither is a chain (walked). Every case gives the walk's gradients (1e-10
relative) and PyTorch's."""

import numpy as np
import pytest
import torch
from helpers import SpyScheduler, assert_parameter_grads_match, spied_backward

import tinygrad_ops as tg
from tinygrad_ops import nn
from tinygrad_ops.scheduler import loops

torch.set_num_threads(1)
STEPS, BATCH, HIDDEN = 10, 3, 4


def tensor(library, array, requires_grad=True):
    if library == "tg":
        return tg.Tensor(array, requires_grad=requires_grad)
    return torch.tensor(array, requires_grad=requires_grad)


def stacked(library, variant, seed=0):
    """Two tanh layers; `variant`: "plain", "loss-on-lower" (a loss on every lower state),
    "skip" (the upper step reads h1_{t-1} too, written before h2 @ U2), "skip-last" (the
    same term written last), "pre-activation" (the upper step reads the lower layer's
    pre-activation, inside its step: the lower chain's anchors are the pre-activations),
    "feedback" (the lower step reads the upper layer's previous state: no chain of one
    tensor)."""
    generator = np.random.default_rng(seed)
    names = ["W1", "U1", "W2", "U2", "S", "F"]
    shapes = [(3, HIDDEN)] + [(HIDDEN, HIDDEN)] * 5
    weights = {
        name: tensor(library, generator.standard_normal(shape) / 2)
        for name, shape in zip(names, shapes)
    }
    inputs = generator.standard_normal((STEPS, BATCH, 3))
    h1 = h2 = tensor(library, np.zeros((BATCH, HIDDEN)), requires_grad=False)
    extra = None
    for step in range(STEPS):
        x = tensor(library, inputs[step], requires_grad=False)
        previous = h1
        pre = x @ weights["W1"] + h1 @ weights["U1"]
        if variant == "feedback":
            pre = pre + h2 @ weights["F"]
        h1 = pre.tanh()
        below = pre if variant == "pre-activation" else h1
        if variant == "skip":
            upper = previous @ weights["S"] + below @ weights["W2"] + h2 @ weights["U2"]
        elif variant == "skip-last":
            upper = below @ weights["W2"] + h2 @ weights["U2"] + previous @ weights["S"]
        else:
            upper = below @ weights["W2"] + h2 @ weights["U2"]
        h2 = upper.tanh()
        if variant == "loss-on-lower":
            term = (h1 * h1).sum()
            extra = term if extra is None else extra + term
    loss = h2.sum() if extra is None else h2.sum() + extra
    used = names[:4] + (["S"] if variant.startswith("skip") else [])
    used += ["F"] if variant == "feedback" else []
    return loss, [weights[name] for name in used]


def gradients(library, variant, scheduler=None):
    loss, parameters = stacked(library, variant)
    spy = spied_backward(loss, library, scheduler)
    grads = [parameter.grad for parameter in parameters]
    return [np.asarray(grad.numpy()) for grad in grads], spy


@pytest.mark.parametrize(
    ("variant", "scanned"),
    [
        ("plain", [9, 9]),
        ("loss-on-lower", [9, 9]),
        ("skip", [9, 9]),
        ("skip-last", [9, 9]),
        ("pre-activation", [9, 9]),
        ("feedback", []),
    ],
)
@pytest.mark.parametrize("scheduler", ["blelloch", "blocked", "hillis-steele"])
def test_the_lower_layer_is_scanned_when_it_is_a_chain(variant, scanned, scheduler):
    expected, _ = gradients("tg", variant, "sequential")
    got, spy = gradients("tg", variant, tg.scheduler.ScanScheduler(scheduler, block_size=4))
    for mine, walked, theirs in zip(got, expected, gradients("torch", variant)[0], strict=True):
        np.testing.assert_allclose(mine, walked, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-11)
    lengths = [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments]
    assert sorted(lengths) == scanned


@pytest.mark.parametrize("variant", ["plain", "skip", "loss-on-lower", "skip-last"])
def test_the_plan_reports_the_lower_layer(variant):
    loss, _ = stacked("tg", variant)
    plan = tg.backward_plan(loss, scheduler=tg.scheduler.ScanScheduler("blelloch"))
    found = [(segment.length, segment.scanned) for segment in plan.segments]
    assert found == [(STEPS - 1, True)] * 2, str(plan)


def test_each_layer_is_checked_once(monkeypatch):
    """The finder checks each layer's steps column by column once (`Segment`), both
    before the first scan."""
    calls = []
    spy = SpyScheduler(tg.scheduler.ScanScheduler("blelloch"))
    segment = loops.Segment

    def counted(*arguments):
        calls.append(len(spy.graph.scanned_segments))  # how many scans ran before
        return segment(*arguments)

    monkeypatch.setattr(loops, "Segment", counted)
    loss, parameters = stacked("tg", "plain")
    loss.backward(scheduler=spy)
    expected, _ = gradients("tg", "plain", "sequential")
    for parameter, walked in zip(parameters, expected, strict=True):
        np.testing.assert_allclose(parameter.grad.numpy(), walked, rtol=1e-10, atol=1e-12)
    assert [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments] == [9, 9]
    assert calls == [0, 0]  # the upper layer's steps, the lower layer's, once each


def test_a_two_layer_nn_rnn_is_two_scanned_chains():
    torch.manual_seed(0)
    theirs = torch.nn.RNN(3, HIDDEN, num_layers=2).double()
    ours = nn.RNN(3, HIDDEN, num_layers=2).double()
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    inputs = np.random.default_rng(3).standard_normal((12, BATCH, 3))
    output, last = ours(tg.Tensor(inputs))
    loss = (output * output).sum() + last.sum()
    assert [segment.length for segment in tg.backward_plan(loss, "blelloch").segments] == [11, 11]
    spy = SpyScheduler("blelloch")
    loss.backward(scheduler=spy)
    assert [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments] == [11, 11]
    expected, expected_last = theirs(torch.tensor(inputs))
    ((expected * expected).sum() + expected_last.sum()).backward()
    assert_parameter_grads_match(ours, theirs, rtol=1e-10)
