"""A PyTorch user's first-day idioms, swept against torch (float64 and float32): each case
here was a silently wrong number (or a lost gradient) before its fix."""

import numpy as np
import pytest
import torch
import torch.nn.functional as torch_functional
from helpers import check_op

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)


@pytest.mark.parametrize(
    ("shape", "dims"),
    [((2, 3), (0, 1)), ((2, 3), (0, -1)), ((2, 3), (-2, -1)), ((2, 3, 4), (0, 2)),
     ((2, 3, 4), (1, -1)), ((2, 3), (1, 1)), ((), (0, -1))],
)  # fmt: skip
def test_transpose_of_two_dims_swaps_them_as_torch(shape, dims):
    """x.transpose(0, 1) on a matrix is its transpose (numpy's rule read it as the identity
    permutation and returned x unchanged)."""
    check_op(lambda x: x.transpose(*dims), lambda x: x.transpose(*dims), shape)


def test_permute_keeps_the_permutation_rule():
    check_op(lambda x: x.permute(0, 1), lambda x: x.permute(0, 1), (2, 3))
    check_op(lambda x: x.transpose(2, 0, 1), lambda x: x.permute(2, 0, 1), (2, 3, 4))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    ("shape", "options"),
    [((1, 2, 3, 3), {"kernel_size": 2, "padding": 1}),
     ((1, 1, 3, 4), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
     ((2, 1, 5), {"kernel_size": 2, "padding": 1})],
)  # fmt: skip
def test_max_pool_of_a_window_of_minus_infinities_as_torch(shape, options, dtype):
    """A window of -infs (a masked input): the gradient and the index go to its first
    in-bounds element, as PyTorch's (they went to a pad: the gradient was lost)."""
    data = np.full(shape, -np.inf, dtype)
    data.reshape(-1)[::3] = np.arange(data.size)[::3]  # some windows have a finite maximum
    pool, torch_pool = (
        (F.max_pool1d, torch_functional.max_pool1d)
        if len(shape) == 3
        else (F.max_pool2d, torch_functional.max_pool2d)
    )
    x = tg.Tensor(data, requires_grad=True)
    xt = torch.tensor(data, requires_grad=True)
    out, indices = pool(x, **options, return_indices=True)
    out_t, indices_t = torch_pool(xt, **options, return_indices=True)
    upstream = np.random.default_rng(0).standard_normal(out.shape).astype(dtype)
    out.backward(upstream)
    out_t.backward(torch.tensor(upstream))
    np.testing.assert_array_equal(out.numpy(), out_t.detach().numpy())
    np.testing.assert_array_equal(indices.numpy(), indices_t.numpy())
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_binary_cross_entropy_at_saturated_probabilities_as_torch(dtype):
    """p exactly 0 or 1 (a saturated sigmoid): each log clamped at -100, as PyTorch (float32
    gave 99.983, float16 inf and NaN)."""
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.5, 0.25], dtype)
    t = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.0], dtype)
    ours = F.binary_cross_entropy(tg.Tensor(p), tg.Tensor(t), reduction="none")
    theirs = torch_functional.binary_cross_entropy(
        torch.tensor(p), torch.tensor(t), reduction="none"
    )
    assert ours.dtype == dtype
    np.testing.assert_allclose(
        ours.numpy(), theirs.numpy(), rtol=1e-3 if dtype == np.float16 else 1e-6
    )
    check_op(
        lambda a, b: F.binary_cross_entropy(a, b),
        lambda a, b: torch_functional.binary_cross_entropy(a, b),
        np.array([0.1, 0.9, 0.3]),
        np.array([0.0, 1.0, 0.4]),
    )
