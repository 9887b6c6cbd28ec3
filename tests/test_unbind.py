"""ops/unbind.py: the rows of a tensor (what tg.scan hands its steps) against torch.unbind,
float64 and float32, their backward one stack of the rows' gradients (no per-row scatter
into an array of the whole size), exact after a pass that never reached the hub, and
differentiable again (create_graph)."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg
from tinygrad_ops.ops import GetItem, Unbind
from tinygrad_ops.ops.unbind import rows, source_gradient

torch.set_num_threads(1)


def weighted_loss(pieces, used):
    """sum over the used rows of (t + 1) * sum(row_t^2): every row its own gradient."""
    total = 0
    for index in used:
        total = total + ((pieces[index] * pieces[index]).sum() * (index + 1))
    return total


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    ("shape", "used"),
    [((5, 3), [0, 1, 2, 3, 4]), ((6, 2, 3), [1, 4]), ((4,), [3]), ((1, 2), [0]), ((3, 2), [])],
)
def test_rows_are_torchs_unbind(shape, used, dtype):
    values = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    ours = tg.Tensor(values, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    ours_rows, theirs_rows = rows(ours), torch.unbind(theirs)
    for mine, reference in zip(ours_rows, theirs_rows, strict=True):
        np.testing.assert_array_equal(mine.numpy(), reference.detach().numpy())
    loss, expected = weighted_loss(ours_rows, used), weighted_loss(theirs_rows, used)
    if not used:  # (no row is used: add one, with no gradient to the rows)
        loss, expected = ours.sum() * 0, theirs.sum() * 0
    loss.backward()
    expected.backward()
    assert ours.grad.dtype == dtype
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)


def test_the_backward_is_one_stack_not_a_scatter_per_row(monkeypatch):
    calls = {"GetItem": 0, "Unbind": 0}
    for op_class in (GetItem, Unbind):
        original = op_class.backward

        def counting(self, grad_output, original=original, name=op_class.__name__):
            calls[name] += 1
            return original(self, grad_output)

        monkeypatch.setattr(op_class, "backward", counting)
    a = tg.Tensor(np.ones((64, 3)), requires_grad=True)
    weighted_loss(rows(a), range(64)).backward()
    assert calls == {"GetItem": 0, "Unbind": 1}
    np.testing.assert_array_equal(a.grad.numpy(), 2 * np.arange(1, 65)[:, None] * np.ones(3))


def test_a_pass_that_never_reached_the_hub_leaves_nothing_behind():
    # tg.grad with a row as the input runs that row's rule, but not the hub's: the next
    # backward still gives exactly its own gradients (the hub counts the rows of a pass).
    a = tg.Tensor(np.arange(8.0).reshape(4, 2), requires_grad=True)
    pieces = rows(a)
    loss = (pieces[1] * pieces[1]).sum() + (pieces[3] * 2).sum()
    (row_grad,) = tg.grad(loss, [pieces[1]], retain_graph=True)
    np.testing.assert_array_equal(row_grad.numpy(), 2 * a.numpy()[1])
    loss.backward()
    expected = np.zeros((4, 2))
    expected[1] = 2 * a.numpy()[1]
    expected[3] = 2
    np.testing.assert_array_equal(a.grad.numpy(), expected)


def test_rows_are_differentiable_twice():
    values = np.random.default_rng(1).standard_normal((5, 3))
    ours = tg.Tensor(values, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    for tensor, split in ((ours, rows), (theirs, torch.unbind)):
        pieces = split(tensor)
        loss = weighted_loss(pieces, [0, 2, 4]) * pieces[1].sum()
        if tensor is ours:
            (grad,) = tg.grad(loss, [tensor], create_graph=True)
        else:
            (grad,) = torch.autograd.grad(loss, [tensor], create_graph=True)
        (grad * grad).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)


def test_source_gradient_sends_consecutive_rows_at_once():
    a = tg.Tensor(np.zeros((5, 2)), requires_grad=True)
    pieces = rows(a)
    grads = np.arange(6.0).reshape(3, 2)
    source, whole = source_gradient(pieces[1:4], grads)
    assert source is a
    expected = np.zeros((5, 2))
    expected[1:4] = grads
    np.testing.assert_array_equal(whole, expected)
    source, whole = source_gradient(pieces, np.ones((5, 2)))
    np.testing.assert_array_equal(whole, np.ones((5, 2)))
    # A reverse scan's: the rows from the last down.
    source, whole = source_gradient(pieces[3::-1], grads[[0, 1, 2, 2]])
    np.testing.assert_array_equal(whole[:4], grads[[2, 2, 1, 0]])
    # Rows out of order, or not rows of one split: one send per tensor instead.
    assert source_gradient([pieces[0], pieces[2]], grads[:2]) is None
    assert source_gradient(pieces[:2] + rows(a)[2:3], grads) is None
    assert source_gradient([a[0], a[1]], np.ones((2, 2))) is None
