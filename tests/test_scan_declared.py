"""`tg.scan` declares its chain: every formulation of tests/rnn_formulations.py written as a
`tg.scan` gives, with every scheduler, the walk's gradients and PyTorch's (float64 and
float32); the declared chains are scanned without a search; the API is jax.lax.scan's."""

import numpy as np
import pytest
import torch
from helpers import SpyScheduler
from rnn_formulations import FORMULATIONS, build

import tinygrad_ops as tg
from tinygrad_ops.ops import GetItem
from tinygrad_ops.scheduler import ScanScheduler

torch.set_num_threads(1)
SCHEDULERS = ["sequential", "hillis-steele", "blelloch", "blocked", "auto"]
STEPS = 12
# Scanned chains per formulation through tg.scan (h_0 constant: the lowest step walked).
SCANNED = {name: [STEPS - 1] for name in FORMULATIONS}
SCANNED["two-rnns"] = SCANNED["stacked"] = [STEPS - 1, STEPS - 1]
SCANNED["lstm"] = []  # a tuple carry (h, c): walked, the reason in backward_plan


def scheduler_object(name):
    if name in ("hillis-steele", "blelloch", "blocked"):
        return ScanScheduler(name, block_size=4, min_steps=2)
    return name


def gradients(name, scheduler, dtype):
    loss, parameters = build(name, "tg-scan", dtype, steps=STEPS)
    spy = SpyScheduler(scheduler_object(scheduler))
    loss.backward(scheduler=spy)
    scanned = [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments]
    return [parameter.grad.numpy() for parameter in parameters], scanned


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("name", list(FORMULATIONS))
def test_every_scheduler_gives_the_walks_and_torchs_gradients_through_tg_scan(
    name, scheduler, dtype
):
    walked, _ = gradients(name, "sequential", dtype)
    got, scanned = gradients(name, scheduler, dtype)
    loss, parameters = build(name, "torch", dtype, steps=STEPS)
    loss.backward()
    rtol, atol = (1e-10, 1e-12) if dtype == np.float64 else (2e-4, 1e-5)
    for mine, reference, theirs in zip(got, walked, parameters, strict=True):
        np.testing.assert_allclose(mine, reference, rtol=rtol, atol=atol)
        np.testing.assert_allclose(mine, theirs.grad.numpy(), rtol=rtol, atol=atol)
    if scheduler in ("hillis-steele", "blelloch", "blocked"):
        assert scanned == SCANNED[name]


@pytest.mark.parametrize("name", list(FORMULATIONS))
def test_the_plan_shows_the_declared_chains(name):
    loss, _ = build(name, "tg-scan", steps=STEPS)
    plan = tg.backward_plan(loss, scheduler="blelloch")
    assert [segment.length for segment in plan.segments] == SCANNED[name], str(plan)
    if name == "lstm":
        assert "the carry is a tuple of 2 tensors" in str(plan)


def torch_scan(step, init, xs, reverse=False):
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    carry, ys = init, [None] * len(xs)
    for t in order:
        carry, ys[t] = step(carry, xs[t])
    return carry, torch.stack(ys)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("scheduler", ["sequential", "blelloch", "auto"])
def test_scan_is_jaxs_scan_with_torchs_gradients(reverse, scheduler):
    generator = np.random.default_rng(0)
    arrays = [generator.standard_normal(shape) for shape in [(4, 4), (9, 2, 4), (2, 4)]]
    ours = [tg.Tensor(array, requires_grad=True) for array in arrays]
    theirs = [torch.tensor(array, requires_grad=True) for array in arrays]

    def step_of(weight):
        def step(h, x):
            h = (h @ weight + x).tanh()
            return h, h * x

        return step

    h, ys = tg.scan(step_of(ours[0]), ours[2], ours[1], reverse=reverse)
    expected_h, expected_ys = torch_scan(step_of(theirs[0]), theirs[2], theirs[1], reverse)
    np.testing.assert_allclose(ys.numpy(), expected_ys.detach().numpy(), rtol=1e-12)
    ((h * h).sum() + ys.sum()).backward(scheduler=scheduler_object(scheduler))
    ((expected_h * expected_h).sum() + expected_ys.sum()).backward()
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_a_projection_outside_the_step_has_torchs_gradients(scheduler, reverse, monkeypatch):
    """The input's part of each step computed once for every step (x W + b, batched), the
    step reading its row: one chain of the carry-reading part, and the rows' gradients
    stacked once (no GetItem's scatter into an array of the whole sequence per step)."""
    scatters = []
    original = GetItem.backward
    monkeypatch.setattr(
        GetItem, "backward", lambda node, grad: scatters.append(1) or original(node, grad)
    )
    generator = np.random.default_rng(3)
    arrays = [generator.standard_normal(shape) for shape in [(3, 4), (4,), (4, 4), (13, 2, 3)]]
    ours = [tg.Tensor(array, requires_grad=True) for array in arrays]
    theirs = [torch.tensor(array, requires_grad=True) for array in arrays]

    def step_of(u):
        def step(h, projected):
            h = (projected + h @ u).tanh()
            return h, h

        return step

    w, b, u, xs = ours
    h, ys = tg.scan(step_of(u), tg.zeros((2, 4), dtype=np.float64), xs @ w + b, reverse=reverse)
    spy = SpyScheduler(scheduler_object(scheduler))
    ((h * h).sum() + (ys * ys).sum()).backward(scheduler=spy)
    w, b, u, xs = theirs
    h, ys = torch_scan(step_of(u), torch.zeros(2, 4, dtype=torch.float64), xs @ w + b, reverse)
    ((h * h).sum() + (ys * ys).sum()).backward()
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10)
    assert not scatters
    if scheduler in ("hillis-steele", "blelloch", "blocked"):
        assert [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments] == [12]


def test_scan_takes_tuples_and_a_length():
    xs = (tg.ones((5, 2)), tg.arange(5.0))
    carry, (firsts, seconds) = tg.scan(
        lambda c, x: (c + x[0] * x[1], (x[0], x[1] * 2)), tg.zeros(2), xs
    )
    np.testing.assert_array_equal(carry.numpy(), [10.0, 10.0])
    assert firsts.shape == (5, 2)
    assert seconds.numpy().tolist() == [0, 2, 4, 6, 8]
    count, nothing = tg.scan(lambda c, x: (c + 1, None), tg.zeros(()), length=3)
    assert count.item() == 3
    assert nothing is None


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (
            lambda: tg.scan(lambda c, x: (c.sum(), None), tg.zeros(2), tg.ones((3, 2))),
            TypeError,
            "a carry like init",
        ),
        (lambda: tg.scan(lambda c, x: c, tg.zeros(2), tg.ones((3, 2))), TypeError, "a pair"),
        (
            lambda: tg.scan(lambda c, x: (c, None), tg.zeros(2), (tg.ones(3), tg.ones(4))),
            ValueError,
            "number of steps",
        ),
        (
            lambda: tg.scan(lambda c, x: (c, None), tg.zeros(2), tg.ones((0, 2))),
            ValueError,
            "at least one step",
        ),
        (lambda: tg.scan(lambda c, x: (c, None), tg.zeros(2), [np.ones(3)]), TypeError, "xs must"),
    ],
)
def test_bad_scans_say_what_is_wrong(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_a_readout_of_a_tensor_inside_a_step_is_still_right():
    """y_t reads the step's pre-activation (not its carry): its gradient goes through that
    step's ops before the scan, the chain's part by the scan (the rules are linear)."""
    generator = np.random.default_rng(2)
    weight = generator.standard_normal((3, 3)) * 0.5
    grads = []
    for scheduler in ("sequential", "blelloch"):
        w = tg.Tensor(weight, requires_grad=True)

        def step(h, x, w=w):
            pre = h @ w + x
            return pre.tanh(), pre * pre

        h, ys = tg.scan(
            step,
            tg.zeros((2, 3), dtype=np.float64),
            tg.Tensor(generator.standard_normal((16, 2, 3))),
        )
        spy = SpyScheduler(scheduler_object(scheduler))
        (h.sum() + ys.sum()).backward(scheduler=spy)
        grads.append(w.grad.numpy())
        generator = np.random.default_rng(2)
        generator.standard_normal((3, 3))
    assert len(spy.graph.scanned_segments) == 1
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)


def test_hand_written_loops_are_still_found_beside_a_backwarded_scan():
    """A tg.scan's graph that a backward released is forgotten: the finder searches again."""
    w = tg.Tensor(np.eye(4, dtype=np.float32) * 0.5, requires_grad=True)
    h, _ = tg.scan(lambda h, x: ((h @ w + x).tanh(), None), tg.zeros((2, 4)), tg.ones((8, 2, 4)))
    plan = tg.backward_plan(h.sum(), "blelloch")
    assert [segment.length for segment in plan.segments] == [7]
    h.sum().backward(scheduler="blelloch")
    state = tg.zeros((2, 4))
    for _ in range(8):
        state = (state @ w + 1.0).tanh()
    assert [segment.length for segment in tg.backward_plan(state.sum(), "blelloch").segments]


def test_a_compiled_training_step_through_tg_scan_is_the_eager_one():
    generator = np.random.default_rng(0)
    data = [tg.Tensor(generator.standard_normal((32, 4, 3))) for _ in range(3)]
    results = []
    for compiled in (False, True):
        tg.manual_seed(0)
        rnn = tg.nn.RNN(3, 6, dtype=np.float64)
        optimizer = tg.optim.SGD(rnn.parameters(), lr=0.1)

        def train(inputs, rnn=rnn, optimizer=optimizer):
            optimizer.zero_grad()
            _, last = rnn(inputs)
            loss = (last * last).sum()
            loss.backward(scheduler="blelloch")
            optimizer.step()
            return loss

        function = tg.compile(train) if compiled else train
        losses = [function(data[call % 3]).item() for call in range(4)]
        results.append((losses, [p.data.copy() for p in rnn.parameters()]))
    (eager_losses, eager_state), (losses, state) = results
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-12)
    for mine, reference in zip(state, eager_state, strict=True):
        np.testing.assert_allclose(mine, reference, rtol=1e-12)


def _odd_step(kind):
    """A tg.scan step that differs from the others at step 5 in one way (`kind`)."""
    generator = np.random.default_rng(3)
    weight = generator.standard_normal((3, 3)) * 0.5
    other_weight = generator.standard_normal((3, 3)) * 0.5
    xs = generator.standard_normal((12, 2, 3))
    counter = [0]

    def build():
        w = tg.Tensor(weight, requires_grad=True)
        v = tg.Tensor(other_weight, requires_grad=True)
        cache = {}
        counter[0] = 0

        def step(h, x):
            t = counter[0]
            counter[0] += 1
            odd = t == 5
            u = h @ (v if odd and kind == "weight" else w) + x
            if kind == "op" and odd:
                h = u.sigmoid()
            elif kind == "exponent":
                h = (u ** (3.0 if odd else 2.0)).tanh()
            elif kind == "carry-read-twice":
                h = (u * (h if odd else x)).tanh()
            elif kind == "hook" and odd:
                u.register_hook(lambda grad: grad * 3.0)
                h = u.tanh()
            elif kind == "cache":
                if t == 4:
                    cache["u"] = u * 1.0
                h = (u + cache["u"]).tanh() if t > 4 else (u + u).tanh()
            else:
                h = u.tanh()
            return h, h.sum()

        h, ys = tg.scan(step, tg.zeros((2, 3), dtype=np.float64), tg.Tensor(xs))
        return h.sum() + (ys * ys).sum(), [w, v]

    return build


@pytest.mark.parametrize("kind", ["op", "exponent", "carry-read-twice", "hook", "cache", "weight"])
def test_a_step_unlike_the_others_is_walked_or_scanned_right(kind):
    """A step function may do something else in one step (a branch on a counter): the
    steps above it are scanned, the rest walked, and every gradient is the walk's."""
    build = _odd_step(kind)
    grads = []
    for scheduler in ("sequential", "blelloch"):
        loss, parameters = build()
        spy = SpyScheduler(scheduler_object(scheduler))
        loss.backward(scheduler=spy)
        grads.append([p.grad.numpy() if p.grad is not None else 0.0 for p in parameters])
    scanned = [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments]
    assert all(steps <= 11 for steps in scanned), scanned
    for mine, reference in zip(grads[1], grads[0], strict=True):
        np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12)


def test_a_saved_value_changed_in_place_raises_as_the_walk_does():
    w = tg.Tensor(np.eye(3) * 0.5, requires_grad=True)
    h, _ = tg.scan(
        lambda h, x: ((h @ w + x).tanh(), None),
        tg.zeros((2, 3), dtype=np.float64),
        tg.ones((8, 2, 3), dtype=np.float64),
    )
    with tg.no_grad():
        w.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        h.sum().backward(scheduler="blelloch")
