"""The functional ops (tinygrad_ops/functional.py) all together: against PyTorch (float64),
against the same op composed from primitives, central differences, double backward, dtypes
and errors across every fused op. One op's own tests live with its module's: test_norms,
test_activations, test_losses, test_linalg."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
from helpers import check_op

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)
from tinygrad_ops.ops import PRIMITIVES, REGISTRY


def tensors(*arrays, requires_grad=True):
    return [tg.Tensor(np.array(array), requires_grad=requires_grad) for array in arrays]


# ----------------------------------------------------------------------------------------------
# Against PyTorch, float64


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


# ----------------------------------------------------------------------------------------------
# Errors


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


def test_ops_are_registered_and_document_both_directions():
    for op in PRIMITIVES:
        assert REGISTRY[op.__name__] is op
        assert ";" in op.__doc__.splitlines()[0] or "d" in op.__doc__, op
    assert tg.functional is F
