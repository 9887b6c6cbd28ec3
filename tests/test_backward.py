"""Backward and tg.grad (autograd/backward.py): higher-order gradients, tg.grad, the errors
of backward; PyTorch (float64) is the oracle.
"""

import numpy as np
import pytest
import torch
from helpers import close, pair

import tinygrad_ops as tg

# -- higher order ---------------------------------------------------------------------------------


def small_function(x, matrix, exponent):
    """Uses tanh, exp, mul, matmul, sum and pow (tensor and scalar exponents)."""
    hidden = (matrix @ x).tanh()
    return ((hidden * x.exp()) ** 2).sum() + (x**3).sum() + (x * x + 1.5) ** exponent


def test_hessian_vector_product_matches_torch():
    generator = np.random.default_rng(0)
    matrix = generator.standard_normal((3, 3))
    point = generator.standard_normal(3) * 0.5
    vector = generator.standard_normal(3)
    exponent = np.array(0.7)

    x = tg.Tensor(point, requires_grad=True)
    e = tg.Tensor(exponent, requires_grad=True)
    gx, ge = tg.grad(small_function(x, tg.Tensor(matrix), e).sum(), [x, e], create_graph=True)
    assert gx.requires_grad
    hvp_x, hvp_e = tg.grad((gx * tg.Tensor(vector)).sum() + ge * 0.5, [x, e])

    xt = torch.tensor(point)
    et = torch.tensor(exponent)

    def torch_function(xt, et):
        return small_function(xt, torch.tensor(matrix), et).sum()

    _, (expected_x, expected_e) = torch.autograd.functional.hvp(
        torch_function, (xt, et), (torch.tensor(vector), torch.tensor(0.5, dtype=torch.float64))
    )
    close(hvp_x, expected_x)
    close(hvp_e, expected_e)


# torch warns that backward(create_graph=True) makes a reference cycle; we reset .grad below
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
def test_double_backward_through_backward_create_graph():
    generator = np.random.default_rng(1)
    matrix = generator.standard_normal((3, 3))
    point = generator.standard_normal(3) * 0.5
    vector = generator.standard_normal(3)
    x, xt = pair(point)
    small_function(x, tg.Tensor(matrix), 2.0).sum().backward(create_graph=True)
    small_function(xt, torch.tensor(matrix), 2.0).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    close(x.grad, xt.grad)
    first_x, first_xt = x.grad, xt.grad
    x.grad = None
    xt.grad = None
    (first_x * tg.Tensor(vector)).sum().backward()
    (first_xt * torch.tensor(vector)).sum().backward()
    close(x.grad, xt.grad)


SECOND_ORDER = [
    pytest.param(lambda a: a.exp(), lambda a: a.exp(), id="exp"),
    pytest.param(lambda a: a.log(), lambda a: a.log(), id="log"),
    pytest.param(lambda a: a.sqrt(), lambda a: a.sqrt(), id="sqrt"),
    pytest.param(lambda a: a.tanh(), lambda a: a.tanh(), id="tanh"),
    pytest.param(lambda a: a.sigmoid(), lambda a: a.sigmoid(), id="sigmoid"),
    pytest.param(lambda a: a.abs(), lambda a: a.abs(), id="abs"),
    pytest.param(lambda a: a.relu(), lambda a: a.relu(), id="relu"),
    pytest.param(lambda a: a.clip(0.6, 1.2), lambda a: a.clamp(0.6, 1.2), id="clip"),
    pytest.param(lambda a: a**2.5, lambda a: a**2.5, id="pow-scalar"),
    pytest.param(lambda a: 1.7**a, lambda a: 1.7**a, id="rpow"),
    pytest.param(lambda a: a ** a.sum(), lambda a: a ** a.sum(), id="pow-tensor"),
    pytest.param(lambda a: a / a.sum(), lambda a: a / a.sum(), id="div"),
    pytest.param(lambda a: -a * a[::-1], lambda a: -a * a.flip(0), id="neg-mul-reversed"),
    pytest.param(lambda a: a @ a.reshape(4, 1), lambda a: a @ a.reshape(4, 1), id="matmul"),
    pytest.param(lambda a: a.max(), lambda a: a.amax(), id="max"),
    pytest.param(lambda a: a.min(axis=0), lambda a: a.amin(0), id="min"),
    pytest.param(lambda a: tg.maximum(a, a[::-1] * 0.9),
                 lambda a: torch.maximum(a, a.flip(0) * 0.9), id="maximum"),
    pytest.param(lambda a: a.var(ddof=1), lambda a: a.var(correction=1), id="var"),
    pytest.param(lambda a: a.mean() * a, lambda a: a.mean() * a, id="mean"),
    pytest.param(lambda a: tg.where(a > 1.0, a * a, a.exp()),
                 lambda a: torch.where(a > 1.0, a * a, a.exp()), id="where"),
    pytest.param(lambda a: a[np.array([0, 0, 3])], lambda a: a[torch.tensor([0, 0, 3])],
                 id="getitem-repeated"),
    pytest.param(lambda a: tg.stack([a, a * a]).sum(axis=0),
                 lambda a: torch.stack([a, a * a]).sum(0), id="stack"),
    pytest.param(lambda a: tg.concatenate([a, a.exp()]), lambda a: torch.cat([a, a.exp()]),
                 id="concatenate"),
    pytest.param(lambda a: a.reshape(2, 2).T.swapaxes(0, 1).broadcast_to((3, 2, 2)),
                 lambda a: a.reshape(2, 2).T.transpose(0, 1).broadcast_to((3, 2, 2)),
                 id="shape-ops"),
]  # fmt: skip


@pytest.mark.parametrize(("ours", "theirs"), SECOND_ORDER)
def test_second_order_through_each_primitive(ours, theirs):
    """Hessian-vector product of sum(w * f(x)**2) against torch double backward."""
    generator = np.random.default_rng(2)
    point = generator.uniform(0.5, 1.5, size=4)
    x, xt = pair(point)
    vector = generator.standard_normal(4)

    def loss(f, a, weight_of):
        out = f(a)
        weights = weight_of(np.random.default_rng(3).standard_normal(tuple(out.shape)))
        return (out * out * weights).sum()

    (gx,) = tg.grad(loss(ours, x, tg.Tensor), [x], create_graph=True)
    (hvp,) = tg.grad((gx * tg.Tensor(vector)).sum(), [x])
    (gxt,) = torch.autograd.grad(loss(theirs, xt, torch.tensor), [xt], create_graph=True)
    (hvpt,) = torch.autograd.grad((gxt * torch.tensor(vector)).sum(), [xt])
    close(gx, gxt)
    close(hvp, hvpt)


SECOND_ORDER_SEVERAL_INPUTS = [
    pytest.param(lambda a, b: a @ b, lambda a, b: a @ b, [(3,), (3,)], id="matmul-dot"),
    pytest.param(lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3), (3,)], id="matmul-matrix-vector"),
    pytest.param(lambda a, b: a @ b, lambda a, b: a @ b, [(3,), (3, 2)], id="matmul-vector-matrix"),
    pytest.param(lambda a, b: a @ b, lambda a, b: a @ b, [(2, 1, 2, 3), (3, 3, 2)],
                 id="matmul-broadcast-batch"),
    pytest.param(lambda a, b: a @ b, lambda a, b: a @ b, [(2, 2, 3), (3,)],
                 id="matmul-batched-vector"),
    pytest.param(lambda a, b: a**b, lambda a, b: a**b, [(2, 3), (3,)], id="pow-broadcast"),
    pytest.param(lambda a, b: a / b, lambda a, b: a / b, [(2, 3), (2, 1)], id="div-broadcast"),
    pytest.param(tg.maximum, torch.maximum,
                 [np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])], id="maximum-ties"),
    pytest.param(lambda a: a.max(axis=1), lambda a: a.amax(1),
                 [np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])], id="max-ties"),
    pytest.param(lambda a, b: tg.where(np.array([[True], [False]]), a, b),
                 lambda a, b: torch.where(torch.tensor([[True], [False]]), a, b),
                 [(3,), (2, 1)], id="where-broadcast"),
    pytest.param(lambda a, b: a.sum(axis=0, keepdims=True) * b,
                 lambda a, b: a.sum(0, keepdim=True) * b, [(2, 3), (3,)], id="sum-keepdims"),
    pytest.param(lambda a: a**3, lambda a: a**3, [np.array([0.0, 0.5, -2.0])],
                 id="pow-scalar-base-0"),
    pytest.param(lambda a: a.abs() * a, lambda a: a.abs() * a, [np.array([0.0, -1.0, 2.0])],
                 id="abs-at-0"),
    pytest.param(lambda a: a[np.array([0, 0]), np.array([1, 1])],
                 lambda a: a[torch.tensor([0, 0]), torch.tensor([1, 1])], [(2, 2)],
                 id="getitem-repeated-pairs"),
]  # fmt: skip


@pytest.mark.parametrize(("ours", "theirs", "specs"), SECOND_ORDER_SEVERAL_INPUTS)
def test_second_order_with_several_inputs(ours, theirs, specs):
    """The Hessian-vector product of sum(w * f(a, b)**2) in every input, against torch."""
    generator = np.random.default_rng(4)
    values = [
        generator.uniform(0.5, 1.5, size=spec) if isinstance(spec, tuple) else spec
        for spec in specs
    ]
    vectors = [generator.standard_normal(np.shape(value)) for value in values]
    inputs = [pair(value) for value in values]
    ours_in = [mine for mine, _ in inputs]
    theirs_in = [reference for _, reference in inputs]
    out, expected = ours(*ours_in), theirs(*theirs_in)
    weights = generator.standard_normal(tuple(expected.shape))
    grads = tg.grad((out * out * tg.Tensor(weights)).sum(), ours_in, create_graph=True)
    grads_t = torch.autograd.grad(
        (expected * expected * torch.tensor(weights)).sum(), theirs_in, create_graph=True
    )
    product = sum((grad * tg.Tensor(vector)).sum() for grad, vector in zip(grads, vectors))
    product_t = sum((grad * torch.tensor(vector)).sum() for grad, vector in zip(grads_t, vectors))
    hessian_vector = tg.grad(product, ours_in, allow_unused=True)
    hessian_vector_t = torch.autograd.grad(product_t, theirs_in, allow_unused=True)
    for mine, reference in zip(hessian_vector, hessian_vector_t):
        if reference is None:
            assert mine is None or not np.any(mine.numpy())
        else:
            close(mine, reference)


def test_third_derivative():
    x = tg.Tensor(np.array([0.7]), requires_grad=True)
    (first,) = tg.grad((x**4).sum(), [x], create_graph=True)
    (second,) = tg.grad(first.sum(), [x], create_graph=True)
    (third,) = tg.grad(second.sum(), [x])
    np.testing.assert_allclose(first.numpy(), 4 * 0.7**3)
    np.testing.assert_allclose(second.numpy(), 12 * 0.7**2)
    np.testing.assert_allclose(third.numpy(), 24 * 0.7)


# -- tg.grad ----------------------------------------------------------------------------------


def test_grad_returns_a_tuple_and_leaves_dot_grad_alone():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    result = tg.grad((x * x).sum(), [x])
    assert isinstance(result, tuple)
    np.testing.assert_allclose(result[0].numpy(), [2.0, 4.0])
    assert x.grad is None
    assert not result[0].requires_grad


def test_grad_allow_unused():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    unused = tg.Tensor([3.0], requires_grad=True)
    loss = (x * x).sum()
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        tg.grad(loss, [x, unused], retain_graph=True)
    grad_x, grad_unused = tg.grad(loss, [x, unused], allow_unused=True)
    assert grad_unused is None
    np.testing.assert_allclose(grad_x.numpy(), [2.0, 4.0])


def test_grad_with_grad_outputs():
    x, xt = pair([1.0, 2.0, 3.0])
    upstream = np.array([0.5, -1.0, 2.0])
    (ours,) = tg.grad(x.exp(), [x], grad_outputs=[tg.Tensor(upstream)])
    (theirs,) = torch.autograd.grad(xt.exp(), [xt], grad_outputs=[torch.tensor(upstream)])
    close(ours, theirs)
    (single,) = tg.grad(x.tanh(), x, grad_outputs=upstream)
    close(single, torch.autograd.grad(xt.tanh(), xt, torch.tensor(upstream))[0])


def test_grad_non_leaf_inputs():
    x, xt = pair([1.0, -2.0])
    middle, middle_t = x * 3, xt * 3
    loss, loss_t = (middle.tanh() * x).sum(), (middle_t.tanh() * xt).sum()
    ours = tg.grad(loss, [middle, x])
    theirs = torch.autograd.grad(loss_t, [middle_t, xt])
    close(ours[0], theirs[0])
    close(ours[1], theirs[1])


def test_grad_several_outputs():
    x, xt = pair([1.0, 2.0])
    (ours,) = tg.grad([(x * x).sum(), x.exp().sum()], [x])
    (theirs,) = torch.autograd.grad([(xt * xt).sum(), xt.exp().sum()], [xt])
    close(ours, theirs)


def test_grad_of_an_input_that_does_not_require_grad_is_an_error():
    x = tg.Tensor([1.0], requires_grad=True)
    constant = tg.Tensor([2.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.grad((x * constant).sum(), [constant])


def test_grad_non_scalar_output_needs_grad_outputs():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"scalar.*\(2,\)"):
        tg.grad(x * 2, [x])


# -- errors of backward -------------------------------------------------------------------------


def test_non_scalar_backward_without_gradient_is_an_error():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"scalar.*\(2,\)"):
        (x * 2).backward()


def test_backward_gradient_of_the_wrong_shape_is_an_error():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\(3,\).*\(2,\)"):
        (x * 2).backward(np.ones(3))


def test_backward_on_a_tensor_without_grad_is_an_error():
    with pytest.raises(RuntimeError, match="requires_grad=True"):
        (tg.Tensor([1.0]) * 2).sum().backward()


def test_unknown_scheduler_lists_the_known_ones():
    x = tg.Tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="sequential"):
        (x * 2).sum().backward(scheduler="no-such-scheduler")


@pytest.mark.parametrize(
    "function",
    [
        lambda x: x.tanh(),
        lambda x: x.sigmoid(),
        lambda x: x.exp(),
        lambda x: x.sqrt(),
        lambda x: x.tanh() * x,
    ],
    ids=["tanh", "sigmoid", "exp", "sqrt", "tanh-times-x"],
)
def test_second_derivatives_of_0d_tensors_match_torch(function):
    """numpy gives a scalar, not a 0-d array, for a 0-d input: an op that saved its output
    saved that scalar, which a create_graph backward took for a constant (the second
    derivative of tanh at a 0-d x was 0)."""
    x = tg.Tensor(np.array(0.7), requires_grad=True)
    (first,) = tg.grad(function(x), [x], create_graph=True)
    (second,) = tg.grad(first, [x])
    xt = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    (first_t,) = torch.autograd.grad(function(xt), [xt], create_graph=True)
    (second_t,) = torch.autograd.grad(first_t, [xt])
    np.testing.assert_allclose(first.numpy(), first_t.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(second.numpy(), second_t.numpy(), rtol=1e-12)


def test_an_in_place_change_of_a_saved_0d_output_is_refused():
    x = tg.Tensor(np.array(0.7), requires_grad=True)
    y = x.tanh()  # Tanh saves its output
    y += 1.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()
