"""Edge cases of the nn ops: empty tensors, freed graphs, float16 overflow, the version
counters, and float16/float32 through create_graph."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)


@pytest.mark.parametrize("shape", [(0, 4), (3, 0), (2, 0, 3)])
def test_empty_inputs_match_torch(shape):
    cases = [
        (lambda x: F.softmax(x), lambda x: torch.softmax(x, -1)),
        (lambda x: F.log_softmax(x, 0), lambda x: torch.log_softmax(x, 0)),
        (lambda x: F.layer_norm(x, shape[-1:]), lambda x: TF.layer_norm(x, shape[-1:])),
        (lambda x: F.rms_norm(x, shape[-1:]), lambda x: TF.rms_norm(x, shape[-1:])),
    ]
    for ours, theirs in cases:
        x = tg.Tensor(np.zeros(shape), requires_grad=True)
        out = ours(x)
        expected = theirs(torch.zeros(shape, dtype=torch.float64))
        assert out.shape == tuple(expected.shape)
        out.backward(np.zeros(out.shape))
        assert x.grad.shape == shape


def test_cross_entropy_of_an_empty_batch_is_nan_as_in_torch():
    logits = tg.Tensor(np.zeros((0, 3)), requires_grad=True)
    loss = F.cross_entropy(logits, np.zeros(0, dtype=np.int64))
    assert np.isnan(loss.item())
    assert F.cross_entropy(logits, np.zeros(0, dtype=np.int64), "sum").item() == 0.0
    assert F.mse_loss(tg.zeros(0), tg.zeros(0)).numpy().dtype == np.float32


@pytest.mark.parametrize(
    "make",
    [
        lambda x: F.softmax(x),
        lambda x: F.log_softmax(x),
        lambda x: F.layer_norm(x, (3,)),
        lambda x: F.rms_norm(x, (3,)),
        lambda x: F.batch_norm(x, None, None, training=True),
        lambda x: F.cross_entropy(x, np.array([0, 2])),
        lambda x: F.mse_loss(x, tg.ones(2, 3, dtype=np.float64)),
        lambda x: F.gelu(x),
        lambda x: F.linear(x, tg.ones(4, 3, dtype=np.float64)),
    ],
)
def test_a_second_backward_through_freed_buffers_raises(make):
    x = tg.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    out = make(x)
    seed = np.ones(out.shape)
    out.backward(seed, retain_graph=True)
    out.backward(seed)  # retained: a second pass works and accumulates
    first = x.grad.numpy().copy()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        out.backward(seed)
    np.testing.assert_array_equal(x.grad.numpy(), first)


def test_an_input_modified_in_place_after_layer_norm_is_detected():
    x = tg.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    hidden = x * 1.0
    out = F.layer_norm(hidden, (3,))
    hidden.add_(1.0)
    with pytest.raises(RuntimeError, match="LayerNorm"):
        out.backward(np.ones((2, 3)))


def test_float16_overflowing_losses_are_inf_as_in_torch():
    logits = np.array([[6e4, -6e4, 0.0]], dtype=np.float16)
    ours = F.cross_entropy(tg.Tensor(logits), np.array([1]))
    theirs = TF.cross_entropy(torch.tensor(logits), torch.tensor([1]))
    assert ours.dtype == np.float16
    assert np.isinf(ours.item()) and np.isinf(theirs.item())  # noqa: PT018 (one fact)
    finite = F.cross_entropy(tg.Tensor(logits / 4), np.array([2]))
    assert finite.item() == pytest.approx(15000.0, rel=1e-3)


def test_float16_double_backward_through_softmax_and_layer_norm():
    x = tg.Tensor(np.linspace(-2, 2, 8).reshape(2, 4).astype(np.float16), requires_grad=True)
    for op in (lambda t: F.softmax(t), lambda t: F.layer_norm(t, (4,))):
        (grad,) = tg.grad((op(x) ** 3).sum(), [x], create_graph=True)
        assert grad.dtype == np.float16
        (second,) = tg.grad(grad.sum(), [x])
        assert second.dtype == np.float16
        assert np.all(np.isfinite(second.numpy()))


def test_cross_entropy_without_classes_is_a_clear_error():
    with pytest.raises(IndexError, match="out of bounds for 0 classes"):
        F.cross_entropy(tg.zeros(2, 0), np.array([0, 0]))


def test_float32_softmax_is_accurate_to_float32_precision():
    """float32 exponentials go through exp2 (see exp_of_shifted): still within a few ulps."""
    logits = np.random.default_rng(8).standard_normal((64, 100)) * 20
    logits32 = logits.astype(np.float32)
    exact = torch.softmax(torch.tensor(logits32.astype(np.float64)), -1).numpy()
    ours = F.softmax(tg.Tensor(logits32)).numpy()
    np.testing.assert_allclose(ours, exact, rtol=2e-5, atol=1e-7)
    big = exact > 1e-3  # the probabilities that matter: a few ulps
    np.testing.assert_allclose(ours[big], exact[big], rtol=1e-6)
    exact_log = torch.log_softmax(torch.tensor(logits32.astype(np.float64)), -1).numpy()
    np.testing.assert_allclose(
        F.log_softmax(tg.Tensor(logits32)).numpy(), exact_log, rtol=1e-6, atol=1e-6
    )
    target = np.arange(64) % 100
    loss = F.cross_entropy(tg.Tensor(logits32), target, reduction="none").numpy()
    np.testing.assert_allclose(loss, -exact_log[np.arange(64), target], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["layer_norm", "rms_norm"])
def test_norm_weight_gradient_of_a_1d_input_under_create_graph_matches_torch(name):
    """A 1-d input has no batch dims: the weight's gradient is summed over none (a Tensor's
    sum over () would reduce every dim, as PyTorch's dim=())."""
    values, weight, upstream = [1.0, 2.0, 4.0], [1.0, 2.0, 3.0], [1.0, -2.0, 3.0]
    ours_f, theirs_f = getattr(F, name), getattr(TF, name)
    x, w = (tg.Tensor(np.array(v), requires_grad=True) for v in (values, weight))
    torch_x, torch_w = (
        torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (values, weight)
    )
    out = (ours_f(x, (3,), w) * tg.Tensor(np.array(upstream))).sum()
    torch_out = (theirs_f(torch_x, (3,), torch_w) * torch.tensor(upstream).double()).sum()
    grads = tg.grad(out, [x, w], create_graph=True)
    torch_grads = torch.autograd.grad(torch_out, [torch_x, torch_w], create_graph=True)
    for ours, theirs in zip(grads, torch_grads, strict=True):
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10)
