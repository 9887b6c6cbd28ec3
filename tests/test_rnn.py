"""nn.RNN against torch.nn.RNN: outputs, last states and every gradient, walked and
scanned; its one-layer backward is a chain the scan schedulers find."""

import numpy as np
import pytest
import torch
from helpers import assert_parameter_grads_match

import tinygrad_ops as tg
from tinygrad_ops import nn

torch.set_num_threads(1)


def pair(num_layers, nonlinearity="tanh", batch_first=False, bias=True):
    torch.manual_seed(0)
    theirs = torch.nn.RNN(
        3, 4, num_layers=num_layers, nonlinearity=nonlinearity, bias=bias, batch_first=batch_first
    ).double()
    ours = nn.RNN(
        3, 4, num_layers=num_layers, nonlinearity=nonlinearity, bias=bias, batch_first=batch_first
    ).double()
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
