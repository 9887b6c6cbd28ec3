"""The naive reference kernels against PyTorch (float64) and against the engine.

Each case runs the same seeded inputs through `tinygrad_ops.reference` (loops), PyTorch
and our Tensor ops, and compares the outputs and every input's gradient for a random
upstream gradient (not all ones, so a rule that ignores it would fail).
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as torch_functional

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)
from tinygrad_ops import reference

TOLERANCE = {"atol": 1e-10, "rtol": 1e-8}


def normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def torch_grads(function, *arrays, upstream):
    """Output and input gradients of a PyTorch function, as numpy float64 arrays."""
    tensors = [torch.tensor(array, requires_grad=True) for array in arrays]
    out = function(*tensors)
    out.backward(torch.tensor(upstream))
    return out.detach().numpy(), [tensor.grad.numpy() for tensor in tensors]


def engine_grads(function, *arrays, upstream):
    """The same through our engine."""
    tensors = [tg.Tensor(array.copy(), requires_grad=True) for array in arrays]
    out = function(*tensors)
    out.backward(upstream)
    return out.numpy(), [tensor.grad.numpy() for tensor in tensors]


def assert_all_close(actual, expected):
    assert len(actual) == len(expected)
    for index, (mine, theirs) in enumerate(zip(actual, expected, strict=True)):
        assert mine.shape == theirs.shape, (index, mine.shape, theirs.shape)
        np.testing.assert_allclose(mine, theirs, err_msg=f"entry {index}", **TOLERANCE)


# ----------------------------------------------------------------------------------------------
# matmul


@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (3, 4, 2), (2, 5, 3), (4, 1, 4)])
def test_matmul_matches_torch_and_engine(m, k, n):
    A, B = normal(m, k, seed=1), normal(k, n, seed=2)
    upstream = normal(m, n, seed=3)
    expected_out, expected_grads = torch_grads(torch.matmul, A, B, upstream=upstream)
    engine_out, engine_grads_ = engine_grads(lambda a, b: a @ b, A, B, upstream=upstream)
    out = reference.matmul(A, B)
    grads = reference.matmul_backward(A, B, upstream)
    assert_all_close([out, *grads], [expected_out, *expected_grads])
    assert_all_close([out, *grads], [engine_out, *engine_grads_])


def test_matmul_backward_shapes_follow_the_inputs():
    A, B = normal(2, 3), normal(3, 5)
    grad_A, grad_B = reference.matmul_backward(A, B, np.ones((2, 5)))
    assert grad_A.shape == A.shape
    assert grad_B.shape == B.shape


def test_matmul_rejects_misaligned_shapes():
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(2, 3\)"):
        reference.matmul(normal(2, 3), normal(2, 3))


# ----------------------------------------------------------------------------------------------
# softmax


def engine_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    exps = shifted.exp()
    return exps / exps.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("shape", [(1,), (5,), (3, 4), (2, 3, 4)])
def test_softmax_matches_torch_and_engine(shape):
    x = normal(*shape, seed=4) * 3
    upstream = normal(*shape, seed=5)
    expected_out, expected_grads = torch_grads(
        lambda t: torch.softmax(t, dim=-1), x, upstream=upstream
    )
    engine_out, engine_grads_ = engine_grads(engine_softmax, x, upstream=upstream)
    out = reference.softmax(x)
    grads = [reference.softmax_backward(out, upstream)]
    assert_all_close([out, *grads], [expected_out, *expected_grads])
    assert_all_close([out, *grads], [engine_out, *engine_grads_])


def test_softmax_is_stable_for_large_inputs():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0]])
    out = reference.softmax(x)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, torch.softmax(torch.tensor(x), dim=-1).numpy(), **TOLERANCE)


def test_softmax_ignores_a_shift():
    x = normal(3, 4, seed=6)
    np.testing.assert_allclose(reference.softmax(x), reference.softmax(x + 7.5), **TOLERANCE)


# ----------------------------------------------------------------------------------------------
# layer norm


@pytest.mark.parametrize(
    ("shape", "normalized_shape", "affine"),
    [((4, 5), (5,), True), ((4, 5), (5,), False), ((2, 3, 4), (3, 4), True), ((3, 1), (1,), True)],
)
def test_layer_norm_matches_torch_and_engine(shape, normalized_shape, affine):
    x = normal(*shape, seed=7) * 2 + 1
    weight = normal(*normalized_shape, seed=8) if affine else None
    bias = normal(*normalized_shape, seed=9) if affine else None
    upstream = normal(*shape, seed=10)
    arrays = [x, weight, bias] if affine else [x]
    expected_out, expected_grads = torch_grads(
        lambda *t: torch_functional.layer_norm(t[0], normalized_shape, *t[1:], eps=1e-5),
        *arrays,
        upstream=upstream,
    )
    axes = tuple(range(-len(normalized_shape), 0))

    def engine_layer_norm(*t):
        centred = t[0] - t[0].mean(axis=axes, keepdims=True)
        out = centred / ((centred * centred).mean(axis=axes, keepdims=True) + 1e-5).sqrt()
        return out * t[1] + t[2] if affine else out

    engine_out, engine_grads_ = engine_grads(engine_layer_norm, *arrays, upstream=upstream)
    out = reference.layer_norm(x, normalized_shape, weight, bias)
    grad_x, grad_weight, grad_bias = reference.layer_norm_backward(
        x, upstream, normalized_shape, weight
    )
    grads = [grad_x, grad_weight, grad_bias] if affine else [grad_x]
    assert_all_close([out, *grads], [expected_out, *expected_grads])
    assert_all_close([out, *grads], [engine_out, *engine_grads_])


# ----------------------------------------------------------------------------------------------
# batch norm


def batch_norm_inputs(shape, seed):
    """x, weight, bias, upstream gradient and starting running statistics (seeds from `seed`)."""
    x = normal(*shape, seed=seed) * 2 + 0.5
    channels = shape[1]
    weight, bias = normal(channels, seed=seed + 1), normal(channels, seed=seed + 2)
    upstream = normal(*shape, seed=seed + 3)
    start_mean = normal(channels, seed=seed + 4)
    start_var = np.abs(normal(channels, seed=seed + 5)) + 0.5
    return x, weight, bias, upstream, start_mean, start_var


def reference_batch_norm(x, weight, bias, upstream, start_mean, start_var, training):
    """The reference's [out, dx, dweight, dbias] and the running statistics it leaves."""
    running_mean, running_var = start_mean.copy(), start_var.copy()
    out = reference.batch_norm(
        x, running_mean, running_var, weight, bias, training=training, momentum=0.1
    )
    grads = reference.batch_norm_backward(
        x, upstream, start_mean, start_var, weight, training=training
    )
    return [out, *grads], running_mean, running_var


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 1)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_matches_torch(shape, training):
    x, weight, bias, upstream, start_mean, start_var = batch_norm_inputs(shape, seed=11)
    torch_mean, torch_var = torch.tensor(start_mean), torch.tensor(start_var)
    expected_out, expected_grads = torch_grads(
        lambda t, w, b: torch_functional.batch_norm(
            t, torch_mean, torch_var, w, b, training=training, momentum=0.1, eps=1e-5
        ),
        x,
        weight,
        bias,
        upstream=upstream,
    )
    results, running_mean, running_var = reference_batch_norm(
        x, weight, bias, upstream, start_mean, start_var, training
    )
    assert_all_close(results, [expected_out, *expected_grads])
    # The running statistics move (with the unbiased variance) only in training.
    np.testing.assert_allclose(running_mean, torch_mean.numpy(), **TOLERANCE)
    np.testing.assert_allclose(running_var, torch_var.numpy(), **TOLERANCE)
    if not training:
        np.testing.assert_array_equal(running_var, start_var)


def test_batch_norm_running_variance_is_unbiased():
    x = np.array([[1.0], [2.0], [6.0]])  # biased variance 14/3, unbiased 7
    running_mean, running_var = np.zeros(1), np.zeros(1)
    reference.batch_norm(x, running_mean, running_var, training=True, momentum=1.0)
    np.testing.assert_allclose(running_mean, [3.0])
    np.testing.assert_allclose(running_var, [7.0])


def test_batch_norm_training_matches_engine():
    x = normal(5, 3, seed=17)
    weight, bias = normal(3, seed=18), normal(3, seed=19)
    upstream = normal(5, 3, seed=20)

    def engine_batch_norm(t, w, b):
        centred = t - t.mean(axis=0, keepdims=True)
        variance = (centred * centred).mean(axis=0, keepdims=True)
        return centred / (variance + 1e-5).sqrt() * w + b

    engine_out, engine_grads_ = engine_grads(engine_batch_norm, x, weight, bias, upstream=upstream)
    out = reference.batch_norm(x, np.zeros(3), np.ones(3), weight, bias, training=True)
    grads = reference.batch_norm_backward(x, upstream, weight=weight, training=True)
    assert_all_close([out, *grads], [engine_out, *engine_grads_])


# ----------------------------------------------------------------------------------------------
# RMS norm


@pytest.mark.parametrize(
    ("shape", "normalized_shape", "eps"),
    [((4, 5), (5,), None), ((4, 5), (5,), 1e-3), ((2, 3, 4), (3, 4), 1e-6), ((3, 1), (1,), None)],
)
def test_rms_norm_matches_torch_and_engine(shape, normalized_shape, eps):
    x = normal(*shape, seed=21) + 0.3
    weight = normal(*normalized_shape, seed=22)
    upstream = normal(*shape, seed=23)
    expected_out, expected_grads = torch_grads(
        lambda t, w: torch_functional.rms_norm(t, normalized_shape, w, eps=eps),
        x,
        weight,
        upstream=upstream,
    )
    axes = tuple(range(-len(normalized_shape), 0))
    engine_eps = np.finfo(np.float64).eps if eps is None else eps

    def engine_rms_norm(t, w):
        return t / ((t * t).mean(axis=axes, keepdims=True) + engine_eps).sqrt() * w

    engine_out, engine_grads_ = engine_grads(engine_rms_norm, x, weight, upstream=upstream)
    out = reference.rms_norm(x, normalized_shape, weight, eps=eps)
    grads = reference.rms_norm_backward(x, upstream, normalized_shape, weight, eps=eps)
    assert_all_close([out, *grads], [expected_out, *expected_grads])
    assert_all_close([out, *grads], [engine_out, *engine_grads_])


def test_rms_norm_equals_layer_norm_on_centred_rows():
    # A row with mean 0 has var = mean(x^2): the two norms then agree.
    x = normal(3, 6, seed=24)
    x = x - x.mean(axis=-1, keepdims=True)
    np.testing.assert_allclose(
        reference.rms_norm(x, (6,), eps=1e-5), reference.layer_norm(x, (6,), eps=1e-5), **TOLERANCE
    )


# ----------------------------------------------------------------------------------------------
# The engine's fused ops (tinygrad_ops.functional) against the loops


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
def test_fused_softmax_matches_reference(shape):
    x, upstream = normal(*shape, seed=30) * 4, normal(*shape, seed=31)
    out, (grad_x,) = engine_grads(F.softmax, x, upstream=upstream)
    expected = reference.softmax(x)
    assert_all_close([out, grad_x], [expected, reference.softmax_backward(expected, upstream)])


@pytest.mark.parametrize(
    ("shape", "normalized_shape"), [((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((2, 3, 4), (4,))]
)
def test_fused_layer_norm_matches_reference(shape, normalized_shape):
    x = normal(*shape, seed=32) * 3 - 1
    weight, bias = normal(*normalized_shape, seed=33), normal(*normalized_shape, seed=34)
    upstream = normal(*shape, seed=35)
    out, grads = engine_grads(
        lambda t, w, b: F.layer_norm(t, normalized_shape, w, b),
        x,
        weight,
        bias,
        upstream=upstream,
    )
    expected = reference.layer_norm(x, normalized_shape, weight, bias)
    expected_grads = reference.layer_norm_backward(x, upstream, normalized_shape, weight)
    assert_all_close([out, *grads], [expected, *expected_grads])


@pytest.mark.parametrize(
    ("shape", "normalized_shape", "eps"), [((4, 5), (5,), None), ((2, 3, 4), (3, 4), 1e-4)]
)
def test_fused_rms_norm_matches_reference(shape, normalized_shape, eps):
    x, weight = normal(*shape, seed=36), normal(*normalized_shape, seed=37)
    upstream = normal(*shape, seed=38)
    out, grads = engine_grads(
        lambda t, w: F.rms_norm(t, normalized_shape, w, eps=eps), x, weight, upstream=upstream
    )
    expected = reference.rms_norm(x, normalized_shape, weight, eps=eps)
    expected_grads = reference.rms_norm_backward(x, upstream, normalized_shape, weight, eps=eps)
    assert_all_close([out, *grads], [expected, *expected_grads])


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5)])
@pytest.mark.parametrize("training", [True, False])
def test_fused_batch_norm_matches_reference(shape, training):
    x, weight, bias, upstream, start_mean, start_var = batch_norm_inputs(shape, seed=39)
    running_mean, running_var = tg.Tensor(start_mean.copy()), tg.Tensor(start_var.copy())
    out, grads = engine_grads(
        lambda t, w, b: F.batch_norm(
            t, running_mean, running_var, w, b, training=training, momentum=0.1
        ),
        x,
        weight,
        bias,
        upstream=upstream,
    )
    expected, reference_mean, reference_var = reference_batch_norm(
        x, weight, bias, upstream, start_mean, start_var, training
    )
    assert_all_close([out, *grads], expected)
    assert_all_close([running_mean.numpy(), running_var.numpy()], [reference_mean, reference_var])
