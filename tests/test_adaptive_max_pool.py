"""F.adaptive_max_pool2d and nn.AdaptiveMaxPool2d against torch in float64: values, indices
and the gradient (to each bin's first maximum), even and uneven bins, ties, NaN."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)

RNG = np.random.default_rng(9)


@pytest.mark.parametrize(
    ("shape", "size"),
    [((2, 3, 8, 8), 4), ((2, 3, 7, 5), (3, 2)), ((2, 3, 5, 7), (5, 7)), ((3, 4, 6), (4, None)),
     ((1, 2, 3, 3), 1), ((1, 1, 2, 3), (4, 5))],
)  # fmt: skip
@pytest.mark.parametrize("ties", [False, True])
def test_adaptive_max_pool2d_against_torch(shape, size, ties):
    x = RNG.standard_normal(shape)
    if ties:
        x = np.round(x)
    ours, theirs = tg.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, indices = F.adaptive_max_pool2d(ours, size, return_indices=True)
    expected, expected_indices = TF.adaptive_max_pool2d(theirs, size, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    upstream = RNG.standard_normal(out.shape)
    out.backward(upstream)
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-12)


def test_adaptive_max_pool2d_nan_wins_and_the_layer():
    x = RNG.standard_normal((1, 1, 4, 4))
    x[0, 0, 1, 2] = np.nan
    out = F.adaptive_max_pool2d(tg.Tensor(x), 2)
    expected = TF.adaptive_max_pool2d(torch.tensor(x), 2)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    layer = tg.nn.AdaptiveMaxPool2d((1, 1))
    assert layer(tg.ones(2, 3, 5, 5)).shape == (2, 3, 1, 1)
    assert repr(layer) == repr(torch.nn.AdaptiveMaxPool2d((1, 1)))
    with pytest.raises(ValueError, match="adaptive_max_pool2d: output_size"):
        F.adaptive_max_pool2d(tg.ones(1, 1, 4, 4), 0)
