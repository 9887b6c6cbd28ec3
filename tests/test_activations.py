"""The fused activations (ops/activations.py: softmax, log_softmax, dropout, erf, gelu) against
PyTorch in float64: values and gradients, huge and masked logits, the saved output, dropout's
seeded mask, the numpy erf."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
from helpers import check_op

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)
from tinygrad_ops.ops import activations

SHAPES = [(5,), (3, 4), (2, 3, 4), (2, 1, 3, 2)]


@pytest.mark.parametrize(
    ("shape", "axis"),
    [(shape, axis) for shape in SHAPES + [(), (3, 3)] for axis in range(-1, len(shape))],
)
def test_softmax_and_log_softmax_match_torch(shape, axis):
    torch_axis = axis if shape else None
    check_op(lambda x: F.softmax(x, axis), lambda x: torch.softmax(x, torch_axis or 0), shape)
    check_op(
        lambda x: F.log_softmax(x, axis), lambda x: torch.log_softmax(x, torch_axis or 0), shape
    )


def run_both(ours, theirs, logits, upstream, dtype):
    """ours(x) in `dtype` and theirs(x, -1) in float64 on `logits`, each backward with
    `upstream`: (our input, our output, torch's input, torch's output)."""
    x = tg.Tensor(logits.astype(dtype), requires_grad=True)
    out = ours(x)
    out.backward(upstream.astype(dtype))
    reference = torch.tensor(logits, requires_grad=True)
    expected = theirs(reference, -1)
    expected.backward(torch.tensor(upstream))
    return x, out, reference, expected


def test_softmax_of_huge_logits_and_masks():
    logits = np.array([[1e30, -1e30, 0.0], [0.0, -np.inf, 1.0], [-np.inf, 5.0, -np.inf]])
    upstream = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [-1.0, 4.0, 2.0]])
    for dtype in (np.float32, np.float64):
        x, out, theirs, expected = run_both(F.softmax, torch.softmax, logits, upstream, dtype)
        assert np.all(np.isfinite(out.numpy()))
        assert np.all(np.isfinite(x.grad.numpy()))
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-7)
        np.testing.assert_allclose(x.grad.numpy(), theirs.grad.numpy(), atol=1e-6)
        assert out.numpy()[1, 1] == 0
        assert x.grad.numpy()[1, 1] == 0
        x, log_out, theirs, expected = run_both(
            F.log_softmax, torch.log_softmax, logits, upstream, dtype
        )
        np.testing.assert_allclose(log_out.numpy(), expected.detach().numpy(), rtol=1e-6)
        assert np.all(np.isfinite(x.grad.numpy()))
        np.testing.assert_allclose(x.grad.numpy(), theirs.grad.numpy(), atol=1e-6)


def test_softmax_of_a_row_of_only_minus_inf_is_nan_as_in_torch():
    x = tg.Tensor([[-np.inf, -np.inf], [0.0, 1.0]], requires_grad=True)
    out = F.softmax(x)
    out.backward(np.ones((2, 2), dtype=np.float32))
    assert np.all(np.isnan(out.numpy()[0]))
    assert np.all(np.isfinite(out.numpy()[1]))
    assert np.all(np.isnan(x.grad.numpy()[0]))
    assert np.all(np.isfinite(x.grad.numpy()[1]))
    assert np.all(np.isnan(F.log_softmax(x).numpy()[0]))


def test_backward_uses_the_saved_output_not_a_recomputation():
    x = tg.Tensor([[0.0, 1.0, 2.0]], requires_grad=True)
    out = F.softmax(x)
    node = out.grad_fn
    assert len(node.saved) == 1
    assert node.saved[0] is out.data
    x.data[...] = 100.0  # a recomputation from x would now give other numbers
    out.backward(np.array([[1.0, 0.0, 0.0]], dtype=np.float32))
    y = torch.softmax(torch.tensor([[0.0, 1.0, 2.0]]), -1)[0].numpy()
    np.testing.assert_allclose(x.grad.numpy()[0], y[0] * (np.eye(3)[0] - y), rtol=1e-6)


def test_dropout_is_seeded_scaled_and_its_gradient_uses_the_same_mask():
    x = tg.Tensor(np.ones((50, 40)), requires_grad=True)
    first = F.dropout(x, 0.25, seed=3)
    second = F.dropout(x, 0.25, generator=np.random.default_rng(3))
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    assert set(np.unique(first.numpy())) == {0.0, 1.0 / 0.75}
    assert abs((first.numpy() == 0).mean() - 0.25) < 0.03
    first.backward(np.full(x.shape, 2.0))
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * first.numpy())
    assert F.dropout(x, 0.5, training=False) is x
    assert not np.any(F.dropout(x, 1.0).numpy())


def test_numpy_erf_fallback_is_accurate():
    points = np.concatenate([np.linspace(-7, 7, 2001), [0.0, 1e-300, 2.9999999, 3.0, 30.0]])
    exact = np.array([math.erf(value) for value in points])
    np.testing.assert_allclose(activations.erf_numpy(points), exact, rtol=2e-15, atol=2e-15)
    assert np.isnan(activations.erf_numpy(np.array([np.nan]))[0])


def test_gelu_with_the_numpy_erf_matches_torch(monkeypatch):
    monkeypatch.setattr(activations, "_scipy_erf", None)
    check_op(F.gelu, TF.gelu, (5, 4))


def test_importing_the_engine_imports_no_scipy_until_the_first_erf():
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, tinygrad_ops as tg; before = 'scipy' in sys.modules; "
        "tg.Tensor([0.5]).erf(); print(before)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"  # scipy (0.4 s to import) waits for an erf
