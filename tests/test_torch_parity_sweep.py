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


# -- tg.compile: a value computed in Python from the step's numbers is refused at capture -------
# (a replay reused the first call's mask, order or index: from the second call on the results
# were silently those of the first batch's)

X = np.random.default_rng(0).standard_normal((4, 3))
TARGET = np.array([0, 2, 1, 0])
PROBABILITY = np.random.default_rng(1).uniform(0.1, 0.9, (4, 3))
FROZEN = {
    "where(x > 0)": (lambda x, t: tg.where(x > 0, x, 0.1 * x), TARGET),
    "masked_fill(x > 0)": (lambda x, t: x.masked_fill(x > 0, 0.0), TARGET),
    "x[t]": (lambda x, t: x[t], np.array([2, 0])),
    "x[t, 0]": (lambda x, t: x[t, 0], np.array([2, 0])),
    "gather": (lambda x, t: x.gather(1, t), np.array([[0], [2], [1], [1]])),
    "scatter": (lambda x, t: x.scatter(1, t, value=0.0), np.array([[0], [2], [1], [1]])),
    "one_hot": (lambda x, t: x * F.one_hot(t, 3), TARGET),
    "sort": (lambda x, t: x.sort(dim=1).values * 1.0, TARGET),
    "topk": (lambda x, t: x.topk(2).values * 1.0, TARGET),
    "repeat_interleave": (lambda x, t: x.repeat_interleave(t, dim=0), np.array([1, 0, 2, 1])),
    "nll_loss": (lambda x, t: F.nll_loss(x, t), TARGET),
    "cross_entropy smoothing": (lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), TARGET),
    "cross_entropy ignore": (lambda x, t: F.cross_entropy(x, t, ignore_index=1), TARGET),
    "bce_with_logits": (lambda x, t: F.binary_cross_entropy_with_logits(x, t), PROBABILITY),
    "huber_loss": (lambda x, t: F.huber_loss(x, t), PROBABILITY),
    "smooth_l1_loss": (lambda x, t: F.smooth_l1_loss(x, t), PROBABILITY),
    "std": (lambda x, t: x.std(axis=1), TARGET),
    "isnan": (lambda x, t: tg.where(x.isnan(), 0.0, x), TARGET),
    "isfinite": (lambda x, t: x * x.isfinite(), TARGET),
    "argmax": (lambda x, t: x.gather(1, x.argmax(1, keepdims=True)), TARGET),
    "max(dim=1)": (lambda x, t: x.max(dim=1).values * 1.0, TARGET),
    "all": (lambda x, t: x * x.all(), TARGET),
    "logsumexp": (lambda x, t: x.logsumexp(1), TARGET),
    "cummax": (lambda x, t: x.cummax(1).values * 1.0, TARGET),
}


@pytest.mark.parametrize("name", FROZEN)
def test_compile_refuses_a_value_read_that_a_replay_would_freeze(name):
    function, other = FROZEN[name]
    compiled = tg.compile(function)
    with pytest.raises(tg.CompileError, match="first call's"):
        compiled(tg.Tensor(X), tg.Tensor(other) if other.dtype.kind == "f" else other)


def test_compile_still_replays_masks_and_targets_given_as_arguments():
    def step(x, mask, target):
        return F.cross_entropy(tg.where(mask, x, 0.0), target) + x.masked_fill(mask, 1.0).sum()

    compiled = tg.compile(step)
    for seed in range(3):
        generator = np.random.default_rng(seed)
        x = generator.standard_normal((4, 3))
        mask = generator.uniform(size=(4, 3)) > 0.5
        target = generator.integers(0, 3, 4)
        expected = step(tg.Tensor(x), mask, target).item()
        assert compiled(tg.Tensor(x), mask, target).item() == expected


def test_compile_replays_kl_div_with_targets_that_change_where_they_are_zero():
    """kl_div's t log t is one op (xlogy), not a mask read from the first call's target."""

    def step(x, t):
        return F.kl_div(x, t, reduction="batchmean")

    compiled = tg.compile(step)
    for seed in range(3):
        generator = np.random.default_rng(seed)
        x = np.log(generator.uniform(0.1, 1.0, (4, 3)))
        t = generator.uniform(0.0, 1.0, (4, 3))
        t[seed, seed] = 0.0
        expected = step(tg.Tensor(x), tg.Tensor(t)).item()
        assert compiled(tg.Tensor(x), tg.Tensor(t)).item() == expected


@pytest.mark.parametrize(
    ("ours", "theirs", "low"),
    [(lambda x: x.mean(axis=1), lambda x: x.mean(1), 100),
     (lambda x: x.mean(), lambda x: x.mean(), 100),
     (lambda x: x.var(axis=1), lambda x: x.var(1, correction=0), 100),
     (lambda x: F.avg_pool2d(x.reshape(2, 1, 200, 200), 4),
      lambda x: torch_functional.avg_pool2d(x.reshape(2, 1, 200, 200), 4), 20000),
     (lambda x: F.avg_pool1d(x.reshape(2, 1, 40000), 8),
      lambda x: torch_functional.avg_pool1d(x.reshape(2, 1, 40000), 8), 20000)],
)  # fmt: skip
def test_float16_means_are_summed_in_float32_as_torch(ours, theirs, low):
    """float16 means and variances of 40,000 values near 150 (and windows of values near
    40,000): PyTorch sums in float32; a float16 sum overflowed to inf."""
    data = np.random.default_rng(0).uniform(low, 2 * low, (2, 40000)).astype(np.float16)
    x = tg.Tensor(data, requires_grad=True)
    xt = torch.tensor(data, requires_grad=True)
    out, expected = ours(x), theirs(xt)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=2e-3)
    upstream = np.ones(out.shape, np.float16)
    out.backward(upstream)
    expected.backward(torch.tensor(upstream))
    assert x.grad.dtype == np.float16
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-2, atol=1e-5)
