"""nn.LSTM / nn.GRU and their cells (tinygrad_ops/nn/gated.py) against PyTorch's: outputs,
last states and every parameter's and input's gradient, with PyTorch's parameter names,
shapes and draw order, float64 and float32, walked and with every scan scheduler (a GRU's
layer is one scanned chain; an LSTM's two states are walked, the plan says why)."""

import numpy as np
import pytest
import torch
from helpers import SpyScheduler, assert_parameter_grads_match

import tinygrad_ops as tg
from tinygrad_ops import nn
from tinygrad_ops.scheduler import ScanScheduler

torch.set_num_threads(1)
KINDS = {"LSTM": (nn.LSTM, torch.nn.LSTM), "GRU": (nn.GRU, torch.nn.GRU)}
CELLS = {"LSTMCell": (nn.LSTMCell, torch.nn.LSTMCell), "GRUCell": (nn.GRUCell, torch.nn.GRUCell)}


SCHEDULERS = ["sequential", "hillis-steele", "blelloch", "blocked", "auto"]


def copied(ours_class, theirs_class, *args, dtype=np.float64, **kwargs):
    """Our module with the torch module's weights (the same state dict keys, in order)."""
    torch.manual_seed(0)
    theirs = theirs_class(*args, **kwargs).to(
        torch.float64 if dtype == np.float64 else torch.float32
    )
    ours = ours_class(*args, **kwargs).to(dtype)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    return ours, theirs


def first_state(kind, shape, generator):
    if kind == "LSTM":
        h, c = generator.standard_normal(shape), generator.standard_normal(shape)
        return (tg.Tensor(h), tg.Tensor(c)), (torch.tensor(h), torch.tensor(c))
    h = generator.standard_normal(shape)
    return tg.Tensor(h), torch.tensor(h)


def total(output, last):
    states = last if isinstance(last, tuple) else (last,)
    return (output * output).sum() + sum(state.sum() for state in states)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(
    ("num_layers", "batch_first", "bias", "given_state", "batched"),
    [
        (1, False, True, False, True),
        (2, True, True, True, True),
        (1, False, False, True, True),
        (2, False, True, True, False),
    ],
)
def test_gated_network_matches_pytorch(kind, num_layers, batch_first, bias, given_state, batched):
    ours_class, theirs_class = KINDS[kind]
    ours, theirs = copied(ours_class, theirs_class, 3, 4, num_layers, bias, batch_first)
    generator = np.random.default_rng(1)
    shape = ((2, 6, 3) if batch_first else (6, 2, 3)) if batched else (6, 3)
    values = generator.standard_normal(shape)
    ours_x, theirs_x = (
        tg.Tensor(values, requires_grad=True),
        torch.tensor(values, requires_grad=True),
    )
    state_shape = (num_layers, 2, 4) if batched else (num_layers, 4)
    ours_hx, theirs_hx = first_state(kind, state_shape, generator) if given_state else (None, None)
    output, last = ours(ours_x, ours_hx)
    expected, expected_last = theirs(theirs_x, theirs_hx)
    np.testing.assert_allclose(output.numpy(), expected.detach().numpy(), atol=1e-12)
    for state, reference in zip(
        last if kind == "LSTM" else (last,),
        expected_last if kind == "LSTM" else (expected_last,),
        strict=True,
    ):
        np.testing.assert_allclose(state.numpy(), reference.detach().numpy(), atol=1e-12)
    total(output, last).backward()
    total(expected, expected_last).backward()
    assert_parameter_grads_match(ours, theirs, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(
    ("num_layers", "batch_first", "given_state"), [(1, False, False), (2, True, True)]
)
def test_every_scheduler_gives_torchs_gradients(
    kind, num_layers, batch_first, given_state, scheduler, dtype
):
    ours_class, theirs_class = KINDS[kind]
    ours, theirs = copied(
        ours_class, theirs_class, 3, 4, num_layers, True, batch_first, dtype=dtype
    )
    generator = np.random.default_rng(5)
    values = generator.standard_normal((2, 10, 3) if batch_first else (10, 2, 3)).astype(dtype)
    ours_x = tg.Tensor(values, requires_grad=True)
    theirs_x = torch.tensor(values, requires_grad=True)
    ours_hx, theirs_hx = (None, None)
    if given_state:
        ours_hx, theirs_hx = first_state(kind, (num_layers, 2, 4), generator)
        ours_hx = (
            tuple(s.astype(dtype) for s in ours_hx) if kind == "LSTM" else ours_hx.astype(dtype)
        )
        theirs_hx = (
            tuple(s.to(theirs_x.dtype) for s in theirs_hx)
            if kind == "LSTM"
            else theirs_hx.to(theirs_x.dtype)
        )
    spy = SpyScheduler(
        ScanScheduler(scheduler, block_size=3, min_steps=2)
        if scheduler in ("hillis-steele", "blelloch", "blocked")
        else scheduler
    )
    total(*ours(ours_x, ours_hx)).backward(scheduler=spy)
    total(*theirs(theirs_x, theirs_hx)).backward()
    rtol, atol = (1e-10, 1e-12) if dtype == np.float64 else (2e-4, 1e-5)
    assert_parameter_grads_match(ours, theirs, rtol=rtol, atol=atol)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=rtol, atol=atol)
    scanned = [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments]
    if scheduler in ("hillis-steele", "blelloch", "blocked"):
        # A GRU's layer is one chain (from h_1: h_0 needs no gradient); an LSTM's is walked.
        assert scanned == ([] if kind == "LSTM" else [9] * num_layers)


def test_the_plan_says_why_an_lstm_is_walked_and_a_gru_scanned():
    inputs = tg.Tensor(np.random.default_rng(6).standard_normal((16, 2, 3)).astype(np.float32))
    output, _ = nn.LSTM(3, 4)(inputs)
    plan = str(tg.backward_plan(output.sum(), scheduler="blelloch"))
    assert "the carry is a tuple of 2 tensors: walked" in plan
    output, _ = nn.GRU(3, 4)(inputs)
    plan = tg.backward_plan(output.sum(), scheduler="blelloch")
    assert [(segment.length, segment.scanned) for segment in plan.segments] == [(15, True)]


@pytest.mark.parametrize("kind", sorted(CELLS))
@pytest.mark.parametrize("batched", [True, False])
def test_gated_cell_matches_pytorch(kind, batched):
    ours_class, theirs_class = CELLS[kind]
    ours, theirs = copied(ours_class, theirs_class, 3, 5)
    generator = np.random.default_rng(2)
    inputs = [generator.standard_normal((2, 3) if batched else (3,)) for _ in range(4)]
    ours_state, theirs_state = None, None
    ours_sum, theirs_sum = 0, 0
    for values in inputs:
        ours_state = ours(tg.Tensor(values), ours_state)
        theirs_state = theirs(torch.tensor(values), theirs_state)
        ours_h = ours_state[0] if kind == "LSTMCell" else ours_state
        theirs_h = theirs_state[0] if kind == "LSTMCell" else theirs_state
        np.testing.assert_allclose(ours_h.numpy(), theirs_h.detach().numpy(), atol=1e-12)
        ours_sum = ours_sum + (ours_h * ours_h).sum()
        theirs_sum = theirs_sum + (theirs_h * theirs_h).sum()
    ours_sum.backward()
    theirs_sum.backward()
    assert_parameter_grads_match(ours, theirs, rtol=1e-10, atol=1e-12)


def test_default_init_draws_pytorchs_bounds():
    lstm = nn.LSTM(3, 16, num_layers=2)
    for name, parameter in lstm.named_parameters():
        assert np.abs(parameter.numpy()).max() <= 0.25, name  # 1/sqrt(hidden)
    assert lstm.weight_ih_l1.shape == (64, 16)
    assert nn.GRU(3, 16).weight_hh_l0.shape == (48, 16)


def test_gated_networks_refuse_what_they_do_not_do():
    with pytest.raises(ValueError, match="LSTM: dropout between layers is not implemented"):
        nn.LSTM(3, 4, dropout=0.5)
    with pytest.raises(ValueError, match="GRU: bidirectional=True is not implemented"):
        nn.GRU(3, 4, bidirectional=True)
    with pytest.raises(ValueError, match="LSTM: proj_size is not implemented"):
        nn.LSTM(3, 4, proj_size=2)
    with pytest.raises(ValueError, match=r"GRU\(input_size=3\): expected an input of shape"):
        nn.GRU(3, 4)(tg.zeros(5, 2, 4))
    with pytest.raises(ValueError, match=r"LSTM: c_0 must have shape \(1, 2, 4\)"):
        nn.LSTM(3, 4)(tg.zeros(5, 2, 3), (tg.zeros(1, 2, 4), tg.zeros(2, 2, 4)))
    with pytest.raises(ValueError, match=r"LSTMCell\(input_size=3\): expected an input"):
        nn.LSTMCell(3, 4)(tg.zeros(2, 5))


def test_an_lstm_trains_under_compile_as_eagerly():
    results = []
    for compiled in (False, True):
        tg.manual_seed(0)
        model = nn.LSTM(2, 3)
        optimizer = tg.optim.SGD(model.parameters(), lr=0.1)

        def step(inputs, model=model, optimizer=optimizer):
            optimizer.zero_grad()
            output, _ = model(inputs)
            loss = (output * output).mean()
            loss.backward()
            optimizer.step()
            return loss

        run = tg.compile(step) if compiled else step
        inputs = tg.Tensor(np.random.default_rng(3).standard_normal((5, 2, 2)).astype(np.float32))
        results.append([run(inputs).item() for _ in range(4)])
    assert results[0] == results[1]
