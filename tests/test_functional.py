"""The functional ops against PyTorch (float64), against the same op composed from
primitives, and against central differences; plus the edge cases each op promises."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
from helpers import check_op

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)
from tinygrad_ops.ops import PRIMITIVES, REGISTRY, activations

SHAPES = [(5,), (3, 4), (2, 3, 4), (2, 1, 3, 2)]


def normalized_cases():
    """(shape, k) for every shape and every normalized rank k = 1..ndim."""
    return [(shape, k) for shape in SHAPES for k in range(1, len(shape) + 1)]


def tensors(*arrays, requires_grad=True):
    return [tg.Tensor(np.array(array), requires_grad=requires_grad) for array in arrays]


# ----------------------------------------------------------------------------------------------
# Against PyTorch, float64


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


@pytest.mark.parametrize(("shape", "k"), normalized_cases())
def test_layer_norm_matches_torch(shape, k):
    normalized = shape[len(shape) - k :]
    check_op(
        lambda x, w, b: F.layer_norm(x, normalized, w, b),
        lambda x, w, b: TF.layer_norm(x, normalized, w, b),
        shape,
        normalized,
        normalized,
    )
    check_op(
        lambda x: F.layer_norm(x, normalized, eps=1e-3),
        lambda x: TF.layer_norm(x, normalized, eps=1e-3),
        shape,
    )


@pytest.mark.parametrize(("shape", "k"), normalized_cases())
def test_rms_norm_matches_torch(shape, k):
    normalized = shape[len(shape) - k :]
    check_op(
        lambda x, w: F.rms_norm(x, normalized, w),
        lambda x, w: TF.rms_norm(x, normalized, w),
        shape,
        normalized,
    )
    check_op(
        lambda x: F.rms_norm(x, normalized, eps=0.1),
        lambda x: TF.rms_norm(x, normalized, eps=0.1),
        shape,
    )


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 2, 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_matches_torch_over_several_steps(shape, affine):
    generator = np.random.default_rng(3)
    channels = shape[1]
    ours_stats = [tg.zeros(channels, dtype=np.float64), tg.ones(channels, dtype=np.float64)]
    theirs_stats = [torch.zeros(channels, dtype=torch.float64), torch.ones(channels).double()]
    weight = generator.standard_normal(channels) if affine else None
    bias = generator.standard_normal(channels) if affine else None
    ours_affine = [tg.Tensor(v, requires_grad=True) if affine else None for v in (weight, bias)]
    theirs_affine = [
        torch.tensor(v, requires_grad=True) if affine else None for v in (weight, bias)
    ]
    for step in range(3):
        x = generator.standard_normal(shape) * (step + 1) + step
        upstream = generator.standard_normal(shape)
        ours_x = tg.Tensor(x, requires_grad=True)
        theirs_x = torch.tensor(x, requires_grad=True)
        out = F.batch_norm(ours_x, *ours_stats, *ours_affine, training=True, momentum=0.3)
        expected = TF.batch_norm(
            theirs_x, *theirs_stats, *theirs_affine, training=True, momentum=0.3
        )
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
        out.backward(upstream)
        expected.backward(torch.tensor(upstream))
        np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), atol=1e-10)
        for ours_stat, theirs_stat in zip(ours_stats, theirs_stats):
            np.testing.assert_allclose(ours_stat.numpy(), theirs_stat.numpy(), rtol=1e-12)
    for ours_parameter, theirs_parameter in zip(ours_affine, theirs_affine):
        if affine:  # accumulated over the three steps
            np.testing.assert_allclose(
                ours_parameter.grad.numpy(), theirs_parameter.grad.numpy(), atol=1e-10
            )


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5)])
def test_batch_norm_eval_matches_torch(shape):
    channels = shape[1]
    mean = np.linspace(-1, 1, channels)
    var = np.linspace(0.5, 2, channels)
    check_op(
        lambda x, w, b: F.batch_norm(x, tg.Tensor(mean), tg.Tensor(var), w, b, training=False),
        lambda x, w, b: TF.batch_norm(
            x, torch.tensor(mean), torch.tensor(var), w, b, training=False
        ),
        shape,
        (channels,),
        (channels,),
    )


@pytest.mark.parametrize(
    ("x_shape", "bias"), [((4, 3), True), ((2, 5, 3), True), ((3,), True), ((4, 3), False)]
)
def test_linear_matches_torch(x_shape, bias):
    specs = [x_shape, (2, 3)] + ([(2,)] if bias else [])
    check_op(F.linear, TF.linear, *specs)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    ("logits_shape", "target_shape"), [((5, 4), (5,)), ((3, 4, 2, 3), (3, 2, 3)), ((4,), ())]
)
def test_cross_entropy_matches_torch(reduction, logits_shape, target_shape):
    classes = logits_shape[1] if len(logits_shape) > 1 else logits_shape[0]
    target = np.random.default_rng(7).integers(0, classes, target_shape)
    check_op(
        lambda z, t: F.cross_entropy(z, t, reduction=reduction),
        lambda z, t: TF.cross_entropy(z, t, reduction=reduction),
        logits_shape,
        target,
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_matches_torch(reduction):
    check_op(
        lambda a, b: F.mse_loss(a, b, reduction),
        lambda a, b: TF.mse_loss(a, b, reduction=reduction),
        (3, 4),
        (3, 4),
    )


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (F.gelu, TF.gelu),
        (lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
        (F.leaky_relu, TF.leaky_relu),
        (F.sigmoid, torch.sigmoid),
        (F.tanh, torch.tanh),
        (F.relu, torch.relu),
    ],
)
def test_activations_match_torch(ours, theirs):
    check_op(ours, theirs, (4, 5))
    x = np.array([-40.0, -8.0, -1e-3, 0.5, 8.0, 40.0, 1e4, -1e4])
    check_op(ours, theirs, x)


# ----------------------------------------------------------------------------------------------
# Against the same op composed from primitives


def composed_softmax(x, axis):
    exponentials = (x - x.max(axis=axis, keepdims=True)).exp()
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def composed_layer_norm(x, axes, weight, bias, eps=1e-5):
    centered = x - x.mean(axis=axes, keepdims=True)
    variance = (centered * centered).mean(axis=axes, keepdims=True)
    return centered / (variance + eps).sqrt() * weight + bias


def composed_rms_norm(x, axes, weight, eps):
    return x / ((x * x).mean(axis=axes, keepdims=True) + eps).sqrt() * weight


def composed_cross_entropy(z, target):
    shifted = z - z.max(axis=1, keepdims=True)
    log_probabilities = shifted - shifted.exp().sum(axis=1, keepdims=True).log()
    return -log_probabilities[np.arange(z.shape[0]), target].mean()


def compare_with_composed(fused, composed, *arrays):
    """Same output and same gradients for every input, fused node against composed graph."""
    generator = np.random.default_rng(11)
    results = []
    for function in (fused, composed):
        inputs = tensors(*arrays)
        out = function(*inputs)
        out.backward(generator.standard_normal(out.shape) if out.ndim else None)
        generator = np.random.default_rng(11)
        results.append((out.numpy(), [tensor.grad.numpy() for tensor in inputs]))
    (fused_out, fused_grads), (composed_out, composed_grads) = results
    np.testing.assert_allclose(fused_out, composed_out, rtol=1e-10, atol=1e-12)
    for fused_grad, composed_grad in zip(fused_grads, composed_grads):
        np.testing.assert_allclose(fused_grad, composed_grad, rtol=1e-9, atol=1e-11)


def test_fused_ops_match_their_composed_versions():
    generator = np.random.default_rng(5)
    x = generator.standard_normal((4, 3, 5))
    w = generator.standard_normal((3, 5))
    b = generator.standard_normal((3, 5))
    compare_with_composed(lambda t: F.softmax(t, 1), lambda t: composed_softmax(t, 1), x)
    compare_with_composed(
        lambda t: F.log_softmax(t, -1), lambda t: composed_softmax(t, -1).log(), x
    )
    compare_with_composed(
        lambda t, w, b: F.layer_norm(t, (3, 5), w, b),
        lambda t, w, b: composed_layer_norm(t, (1, 2), w, b),
        x,
        w,
        b,
    )
    compare_with_composed(
        lambda t, w: F.rms_norm(t, (5,), w, eps=1e-6),
        lambda t, w: composed_rms_norm(t, (2,), w, 1e-6),
        x,
        w[0],
    )
    channel = generator.standard_normal((3, 1))
    compare_with_composed(
        lambda t, w, b: F.batch_norm(t, None, None, w.reshape(3), b.reshape(3), training=True),
        lambda t, w, b: composed_layer_norm(t, (0, 2), w, b),
        x,
        channel,
        channel + 1,
    )
    compare_with_composed(
        lambda t, W, b: F.linear(t, W, b), lambda t, W, b: t @ W.T + b, x, w, b[0, :3]
    )
    target = np.array([0, 2, 1, 4])
    compare_with_composed(
        lambda z: F.cross_entropy(z, target), lambda z: composed_cross_entropy(z, target), x[:, 0]
    )
    compare_with_composed(
        lambda a, c: F.mse_loss(a, c), lambda a, c: ((a - c) * (a - c)).mean(), x, x + w
    )
    compare_with_composed(lambda t: F.leaky_relu(t, 0.2), lambda t: tg.where(t > 0, t, t * 0.2), x)
    compare_with_composed(
        lambda t: F.dropout(t, 0.4, seed=2),
        lambda t: t * (np.random.default_rng(2).random(t.shape) >= 0.4) / 0.6,
        x,
    )


# ----------------------------------------------------------------------------------------------
# Central differences, float64


def random_tensor(*shape, seed=0):
    return tg.Tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def test_gradcheck_every_op():
    x = random_tensor(3, 4)
    w = random_tensor(4, seed=1)
    b = random_tensor(4, seed=2)
    x3 = random_tensor(4, 2, 3, seed=3)
    c = random_tensor(2, seed=4)
    target = np.array([0, 3, 1])
    cases = [
        (lambda t: F.softmax(t, 0), (x,)),
        (lambda t: F.log_softmax(t, 1), (x,)),
        (lambda t, w, b: F.layer_norm(t, (4,), w, b), (x, w, b)),
        (lambda t: F.layer_norm(t, (2, 3)), (x3,)),
        (lambda t, w: F.rms_norm(t, (4,), w), (x, w)),
        (lambda t, w, b: F.batch_norm(t, None, None, w, b, training=True), (x3, c, c)),
        (lambda t, w: F.batch_norm(t, tg.zeros(4), tg.ones(4), w, training=False), (x, w)),
        (lambda t, W, b: F.linear(t, W, b), (x, random_tensor(2, 4, seed=5), c)),
        (lambda t: F.cross_entropy(t, target, "none"), (x,)),
        (lambda t, s: F.mse_loss(t, s, "sum"), (x, random_tensor(3, 4, seed=6))),
        (F.gelu, (x,)),
        (lambda t: F.leaky_relu(t, 0.1), (x,)),
        (lambda t: F.dropout(t, 0.5, seed=0), (x,)),
    ]
    for function, inputs in cases:
        assert tg.gradcheck(function, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)


# ----------------------------------------------------------------------------------------------
# Double backward: Hessian-vector products against PyTorch


def hessian_vector_products(function, arrays, engine):
    """(gradients, Hessian-vector products) of sum(c * f + f²) for every input."""
    generator = np.random.default_rng(9)
    if engine == "torch":
        inputs = [torch.tensor(array, requires_grad=True) for array in arrays]
        out = function(*inputs)
        weights = torch.tensor(generator.standard_normal(tuple(out.shape)))
        loss = (out * weights + out * out).sum()
        grads = torch.autograd.grad(loss, inputs, create_graph=True)
        vectors = [torch.tensor(generator.standard_normal(a.shape)) for a in arrays]
        inner = sum((g * v).sum() for g, v in zip(grads, vectors))
        products = torch.autograd.grad(inner, inputs)
        return [g.detach().numpy() for g in grads], [p.numpy() for p in products]
    inputs = tensors(*arrays)
    out = function(*inputs)
    weights = generator.standard_normal(out.shape)
    loss = (out * weights + out * out).sum()
    grads = tg.grad(loss, inputs, create_graph=True)
    vectors = [generator.standard_normal(a.shape) for a in arrays]
    inner = grads[0] * vectors[0]
    total = inner.sum()
    for g, v in zip(grads[1:], vectors[1:]):
        total = total + (g * v).sum()
    products = tg.grad(total, inputs)
    return [g.numpy() for g in grads], [p.numpy() for p in products]


@pytest.mark.parametrize(
    ("ours", "theirs", "shapes"),
    [
        (lambda x: F.softmax(x, 1), lambda x: torch.softmax(x, 1), [(3, 4, 2)]),
        (lambda x: F.log_softmax(x, -1), lambda x: torch.log_softmax(x, -1), [(3, 4)]),
        (
            lambda x, w, b: F.layer_norm(x, (2, 4), w, b),
            lambda x, w, b: TF.layer_norm(x, (2, 4), w, b),
            [(3, 2, 4), (2, 4), (2, 4)],
        ),
        (
            lambda x, w: F.rms_norm(x, (4,), w),
            lambda x, w: TF.rms_norm(x, (4,), w),
            [(3, 4), (4,)],
        ),
        (
            lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
            lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
            [(5, 3, 2), (3,), (3,)],
        ),
        (
            lambda x, w, b: F.batch_norm(x, tg.Tensor(np.ones(3)), tg.Tensor(np.ones(3) * 2), w, b),
            lambda x, w, b: TF.batch_norm(
                x, torch.ones(3).double(), torch.ones(3).double() * 2, w, b
            ),
            [(5, 3), (3,), (3,)],
        ),
        (F.linear, TF.linear, [(3, 4), (2, 4), (2,)]),
        (F.gelu, TF.gelu, [(3, 4)]),
        (
            lambda z: F.cross_entropy(z, np.array([[1, 0], [2, 2]]), "none"),
            lambda z: TF.cross_entropy(z, torch.tensor([[1, 0], [2, 2]]), reduction="none"),
            [(2, 3, 2)],
        ),
        (
            lambda a, b: F.mse_loss(a, b, "none"),
            lambda a, b: TF.mse_loss(a, b, reduction="none"),
            [(3, 2), (3, 2)],
        ),
    ],
)
def test_hessian_vector_products_match_torch(ours, theirs, shapes):
    generator = np.random.default_rng(2)
    arrays = [generator.standard_normal(shape) for shape in shapes]
    ours_grads, ours_products = hessian_vector_products(ours, arrays, "ours")
    theirs_grads, theirs_products = hessian_vector_products(theirs, arrays, "torch")
    for mine, reference in zip(ours_grads + ours_products, theirs_grads + theirs_products):
        np.testing.assert_allclose(mine, reference, rtol=1e-8, atol=1e-10)


# ----------------------------------------------------------------------------------------------
# Stability


def test_softmax_of_huge_logits_and_masks():
    logits = np.array([[1e30, -1e30, 0.0], [0.0, -np.inf, 1.0], [-np.inf, 5.0, -np.inf]])
    upstream = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [-1.0, 4.0, 2.0]])
    for dtype in (np.float32, np.float64):
        x = tg.Tensor(logits.astype(dtype), requires_grad=True)
        out = F.softmax(x)
        out.backward(upstream.astype(dtype))
        theirs = torch.tensor(logits, requires_grad=True)
        expected = torch.softmax(theirs, -1)
        expected.backward(torch.tensor(upstream))
        assert np.all(np.isfinite(out.numpy()))
        assert np.all(np.isfinite(x.grad.numpy()))
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-7)
        np.testing.assert_allclose(x.grad.numpy(), theirs.grad.numpy(), atol=1e-6)
        assert out.numpy()[1, 1] == 0
        assert x.grad.numpy()[1, 1] == 0
        x = tg.Tensor(logits.astype(dtype), requires_grad=True)
        log_out = F.log_softmax(x)
        log_out.backward(upstream.astype(dtype))
        theirs = torch.tensor(logits, requires_grad=True)
        expected = torch.log_softmax(theirs, -1)
        expected.backward(torch.tensor(upstream))
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


@pytest.mark.parametrize("width", [6, 1024])  # 1024: the one-row ufunc buffer path
@pytest.mark.parametrize("offset", [0.0, 1e-9, 1e-4])
def test_norms_of_constant_and_near_constant_inputs(offset, width):
    base = np.full((3, width), 7.0)
    base[:, 0] += offset
    upstream = np.random.default_rng(0).standard_normal(base.shape)
    for ours, theirs in [
        (lambda x: F.layer_norm(x, (width,)), lambda x: TF.layer_norm(x, (width,))),
        (
            lambda x: F.batch_norm(x.T, None, None, training=True).T,
            lambda x: TF.batch_norm(x.T, None, None, training=True).T,
        ),
        (lambda x: F.rms_norm(x, (width,)), lambda x: TF.rms_norm(x, (width,))),
    ]:
        x = tg.Tensor(base, requires_grad=True)
        out = ours(x)
        out.backward(upstream)
        reference_x = torch.tensor(base, requires_grad=True)
        expected = theirs(reference_x)
        expected.backward(torch.tensor(upstream))
        assert np.all(np.isfinite(out.numpy()))
        assert np.all(np.isfinite(x.grad.numpy()))
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-9)
        np.testing.assert_allclose(x.grad.numpy(), reference_x.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_float16_is_computed_in_float32_and_returned_as_float16():
    generator = np.random.default_rng(1)
    # Logits up to ±6e4 for softmax; the log-probabilities of the others must fit in float16.
    huge = generator.uniform(-6e4, 6e4, (4, 8)).astype(np.float16)
    logits = (generator.standard_normal((4, 8)) * 1e4).clip(-3e4, 3e4).astype(np.float16)
    upstream = generator.standard_normal((4, 8)).astype(np.float16)
    weight = generator.uniform(0.5, 1.5, 8).astype(np.float16)
    cases = [
        (lambda x: F.softmax(x), lambda x: torch.softmax(x, -1)),
        (lambda x: F.log_softmax(x), lambda x: torch.log_softmax(x, -1)),
        (lambda x: F.layer_norm(x, (8,), tg.Tensor(weight)), None),
        (lambda x: F.rms_norm(x, (8,), tg.Tensor(weight)), None),
        (lambda x: F.batch_norm(x, None, None, tg.Tensor(weight), training=True), None),
        (F.gelu, TF.gelu),
    ]
    references = [
        None,
        None,
        lambda x: TF.layer_norm(x, (8,), torch.tensor(weight).double()),
        lambda x: TF.rms_norm(
            x, (8,), torch.tensor(weight).double(), eps=float(np.finfo("f2").eps)
        ),
        lambda x: TF.batch_norm(x, None, None, torch.tensor(weight).double(), training=True),
        None,
    ]
    for index, ((ours, theirs), reference) in enumerate(zip(cases, references)):
        theirs = reference or theirs
        inputs = huge if index == 0 else logits
        x = tg.Tensor(inputs, requires_grad=True)
        out = ours(x)
        out.backward(upstream)
        assert out.dtype == np.float16
        assert x.grad.dtype == np.float16
        assert np.all(np.isfinite(out.numpy()))
        assert np.all(np.isfinite(x.grad.numpy()))
        exact = torch.tensor(inputs.astype(np.float64), requires_grad=True)
        expected = theirs(exact)
        expected.backward(torch.tensor(upstream.astype(np.float64)))
        # float16 keeps about 3 decimal digits: compare at that precision, relative to scale.
        scale = max(1.0, float(np.abs(expected.detach().numpy()).max()))
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=2e-3 * scale)
        grad_scale = max(1.0, float(np.abs(exact.grad.numpy()).max()))
        np.testing.assert_allclose(x.grad.numpy(), exact.grad.numpy(), atol=4e-3 * grad_scale)


def test_float32_stays_float32_everywhere():
    generator = np.random.default_rng(4)

    def array(*shape):
        return generator.standard_normal(shape).astype(np.float32)

    x, x3, w, b = array(4, 6), array(4, 3, 5), array(6), array(6)
    cases = [
        (lambda t: F.softmax(t), (x,)),
        (lambda t: F.log_softmax(t, 0), (x,)),
        (lambda t, w, b: F.layer_norm(t, (6,), w, b), (x, w, b)),
        (lambda t, w: F.rms_norm(t, (6,), w), (x, w)),
        (lambda t, w, b: F.batch_norm(t, tg.zeros(3), tg.ones(3), w, b, True), (x3, w[:3], b[:3])),
        (lambda t, w, b: F.batch_norm(t, tg.zeros(3), tg.ones(3), w, b), (x3, w[:3], b[:3])),
        (lambda t, W, b: F.linear(t, W, b), (x, array(2, 6), b[:2])),
        (lambda t: F.cross_entropy(t, np.array([0, 1, 5, 2])), (x,)),
        (lambda t: F.cross_entropy(t, np.array([0, 1, 5, 2]), "none"), (x,)),
        (lambda t, s: F.mse_loss(t, s), (x, array(4, 6))),
        (F.gelu, (x,)),
        (F.leaky_relu, (x,)),
        (lambda t: F.dropout(t, 0.3, seed=1), (x,)),
    ]
    for function, arrays in cases:
        inputs = tensors(*arrays)
        out = function(*inputs)
        assert out.dtype == np.float32, function
        out.backward(np.ones(out.shape, dtype=np.float32))
        for tensor in inputs:
            assert tensor.grad.dtype == np.float32, function
        (grad,) = tg.grad((function(*inputs) ** 2).sum(), [inputs[0]], create_graph=True)
        assert grad.dtype == np.float32, function


# ----------------------------------------------------------------------------------------------
# batch_norm specifics


def test_batch_norm_updates_running_stats_in_place_and_bumps_their_versions():
    mean, var = tg.zeros(2), tg.ones(2)
    mean_array, versions = mean.data, (mean._version[0], var._version[0])
    x = tg.Tensor([[1.0, 2.0], [3.0, 6.0], [5.0, 10.0]])
    F.batch_norm(x, mean, var, training=True, momentum=0.5)
    assert mean.data is mean_array
    np.testing.assert_allclose(mean.numpy(), [1.5, 3.0])
    np.testing.assert_allclose(var.numpy(), [0.5 + 0.5 * 4.0, 0.5 + 0.5 * 16.0])  # unbiased
    assert (mean._version[0], var._version[0]) == (versions[0] + 1, versions[1] + 1)
    before = mean.numpy().copy()
    F.batch_norm(x, mean, var, training=False)
    np.testing.assert_array_equal(mean.numpy(), before)


def test_batch_norm_errors():
    stats = (tg.zeros(3), tg.ones(3))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(tg.ones(1, 3), *stats, training=True)
    with pytest.raises(ValueError, match="empty batch"):
        F.batch_norm(tg.zeros(0, 3), *stats, training=True)
    assert F.batch_norm(tg.zeros(0, 3), *stats, training=False).shape == (0, 3)
    # one sample but several positions along L is fine in training, as in PyTorch
    assert F.batch_norm(tg.randn(1, 3, 4, seed=0), *stats, training=True).shape == (1, 3, 4)
    with pytest.raises(ValueError, match=r"\(N, C\)"):
        F.batch_norm(tg.ones(2, 3, 4, 5), *stats)
    with pytest.raises(ValueError, match="running_mean has shape"):
        F.batch_norm(tg.ones(2, 4), *stats)
    with pytest.raises(ValueError, match="momentum=None"):
        F.batch_norm(tg.ones(2, 3), *stats, training=True, momentum=None)
    with pytest.raises(TypeError, match="running_mean must be a Tensor"):
        F.batch_norm(tg.ones(2, 3), np.zeros(3), stats[1])


# ----------------------------------------------------------------------------------------------
# Errors


def test_wrong_normalized_shape_names_both_shapes():
    x = tg.ones(2, 3)
    for function in (F.layer_norm, F.rms_norm):
        with pytest.raises(ValueError, match=r"\(4,\).*\(2, 3\)"):
            function(x, (4,))
    with pytest.raises(ValueError, match=r"weight has shape \(2,\), expected \(3,\)"):
        F.layer_norm(x, (3,), tg.ones(2))


def test_cross_entropy_errors():
    logits = tg.zeros(2, 3)
    with pytest.raises(IndexError, match="target 3 is out of bounds for 3 classes"):
        F.cross_entropy(logits, np.array([0, 3]))
    with pytest.raises(IndexError, match="target -1"):
        F.cross_entropy(logits, np.array([-1, 0]))
    with pytest.raises(TypeError, match="must hold integers"):  # whole floats are indices
        F.cross_entropy(logits, np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match=r"target of shape \(2,\), got \(3,\)"):
        F.cross_entropy(logits, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(logits, np.array([0, 1]), reduction="avg")


def test_dtype_and_shape_errors():
    integers = tg.Tensor(np.arange(6).reshape(2, 3))
    for function in (F.softmax, F.log_softmax, F.gelu, F.leaky_relu):
        with pytest.raises(TypeError, match="floating-point"):
            function(integers)
    with pytest.raises(TypeError, match="floating-point"):
        F.layer_norm(integers, (3,))
    with pytest.raises(TypeError, match="dtype float64 but the input has dtype float32"):
        F.layer_norm(tg.ones(2, 3), (3,), tg.Tensor(np.ones(3)))
    with pytest.raises(TypeError, match="linear: weight has dtype float64"):
        F.linear(tg.ones(2, 3), tg.Tensor(np.ones((4, 3))))
    with pytest.raises(ValueError, match=r"input of shape \(2, 3\) does not match weight"):
        F.linear(tg.ones(2, 3), tg.ones(4, 5))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        F.softmax(tg.ones(2, 3), axis=2)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        F.mse_loss(tg.ones(2, 3), tg.ones(4))
    with pytest.raises(ValueError, match="p must be in"):
        F.dropout(tg.ones(3), 1.5)


# ----------------------------------------------------------------------------------------------
# relu in place, dropout, erf, the registry


def test_relu_inplace_is_version_safe():
    x = tg.Tensor([-1.0, 2.0, -3.0], requires_grad=True)
    y = x * 1.0
    z = y * y  # saves y
    out = F.relu(y, inplace=True)
    assert out is y
    assert y._version[0] == 1
    np.testing.assert_array_equal(y.numpy(), [0.0, 2.0, 0.0])
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.sum().backward()
    x.grad = None
    w = x * 1.0
    F.relu(w, inplace=True).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])
    with pytest.raises(RuntimeError, match="leaf"):
        F.relu(x, inplace=True)


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


def test_ops_are_registered_and_document_both_directions():
    for op in PRIMITIVES:
        assert REGISTRY[op.__name__] is op
        assert ";" in op.__doc__.splitlines()[0] or "d" in op.__doc__, op
    assert tg.functional is F
