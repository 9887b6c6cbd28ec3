"""nn.GRU's recurrence is a chain the scans take: its gates are cut from one product by a
slice of the last axis (`GetItem`'s Jacobian rule, a selection matrix), and every
scheduler gives the walk's gradients (1e-10 relative) and PyTorch's. nn.LSTM carries two
states (h and c) and is walked, the finder refusing a loop of its cells at their top steps; an
LSTM that
carries its joint state [h | c] (tests/rnn_formulations.py, "lstm-joint") is one chain,
through `Concatenate`'s Jacobian rule."""

import numpy as np
import pytest
import torch
from helpers import SpyScheduler, assert_parameter_grads_match

import tinygrad_ops as tg
from tinygrad_ops import nn
from tinygrad_ops.ops.shape import Concatenate, GetItem
from tinygrad_ops.scheduler import loops
from tinygrad_ops.scheduler.batched import _batched_class

torch.set_num_threads(1)
STEPS, BATCH, HIDDEN = 12, 3, 4


def gru_pair(num_layers):
    torch.manual_seed(0)
    theirs = torch.nn.GRU(3, HIDDEN, num_layers=num_layers).double()
    ours = nn.GRU(3, HIDDEN, num_layers=num_layers).double()
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    return ours, theirs


def losses(ours, theirs):
    inputs = np.random.default_rng(3).standard_normal((STEPS, BATCH, 3))
    output, last = ours(tg.Tensor(inputs))
    expected, expected_last = theirs(torch.tensor(inputs))
    if isinstance(last, tuple):  # an LSTM's (h, c)
        last, expected_last = last[0], expected_last[0]
    return (output * output).sum() + last.sum(), (expected * expected).sum() + expected_last.sum()


def test_the_plan_finds_the_gru_chain():
    ours, _ = gru_pair(1)
    loss = ours(tg.Tensor(np.ones((STEPS, BATCH, 3))))[1].sum()
    plan = tg.backward_plan(loss, scheduler="blelloch")
    assert [(segment.length, segment.jacobian_kind) for segment in plan.segments] == [
        (STEPS - 1, "dense")
    ], str(plan)


@pytest.mark.parametrize("scheduler", ["blelloch", "blocked", "hillis-steele", "auto"])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_every_scheduler_gives_the_walks_gradients_on_a_gru(scheduler, num_layers):
    walked, theirs = gru_pair(num_layers)
    loss, expected = losses(walked, theirs)
    loss.backward(scheduler="sequential")
    expected.backward()
    ours, _ = gru_pair(num_layers)
    loss, _ = losses(ours, theirs)
    if scheduler != "auto":
        scheduler = tg.scheduler.ScanScheduler(scheduler, block_size=4)
    spy = SpyScheduler(scheduler)
    loss.backward(scheduler=spy)
    for (name, mine), (_, reference) in zip(
        ours.named_parameters(), walked.named_parameters(), strict=True
    ):
        np.testing.assert_allclose(
            mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10, err_msg=name
        )
    assert_parameter_grads_match(ours, theirs, rtol=1e-10)
    if scheduler != "auto":  # (auto may walk a chain this short: either way right)
        scanned = [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments]
        assert scanned == [STEPS - 1] * num_layers  # each layer, the upper one first


def test_only_a_slice_of_the_last_axis_has_a_jacobian_rule():
    x = tg.Tensor(np.ones((3, 8)), requires_grad=True)
    assert x[..., 2:5]._ctx.jacobian_kind(0) == "dense"
    assert x[:, 2:5]._ctx.jacobian_kind(0) == "dense"
    assert x[:, ::-2]._ctx.jacobian_kind(0) == "dense"
    assert x.chunk(2, dim=-1)[1]._ctx.jacobian_kind(0) == "dense"
    assert x.narrow(1, 2, 3)._ctx.jacobian_kind(0) == "dense"
    assert tg.Tensor(np.ones(8), requires_grad=True)[2:5]._ctx.jacobian_kind(0) == "dense"
    assert x[1:]._ctx.jacobian_kind(0) is None  # mixes the rows (takes some of them)
    assert x[1:, 2:5]._ctx.jacobian_kind(0) is None
    assert x[:, 1]._ctx.jacobian_kind(0) is None  # drops the last axis
    assert x[:, None, 2:5]._ctx.jacobian_kind(0) is None
    assert x[:, [1, 2]]._ctx.jacobian_kind(0) is None  # an index array
    cube = tg.Tensor(np.ones((2, 3, 8)), requires_grad=True)
    assert cube[:, 1:2]._ctx.jacobian_kind(0) is None  # a slice of the middle axis
    assert cube[:, :, 1:2]._ctx.jacobian_kind(0) == "dense"


def sliced_rnn(library, steps, form, seed=0):
    """h = tanh(pieces of (h @ U) + x_t @ W): a recurrence through slices of the last axis
    written three ways (`x[:, a:b]`, `chunk(dim=-1)`, `x[..., a:b]` of a strided slice)."""
    generator = np.random.default_rng(seed)
    make = tg.Tensor if library == "tg" else torch.tensor
    weight = make(generator.standard_normal((3, HIDDEN)) * 0.5, requires_grad=True)
    recurrent = make(generator.standard_normal((HIDDEN, 2 * HIDDEN)) * 0.4, requires_grad=True)
    h = make(np.zeros((BATCH, HIDDEN)))
    for x in generator.standard_normal((steps, BATCH, 3)):
        both = h @ recurrent
        if form == "columns":
            piece = both[:, 1 : HIDDEN + 1]
        elif form == "chunk":
            first, second = both.chunk(2, dim=-1)
            piece = first * second
        else:
            piece = both[..., ::2]
        h = (piece + make(x) @ weight).tanh()
    return h.sum(), [weight, recurrent]


@pytest.mark.parametrize("form", ["columns", "chunk", "strided"])
@pytest.mark.parametrize("scheduler", ["blelloch", "blocked", "hillis-steele"])
def test_a_chain_through_any_slice_of_the_last_axis_is_scanned_right(form, scheduler):
    loss, walked = sliced_rnn("tg", STEPS, form)
    loss.backward(scheduler="sequential")
    loss, ours = sliced_rnn("tg", STEPS, form)
    spy = SpyScheduler(tg.scheduler.ScanScheduler(scheduler, block_size=4))
    loss.backward(scheduler=spy)
    assert [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments] == [STEPS - 1]
    expected, theirs = sliced_rnn("torch", STEPS, form)
    expected.backward()
    for mine, reference, torch_reference in zip(ours, walked, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(mine.grad.numpy(), torch_reference.grad.numpy(), rtol=1e-10)


def test_the_slice_jacobian_picks_the_columns():
    """g_input = g_output J for the rule's J, as the op's own backward gives."""
    x = tg.Tensor(np.arange(24.0).reshape(3, 8), requires_grad=True)
    y = x[..., 2:7:2]
    upstream = np.random.default_rng(0).standard_normal((3, 3))
    y.backward(tg.Tensor(upstream))
    batched = _batched_class(GetItem)()  # the rule runs on a batched node (scan_scheduler)
    for name in ("index", "basic", "input_shape"):
        setattr(batched, name, getattr(y._ctx, name))
    batched.output_dtype = np.dtype(np.float64)
    np.testing.assert_array_equal(upstream @ batched.jacobian(0).matrix, x.grad.numpy())


@pytest.mark.parametrize("num_layers", [1, 2])
def test_an_lstm_is_walked_and_right_and_the_plan_says_why(num_layers):
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(3, HIDDEN, num_layers=num_layers).double()
    ours = nn.LSTM(3, HIDDEN, num_layers=num_layers).double()
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    loss, expected = losses(ours, theirs)
    plan = tg.backward_plan(loss, scheduler="blelloch")
    assert plan.segments == []
    assert "the carry is a tuple of 2 tensors" in str(plan)
    loss.backward(scheduler="blelloch")
    expected.backward()
    assert_parameter_grads_match(ours, theirs, rtol=1e-10)


def test_the_concatenate_jacobian_puts_back_the_columns():
    """g_input = g_output J through each input, as the op's own backward gives; joined along
    another axis, no rule (the rows would mix)."""
    first = tg.Tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    second = tg.Tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    joined = tg.cat([first, second], dim=-1)
    upstream = np.random.default_rng(0).standard_normal((3, 5))
    joined.backward(tg.Tensor(upstream))
    batched = _batched_class(Concatenate)()
    for name in ("axis", "bounds"):
        setattr(batched, name, getattr(joined._ctx, name))
    batched.output_dtype = np.dtype(np.float64)
    for index, tensor in enumerate((first, second)):
        placed = upstream @ batched.jacobian(index).matrix
        np.testing.assert_array_equal(placed, tensor.grad.numpy())
    assert joined._ctx.jacobian_kind(0) == "dense"
    assert tg.cat([first, first], dim=0)._ctx.jacobian_kind(0) is None


def two_state_lstm(steps):
    """The states of an LSTM written as a loop over nn.LSTMCell, h and c apart (nn.LSTM
    carries them as one joint state)."""
    cell = nn.LSTMCell(3, HIDDEN)
    h, c = cell(tg.Tensor(np.ones((BATCH, 3), dtype=np.float32)))
    states = []
    for _ in range(steps - 1):
        h, c = cell(tg.Tensor(np.ones((BATCH, 3), dtype=np.float32)), (h, c))
        states.append(h)
    return tg.stack(states)


def test_the_finder_refuses_a_two_state_lstm_at_its_top_steps(monkeypatch):
    """h and c each read by the other's next step: every candidate step is refused from its
    top two steps, before the chain is walked down (no walk of the route goes past x_{n-2}),
    and the look stops after loops.LOOK tensors, each trying at most loops.CANDIDATES
    anchors below it."""
    longest = [0]
    built = []

    def walked(*arguments):
        anchors = loops_walk(*arguments)
        longest[0] = max(longest[0], len(anchors))
        return anchors

    def counted(*arguments):
        built.append(1)
        return loops_build(*arguments)

    loops_build = loops.build_template
    loops_walk = loops.walk_route
    monkeypatch.setattr(loops, "walk_route", walked)
    monkeypatch.setattr(loops, "build_template", counted)
    output = two_state_lstm(40)
    assert tg.backward_plan(output.sum(), scheduler="blelloch").segments == []
    assert longest[0] <= 3
    assert 0 < len(built) <= 2 * loops.LOOK * loops.CANDIDATES  # (a step rebuilt once)
