"""F.max_unpool2d against torch (values and gradients, in float64) after max_pool2d's
indices, with output_size, unbatched, finite differences and the refusals."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)

RNG = np.random.default_rng(5)


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding", "output_size"),
    [
        ((2, 3, 6, 6), 2, None, 0, None),
        ((2, 3, 6, 7), 2, None, 0, (6, 7)),
        ((2, 3, 6, 7), 3, 2, 1, (6, 7)),
        ((2, 3, 6, 7), 2, None, 0, (2, 3, 6, 7)),
        ((2, 3, 6, 7), (2, 3), (2, 2), (1, 1), None),
        ((2, 3, 5, 5), 2, 1, 0, None),  # overlapping windows: an index may repeat
        ((3, 4, 4), 2, None, 0, None),  # unbatched
    ],
)
def test_max_unpool2d_against_torch(shape, kernel, stride, padding, output_size):
    x = RNG.standard_normal(shape)
    pooled, indices = TF.max_pool2d(torch.tensor(x), kernel, stride, padding, return_indices=True)
    ours_pooled, ours_indices = F.max_pool2d(
        tg.Tensor(x), kernel, stride, padding, return_indices=True
    )
    np.testing.assert_array_equal(ours_indices.numpy(), indices.numpy())
    theirs = pooled.clone().requires_grad_()
    ours = tg.Tensor(ours_pooled.numpy(), requires_grad=True)
    expected = TF.max_unpool2d(theirs, indices, kernel, stride, padding, output_size)
    out = F.max_unpool2d(ours, ours_indices, kernel, stride, padding, output_size)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    upstream = RNG.standard_normal(out.shape)
    expected.backward(torch.tensor(upstream))
    out.backward(upstream)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-12)


def test_max_unpool2d_finite_differences_and_a_pool_round_trip():
    x = tg.Tensor(RNG.standard_normal((1, 2, 4, 4)), requires_grad=True)
    pooled, indices = F.max_pool2d(x, 2, return_indices=True)
    values = tg.Tensor(pooled.numpy(), requires_grad=True)
    assert tg.gradcheck(lambda t: F.max_unpool2d(t, indices, 2), (values,))
    restored = F.max_unpool2d(pooled, indices, 2)
    kept = restored.numpy() != 0
    np.testing.assert_array_equal(restored.numpy()[kept], x.numpy()[kept])
    assert kept.sum() == pooled.numel()


def test_max_unpool2d_refusals():
    pooled, indices = F.max_pool2d(tg.randn(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(pooled, indices, 2, output_size=(7, 7))
    with pytest.raises(RuntimeError, match="invalid max index"):
        F.max_unpool2d(pooled, tg.tensor(indices.numpy() * 10), 2)
    with pytest.raises(RuntimeError, match="must have the input's shape"):
        F.max_unpool2d(pooled, tg.tensor(indices.numpy()[..., :1]), 2)
    with pytest.raises(TypeError, match="integers"):
        F.max_unpool2d(pooled, tg.Tensor(indices.numpy() + 0.5), 2)
