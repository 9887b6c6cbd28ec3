"""scatter_reduce and scatter(reduce=) against torch (float64 values and gradients, integer
inputs, ties, zeros in a product) and central finite differences."""

import warnings

import numpy as np
import pytest
import torch
from helpers import check_op

import tinygrad_ops as tg

RNG = np.random.default_rng(3)
REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]
# (input shape, src shape, dim, index): the index smaller than the input in the other dims.
LAYOUTS = [
    ((4, 5), (3, 5), 0, RNG.integers(0, 4, size=(3, 5))),
    ((4, 5), (3, 2), 1, RNG.integers(0, 5, size=(3, 2))),
    ((3, 4, 2), (3, 2, 2), 1, RNG.integers(0, 4, size=(3, 2, 2))),
    ((6,), (9,), 0, RNG.integers(0, 6, size=9)),
    ((), (), 0, np.array(0)),
]


def with_ties_and_zeros(array, reduce):
    if reduce in ("amax", "amin"):
        return np.round(array)  # equal values: the gradient is shared among ties
    if reduce == "prod" and array.size > 3:
        array = array.copy()
        array.flat[0] = array.flat[3] = 0.0  # one 0 or two at a position
    return array


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
def test_scatter_reduce_against_torch(reduce, include_self, layout):
    input_shape, src_shape, dim, index = LAYOUTS[layout]
    x = with_ties_and_zeros(RNG.standard_normal(input_shape), reduce)
    src = with_ties_and_zeros(RNG.standard_normal(src_shape), reduce)
    check_op(
        lambda a, s: a.scatter_reduce(dim, tg.tensor(index), s, reduce, include_self=include_self),
        lambda a, s: a.scatter_reduce(
            dim, torch.tensor(index), s, reduce, include_self=include_self
        ),
        x,
        src,
        atol=1e-12,
    )


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_integers(reduce, include_self):
    x, src = np.arange(-3, 9).reshape(3, 4), RNG.integers(-5, 9, size=(2, 4))
    index = RNG.integers(0, 3, size=(2, 4))
    ours = tg.scatter_reduce(
        tg.tensor(x), 0, tg.tensor(index), tg.tensor(src), reduce, include_self=include_self
    )
    theirs = torch.tensor(x).scatter_reduce(
        0, torch.tensor(index), torch.tensor(src), reduce, include_self=include_self
    )
    assert ours.dtype == np.int64
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_finite_differences(reduce):
    x = tg.Tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    src = tg.Tensor(RNG.standard_normal((4, 4)), requires_grad=True)
    index = tg.tensor(RNG.integers(0, 3, size=(4, 4)))
    for include_self in (True, False):
        assert tg.gradcheck(
            lambda a, s, own=include_self: a.scatter_reduce(0, index, s, reduce, include_self=own),
            (x, src),
        )


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax"])
def test_scatter_reduce_second_order(reduce):
    """The weights are constants (piecewise, for amax), so the second derivative is right."""
    values = RNG.standard_normal((3, 4))
    index = RNG.integers(0, 3, size=(2, 4))
    src_values = RNG.standard_normal((2, 4))

    def run(module, x, src, index):
        out = x.scatter_reduce(0, index, src, reduce) ** 3
        return out.sum()

    x, src = tg.Tensor(values, requires_grad=True), tg.Tensor(src_values, requires_grad=True)
    grads = tg.grad(run(tg, x, src, tg.tensor(index)), [x, src], create_graph=True)
    second = tg.grad(sum((g * g).sum() for g in grads), [x, src])
    tx = torch.tensor(values, requires_grad=True)
    ts = torch.tensor(src_values, requires_grad=True)
    their_grads = torch.autograd.grad(
        run(torch, tx, ts, torch.tensor(index)), [tx, ts], create_graph=True
    )
    their_second = torch.autograd.grad(sum((g * g).sum() for g in their_grads), [tx, ts])
    for mine, reference in zip(second, their_second, strict=True):
        np.testing.assert_allclose(mine.numpy(), reference.numpy(), atol=1e-12)


def test_scatter_reduce_prod_second_order_is_refused():
    x = tg.Tensor(RNG.standard_normal(3), requires_grad=True)
    src = tg.Tensor(np.array([2.0, 3.0]))
    out = x.scatter_reduce(0, tg.tensor([0, 0]), src, "prod").sum()
    with pytest.raises(NotImplementedError, match="second derivative"):
        tg.grad(out, [x], create_graph=True)
    (grad,) = tg.grad(out, [x])
    np.testing.assert_allclose(grad.numpy(), [6.0, 1.0, 1.0])


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_with_reduce_against_torch(reduce):
    x, src = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 4))
    index = RNG.integers(0, 3, size=(2, 4))
    ours = tg.Tensor(x).scatter(0, tg.tensor(index), tg.Tensor(src), reduce=reduce)
    with warnings.catch_warnings():  # (torch deprecates reduce= with a tensor src, once)
        warnings.simplefilter("ignore", UserWarning)
        theirs = torch.tensor(x).scatter(0, torch.tensor(index), torch.tensor(src), reduce=reduce)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)
    ours = tg.scatter(tg.Tensor(x), 0, tg.tensor(index), value=1.5, reduce=reduce)
    theirs = torch.tensor(x).scatter(0, torch.tensor(index), 1.5, reduce=reduce)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)


def test_scatter_with_reduce_has_scatter_reduces_gradient():
    x = tg.Tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    src = tg.Tensor(RNG.standard_normal((2, 4)), requires_grad=True)
    index = tg.tensor(RNG.integers(0, 3, size=(2, 4)))
    assert tg.gradcheck(lambda a, s: a.scatter(0, index, s, reduce="multiply"), (x, src))


def test_scatter_reduce_refusals():
    x = tg.zeros(3)
    with pytest.raises(RuntimeError, match="sum, prod, mean, amax or amin"):
        x.scatter_reduce(0, tg.tensor([0]), tg.ones(1), "max")
    with pytest.raises(RuntimeError, match="dtype"):
        x.scatter_reduce(0, tg.tensor([0]), tg.ones(1, dtype=np.float64), "sum")
    with pytest.raises(IndexError, match="out of bounds"):
        x.scatter_reduce(0, tg.tensor([3]), tg.ones(1), "sum")
    with pytest.raises(TypeError, match="src must be a Tensor"):
        x.scatter_reduce(0, tg.tensor([0]), 1.0, "sum")
    with pytest.raises(RuntimeError, match="add or multiply"):
        x.scatter(0, tg.tensor([0]), tg.ones(1), reduce="sum")
