"""kthvalue, median, mode, quantile, count_nonzero and aminmax against torch in float64:
values, indices and the gradient (to the elements picked), along every dim, with keepdim,
ties, NaN, 0-d and every quantile interpolation."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg

RNG = np.random.default_rng(4)
X = RNG.standard_normal((3, 5, 4))
TIED = np.round(X * 2) / 2
WITH_NAN = X.copy()
WITH_NAN[0, 1, 2] = WITH_NAN[2, 3, 0] = np.nan


def compare(ours, theirs, values):
    """Values (and indices) equal, and the gradient of a random weighting of the values."""
    mine, reference = (
        tg.Tensor(values, requires_grad=True),
        torch.tensor(values, requires_grad=True),
    )
    out, expected = ours(mine), theirs(reference)
    if isinstance(expected, tuple):
        np.testing.assert_array_equal(out[1].numpy(), expected[1].numpy())
        out, expected = out[0], expected[0]
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    upstream = RNG.standard_normal(out.shape)
    out.backward(upstream)
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), atol=1e-12)


DIMS = [pytest.param(dim, keepdim, id=f"dim{dim}-keep{keepdim}")
        for dim in (0, 1, -1) for keepdim in (False, True)]  # fmt: skip


@pytest.mark.parametrize(("dim", "keepdim"), DIMS)
def test_kthvalue_median_mode_aminmax(dim, keepdim):
    for k in (1, 2, 3):
        compare(
            lambda t, k=k: t.kthvalue(k, dim, keepdim),
            lambda t, k=k: t.kthvalue(k, dim, keepdim),
            X,
        )
    compare(lambda t: t.median(dim, keepdim), lambda t: t.median(dim, keepdim), X)
    compare(lambda t: t.mode(dim, keepdim), lambda t: t.mode(dim, keepdim), TIED)
    for part in (0, 1):
        compare(
            lambda t, part=part: t.aminmax(dim=dim, keepdim=keepdim)[part],
            lambda t, part=part: t.aminmax(dim=dim, keepdim=keepdim)[part],
            TIED,
        )


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize(("dim", "keepdim"), [(1, False), (-1, True), (None, False), (None, True)])
def test_quantile(interpolation, dim, keepdim):
    for q in (0.3, 0.5, [0.0, 0.25, 0.9, 1.0]):
        ours_q = q if isinstance(q, float) else tg.Tensor(np.array(q))
        their_q = q if isinstance(q, float) else torch.tensor(q, dtype=torch.float64)
        compare(
            lambda t, q=ours_q: t.quantile(q, dim, keepdim, interpolation=interpolation),
            lambda t, q=their_q: t.quantile(q, dim, keepdim, interpolation=interpolation),
            X,
        )


def test_whole_tensor_and_nan_and_0d():
    compare(lambda t: t.median(), lambda t: t.median(), X)
    compare(lambda t: t.median(), lambda t: t.median(), X[:, :2, :2])  # even: the lower one
    compare(lambda t: t.median(1), lambda t: t.median(1), WITH_NAN)  # NaN where present
    compare(lambda t: t.kthvalue(5, 1), lambda t: t.kthvalue(5, 1), WITH_NAN)
    compare(lambda t: t.quantile(0.5, 1), lambda t: t.quantile(0.5, 1), WITH_NAN)
    compare(lambda t: t.aminmax()[0], lambda t: t.aminmax()[0], TIED)
    for name in ("median", "kthvalue", "mode"):
        arguments = (1,) if name == "kthvalue" else ()
        out = getattr(tg.Tensor(2.5), name)(*arguments)
        out = out if name == "median" else out.values
        assert out.shape == ()
        assert out.item() == 2.5


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2)])
def test_count_nonzero(dim):
    ours = tg.Tensor(TIED).count_nonzero(dim)
    theirs = torch.tensor(TIED).count_nonzero(dim)
    assert ours.dtype == np.int64
    assert ours.tolist() == theirs.tolist()


def test_refusals():
    with pytest.raises(RuntimeError, match="out of range"):
        tg.Tensor(X).kthvalue(6, 1)
    with pytest.raises(RuntimeError, match=r"in \[0, 1\]"):
        tg.Tensor(X).quantile(1.5)
    with pytest.raises(RuntimeError, match="interpolation"):
        tg.Tensor(X).quantile(0.5, interpolation="cubic")
    with pytest.raises(TypeError, match="floating-point"):
        tg.tensor([1, 2]).quantile(0.5)
