"""The speed paths of the engine and the fused ops give the same numbers as the general ones.

Each fast path (2-D `linear` without reshapes, the BLAS bias gradient, cross-entropy's
flat target positions, the cached vectors of ones, the walk's queueing) is checked here
against PyTorch in float64 or against the general path it short-cuts.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the usual names)

import tinygrad_ops as tg
import tinygrad_ops.functional as F  # noqa: N812
from tinygrad_ops.ops import kernels
from tinygrad_ops.ops.base import Op


def _pair(array, requires_grad=True):
    return tg.Tensor(array, requires_grad=requires_grad), torch.tensor(
        array, requires_grad=requires_grad
    )


@pytest.mark.parametrize("reduce_to_scalar", ["sum", "weighted"])
@pytest.mark.parametrize("x_needs_grad", [True, False])
def test_linear_2d_gradients_match_torch(reduce_to_scalar, x_needs_grad):
    generator = np.random.default_rng(0)
    x, tx = _pair(generator.standard_normal((6, 5)), x_needs_grad)
    w, tw = _pair(generator.standard_normal((3, 5)))
    b, tb = _pair(generator.standard_normal(3))
    out, tout = F.linear(x, w, b), TF.linear(tx, tw, tb)
    if reduce_to_scalar == "sum":  # the upstream gradient is a broadcast view of the seed
        out.sum().backward()
        tout.sum().backward()
    else:
        weights = generator.standard_normal((6, 3))
        (out * tg.Tensor(weights)).sum().backward()
        (tout * torch.tensor(weights)).sum().backward()
    for ours, theirs in ((w, tw), (b, tb)) + (((x, tx),) if x_needs_grad else ()):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
    if not x_needs_grad:
        assert x.grad is None


def test_linear_float16_bias_gradient_is_summed_in_float16_like_the_general_path():
    generator = np.random.default_rng(1)
    x = tg.Tensor(generator.standard_normal((4, 3)).astype(np.float16))
    w = tg.Tensor(generator.standard_normal((2, 3)).astype(np.float16), requires_grad=True)
    b = tg.Tensor(np.zeros(2, np.float16), requires_grad=True)
    upstream = generator.standard_normal((4, 2)).astype(np.float16)
    (F.linear(x, w, b) * tg.Tensor(upstream)).sum().backward()
    assert b.grad.dtype == np.float16
    assert w.grad.dtype == np.float16
    np.testing.assert_allclose(b.grad.numpy(), upstream.astype(np.float32).sum(0), rtol=2e-3)


def test_linear_bias_gradient_of_a_non_contiguous_upstream_gradient():
    # transpose() makes the gradient reaching linear a non-contiguous view.
    generator = np.random.default_rng(2)
    x, tx = _pair(generator.standard_normal((5, 4)))
    w, tw = _pair(generator.standard_normal((3, 4)))
    b, tb = _pair(generator.standard_normal(3))
    weights = generator.standard_normal((3, 5))
    (F.linear(x, w, b).transpose() * tg.Tensor(weights)).sum().backward()
    (TF.linear(tx, tw, tb).T * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "target_dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64]
)
def test_cross_entropy_positions_for_every_integer_target_dtype(target_dtype):
    generator = np.random.default_rng(3)
    logits, tlogits = _pair(generator.standard_normal((7, 5)))
    target = generator.integers(0, 5, 7).astype(target_dtype)
    loss = F.cross_entropy(logits, target)
    tloss = TF.cross_entropy(tlogits, torch.tensor(target.astype(np.int64)))
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-12)
    np.testing.assert_allclose(logits.grad.numpy(), tlogits.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("bad", [-1, 5, 127])
def test_cross_entropy_rejects_out_of_range_targets_of_small_dtypes(bad):
    target = np.array([0, bad, 1], dtype=np.int8)
    with pytest.raises(IndexError, match=f"target {bad} is out of bounds for 5 classes"):
        F.cross_entropy(tg.ones(3, 5), target)


def test_cross_entropy_on_a_non_contiguous_logits_view():
    generator = np.random.default_rng(4)
    base, tbase = _pair(generator.standard_normal((5, 6)))
    target = generator.integers(0, 5, 6)
    loss = F.cross_entropy(base.transpose(), target, reduction="sum")
    tloss = TF.cross_entropy(tbase.T, torch.tensor(target), reduction="sum")
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-12)
    np.testing.assert_allclose(base.grad.numpy(), tbase.grad.numpy(), rtol=1e-12)


def test_cross_entropy_large_rows_take_the_exp2_route_and_match_torch():
    generator = np.random.default_rng(5)
    rows = np.random.default_rng(6).standard_normal((8, kernels._EXP2_FROM // 4))
    logits, tlogits = _pair(rows.astype(np.float32))
    target = generator.integers(0, rows.shape[1], 8)
    loss = F.cross_entropy(logits, target)
    tloss = TF.cross_entropy(tlogits, torch.tensor(target))
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-6)
    np.testing.assert_allclose(logits.grad.numpy(), tlogits.grad.numpy(), atol=1e-9, rtol=1e-4)


def test_cached_ones_are_read_only_and_large_vectors_are_not_cached():
    small = kernels.ones_vector(8, np.dtype(np.float32))
    assert small is kernels.ones_vector(8, np.dtype(np.float32))
    assert not small.flags.writeable
    with pytest.raises(ValueError):
        small[0] = 2
    large = kernels.ones_vector(70000, np.dtype(np.float64))
    assert large is not kernels.ones_vector(70000, np.dtype(np.float64))
    matrix = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(kernels.column_sum(matrix), matrix.sum(axis=0))
    np.testing.assert_array_equal(kernels.row_sum(matrix), matrix.sum(axis=1, keepdims=True))


def test_walk_queues_a_parent_used_twice_by_a_hooked_tensor_once():
    # A tensor with a hook takes the walk's general path; its node reads x twice (x * x),
    # and x must still be visited exactly once, with both contributions.
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    seen = []
    y.register_hook(lambda grad: seen.append(grad.numpy().copy()))
    calls = []
    x.register_hook(lambda grad: calls.append(grad.numpy().copy()))
    (y * 3).sum().backward()
    assert len(seen) == 1
    assert len(calls) == 1
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 12.0])


def test_op_results_have_every_tensor_slot_set():
    # Op.apply builds its result with Tensor._make, the fast constructor: no slot unset.
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    for result in (x * 2, (x * 2).detach(), tg.Tensor([3.0])):
        for slot in tg.Tensor.__slots__:
            if slot != "__weakref__":
                getattr(result, slot)  # AttributeError if apply forgot one
    assert (x * 2)._version[0] == 0


def test_cross_entropy_gradient_with_retain_graph_is_the_same_twice():
    # The backward reads the saved exponentials and totals without writing into them.
    generator = np.random.default_rng(8)
    logits = tg.Tensor(generator.standard_normal((4, 3)), requires_grad=True)
    loss = F.cross_entropy(logits, np.array([0, 2, 1, 2]), reduction="none")
    weights = tg.Tensor(generator.standard_normal(4))
    total = (loss * weights).sum()
    total.backward(retain_graph=True)
    first = logits.grad.numpy().copy()
    logits.grad = None
    total.backward()
    np.testing.assert_array_equal(logits.grad.numpy(), first)


def test_cached_row_starts_are_read_only():
    starts = kernels.row_starts(3, 5)
    np.testing.assert_array_equal(starts, [0, 5, 10])
    assert starts is kernels.row_starts(3, 5)
    assert not starts.flags.writeable


def test_a_view_op_that_saves_its_output_records_the_shared_version():
    # A view's output shares its base's version counter, which may be past 0 already:
    # the version recorded for the saved output must be the counter's current value.
    from tinygrad_ops.autograd import Op

    class DoubleView(Op):
        """out = a.reshape(-1) (a view); da = 2 g, in the shape of the saved output's base"""

        __slots__ = ()
        is_view = True

        def forward(self, a):
            out = a.reshape(-1)
            self.save_for_backward(out)
            return out

        def backward(self, grad_output):
            (out,) = self.saved_tensors  # the version check runs here
            return ((2 * grad_output).reshape(out.base.shape),)

    x = tg.Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    y.add_(1)  # y's counter is now 1
    assert y._version[0] == 1
    DoubleView.apply(y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 2.0))


class _TwiceTheSameArray(Op):
    """A broken rule: one fresh array for both inputs, yet fresh_gradients = True."""

    def forward(self, a, b):
        return a + b

    def backward(self, grad_output):
        gradient = grad_output * 1.0
        return gradient, gradient


def test_the_suite_catches_an_op_that_breaks_its_fresh_gradients_promise():
    """tests/conftest.py checks every rule the suite runs: two leaves owning one array would
    add into each other's .grad (a silently wrong number)."""
    a = tg.Tensor([1.0, 2.0], requires_grad=True)
    b = tg.Tensor([3.0, 4.0], requires_grad=True)
    with pytest.raises(AssertionError, match="one array for two inputs"):
        _TwiceTheSameArray.apply(a, b).sum().backward()
