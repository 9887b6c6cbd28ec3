"""The executor (scheduler/scan_scheduler.py, batched.py) hands a chain it cannot scan to the
walk, with its reason in the scheduler's `refusals`: every gradient is then the walk's, and
an error the walk raises is raised as the walk raises it."""

import numpy as np
import pytest
from helpers import SpyScheduler

import tinygrad_ops as tg
from tinygrad_ops.ops.base import Op
from tinygrad_ops.ops.jacobian import diagonal_from_vjp, diagonal_kind
from tinygrad_ops.scheduler import ScanScheduler

SCANS = ["hillis-steele", "blelloch", "blocked"]


def scan_scheduler(method):
    return ScanScheduler(method, block_size=4, min_steps=2)


def gradients(build, scheduler):
    loss, parameters = build()
    loss.backward(scheduler=scheduler)
    return [parameter.grad.numpy() for parameter in parameters]


def assert_walks_gradients(build, method):
    scheduler = scan_scheduler(method)
    got = gradients(build, scheduler)
    for mine, walked in zip(got, gradients(build, "sequential"), strict=True):
        np.testing.assert_allclose(mine, walked, rtol=1e-10, atol=1e-12)
    return scheduler.refusals


def two_chains_one_reading_the_other():
    """h2's steps read h1's states, and h2's chain ends before h1's: the walk meets h2's top
    on its way down to h1's first step, before h1's scan."""
    generator = np.random.default_rng(0)
    U1 = tg.Tensor(generator.standard_normal((3, 3)) * 0.5, requires_grad=True)
    U2 = tg.Tensor(generator.standard_normal((3, 3)) * 0.5, requires_grad=True)
    h1 = tg.Tensor(generator.standard_normal((2, 3)), requires_grad=True)
    h2 = tg.Tensor(generator.standard_normal((2, 3)), requires_grad=True)
    parameters = [U1, U2, h1, h2]
    for step in range(14):
        h1 = (h1 @ U1).tanh()
        if step < 9:
            h2 = (h2 @ U2 + h1).tanh()
    return (h1 * h1).sum() + (h2 * h2).sum(), parameters


@pytest.mark.parametrize("method", SCANS)
def test_another_chain_made_from_the_scanned_ones_tensors_is_walked_right(method):
    refusals = assert_walks_gradients(two_chains_one_reading_the_other, method)
    assert "another chain met before the scan is made from its tensors" in refusals


def nested_scans_whose_inner_carries_are_read():
    """A tg.scan inside a tg.scan's step, its last carry returned as the outer step's y:
    the walk meets an inner chain's top (declared, its segment not made yet) before the
    outer chain's scan, and the inner chain is made from the outer one's carries."""
    generator = np.random.default_rng(1)
    U = tg.Tensor(generator.standard_normal((3, 3)) * 0.5, requires_grad=True)
    V = tg.Tensor(generator.standard_normal((3, 3)) * 0.5, requires_grad=True)
    h0 = tg.Tensor(generator.standard_normal((2, 3)), requires_grad=True)
    xs = tg.Tensor(generator.standard_normal((8, 2, 3)))
    inner_xs = tg.Tensor(generator.standard_normal((3, 2, 3)))

    def inner(c, y):
        return (c @ V + y).tanh(), None

    def outer(h, x):
        c, _ = tg.scan(inner, h, inner_xs)
        h = (h @ U + x + c).tanh()
        return h, c

    h, ys = tg.scan(outer, h0, xs)
    return (h * h).sum() + (ys * ys).sum(), [U, V, h0]


@pytest.mark.parametrize("method", SCANS)
def test_a_declared_chain_met_before_a_scan_and_made_from_it_is_walked_right(method):
    refusals = assert_walks_gradients(nested_scans_whose_inner_carries_are_read, method)
    assert "another chain met before the scan is made from its tensors" in refusals


def _per_step_scales():
    generator = np.random.default_rng(2)
    U = tg.Tensor(generator.standard_normal((3, 3)) * 0.5, requires_grad=True)
    h0 = tg.Tensor(generator.standard_normal((2, 3)), requires_grad=True)
    scales = [tg.Tensor(generator.uniform(0.5, 1.5, 3), requires_grad=True) for _ in range(10)]
    h = h0
    for scale in scales:
        h = ((h @ U) * scale).tanh()
    return (h * h).sum(), [U, h0, *scales]


@pytest.mark.parametrize("method", SCANS)
def test_a_per_step_input_of_fewer_axes_than_the_chain_is_stacked_aligned_right(method):
    """Mul saves a (3,) scale per step beside a (2, 3) state: its stack (steps, 3) is
    aligned on the right, (steps, 1, 3), for the batched rule to broadcast as each step's."""
    assert assert_walks_gradients(_per_step_scales, method) == []
    loss, _ = _per_step_scales()
    spy = SpyScheduler(scan_scheduler(method))
    loss.backward(scheduler=spy)
    assert [len(segment.tensors) - 1 for segment in spy.graph.scanned_segments] == [10]


def _loop_chain():
    U = tg.Tensor(np.eye(3) * 0.5, requires_grad=True)
    h = tg.Tensor(np.ones((2, 3)), requires_grad=True)
    for _ in range(10):
        h = (h @ U).tanh()
    return h


def _declared_chain():
    U = tg.Tensor(np.eye(3) * 0.5, requires_grad=True)
    step = lambda h, x: ((h @ U + x).tanh(), None)  # noqa: E731
    init = tg.ones((2, 3), dtype=np.float64, requires_grad=True)
    h, _ = tg.scan(step, init, tg.ones((10, 2, 3), dtype=np.float64))
    return h


@pytest.mark.parametrize("chain", [_loop_chain, _declared_chain])
def test_a_chain_whose_saved_values_were_freed_raises_the_walks_error(chain):
    h = chain()
    h.sum().backward()  # (frees the saved values)
    scheduler = scan_scheduler("blelloch")
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        (h * 2.0).sum().backward(scheduler=scheduler)
    assert scheduler.refusals == ["a saved value was freed"]


class _SavesMoreWhenPositive(Op):
    """out = a**3;  da = g * 3 a**2;  J_a = diag(3 a**2) (saving a**2 as well for a
    positive a[0]: the steps of one template save different numbers of values)"""

    __slots__ = ()
    jacobian_kind = diagonal_kind
    jacobian = diagonal_from_vjp

    def forward(self, a):
        if a.flat[0] > 0:
            self.save_for_backward(a, a * a)
        else:
            self.save_for_backward(a)
        return a * a * a

    def backward(self, grad_output):
        a = self.saved_tensors[0]
        return (grad_output * 3 * a * a,)


def _alternating_saves():
    x = tg.Tensor(np.array([[0.6, -0.2, 0.3]]), requires_grad=True)
    h = x
    for step in range(10):
        h = _SavesMoreWhenPositive.apply(h * (1.0 if step % 2 else -1.0))
    return (h * h).sum(), [x]


@pytest.mark.parametrize("method", SCANS)
def test_steps_that_saved_different_numbers_of_values_are_walked(method):
    refusals = assert_walks_gradients(_alternating_saves, method)
    assert refusals == ["the steps saved different numbers of values"]
