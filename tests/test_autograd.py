"""Engine semantics: graph shapes, retain_graph, accumulation, deep chains, freed buffers,
higher order, tg.grad, custom Functions, in-place detection, hooks, anomaly mode, grad mode.

PyTorch (float64) is the oracle wherever it has the same thing.
"""

import gc
import weakref
from typing import ClassVar

import numpy as np
import pytest
import torch

import tinygrad_ops as tg


def pair(values, requires_grad=True):
    """The same float64 values as one of ours and one torch tensor."""
    array = np.asarray(values, dtype=np.float64)
    return (
        tg.Tensor(array.copy(), requires_grad=requires_grad),
        torch.tensor(array.copy(), requires_grad=requires_grad),
    )


def close(ours, theirs):
    expected = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs
    np.testing.assert_allclose(np.asarray(ours.numpy()), expected, rtol=1e-10, atol=1e-12)


# -- graph shapes ---------------------------------------------------------------------------


def test_fan_out():
    x, xt = pair([0.5, -1.0, 2.0])
    for a, lib in ((x, tg), (xt, torch)):
        out = (
            a * 2 + a.exp() + a * a + lib.tanh(a)
            if lib is torch
            else a * 2 + a.exp() + a * a + a.tanh()
        )
        out.sum().backward()
    close(x.grad, xt.grad)


def test_diamond():
    x, xt = pair([[0.5, -1.0], [2.0, 0.1]])

    def diamond(a, tanh):
        top = a * 3
        left = top.exp()
        right = tanh(top)
        return (left * right + left).sum()

    diamond(x, lambda t: t.tanh()).backward()
    diamond(xt, torch.tanh).backward()
    close(x.grad, xt.grad)


def test_diamond_gradient_arrives_once_at_the_shared_node():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    shared = x * 2
    calls = []
    shared.register_hook(lambda grad: calls.append(grad.numpy().copy()))
    (shared * 3 + shared * 5 + shared).sum().backward()
    assert len(calls) == 1
    np.testing.assert_allclose(calls[0], [9.0, 9.0])
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 18.0])


def test_same_tensor_twice_in_one_op():
    x, xt = pair([1.5, -2.0])
    (x * x).sum().backward()
    (xt * xt).sum().backward()
    close(x.grad, xt.grad)
    y, yt = pair([[1.0, 2.0], [3.0, 4.0]])
    (y @ y).sum().backward()
    (yt @ yt).sum().backward()
    close(y.grad, yt.grad)


def test_constants_get_no_gradient():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    constant = tg.Tensor([3.0, 4.0])
    array = np.array([5.0, 6.0])
    (x * constant + array * x + 7.0 * x + constant).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [15.0, 17.0])
    assert constant.grad is None
    assert not (constant * 2).requires_grad


def test_non_leaf_grad_is_not_kept():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    middle = x * 2
    (middle * middle).sum().backward()
    assert middle.grad is None
    assert x.grad is not None


def test_detach_stops_the_gradient():
    x, xt = pair([1.0, 2.0, -3.0])
    (x * x.detach() + (x * 2).detach().exp()).sum().backward()
    (xt * xt.detach() + (xt * 2).detach().exp()).sum().backward()
    close(x.grad, xt.grad)
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0, -3.0])


def test_unused_branch_does_not_need_a_gradient():
    x = tg.Tensor([1.0], requires_grad=True)
    unused = tg.Tensor([2.0], requires_grad=True)
    _ = unused.exp()
    (x * 3).sum().backward()
    assert unused.grad is None
    np.testing.assert_allclose(x.grad.numpy(), [3.0])


# -- retain_graph and accumulation -----------------------------------------------------------------


def test_second_backward_without_retain_graph_is_an_error():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    loss = (x.exp() * x).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=r"retain_graph=True"):
        loss.backward()


def test_second_grad_without_retain_graph_is_an_error():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    loss = (x.log() * x).sum()
    tg.grad(loss, [x])
    with pytest.raises(RuntimeError, match=r"retain_graph=True"):
        tg.grad(loss, [x])


def test_retain_graph_allows_a_second_backward_and_grads_accumulate():
    x, xt = pair([0.3, -1.2])
    loss = (x.exp() * x.tanh()).sum()
    loss_t = (xt.exp() * xt.tanh()).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    loss_t.backward(retain_graph=True)
    loss_t.backward()
    close(x.grad, xt.grad)
    first = tg.Tensor([0.3, -1.2], dtype=np.float64, requires_grad=True)
    (first.exp() * first.tanh()).sum().backward()
    close(x.grad, 2 * first.grad.numpy())


def test_gradients_accumulate_across_calls():
    x, xt = pair([1.0, -2.0, 0.5])
    for scale in (1.0, 2.0, 3.0):
        (x * x * scale).sum().backward()
        (xt * xt * scale).sum().backward()
        close(x.grad, xt.grad)
    np.testing.assert_allclose(x.grad.numpy(), 12 * np.array([1.0, -2.0, 0.5]))


def test_accumulated_grad_is_not_aliased_to_the_upstream_gradient():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    upstream = np.array([1.0, 1.0], dtype=np.float32)
    (x * 1).backward(upstream)
    (x * 1).backward(upstream)
    np.testing.assert_array_equal(upstream, [1.0, 1.0])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_backward_with_a_gradient_for_a_non_scalar():
    x, xt = pair([[1.0, 2.0], [3.0, 4.0]])
    upstream = np.array([[1.0, -1.0], [0.5, 2.0]])
    (x * x).backward(upstream)
    (xt * xt).backward(torch.tensor(upstream))
    close(x.grad, xt.grad)
    y, yt = pair([1.0, 2.0])
    (y.exp()).backward(tg.Tensor(np.array([2.0, 3.0])))
    (yt.exp()).backward(torch.tensor([2.0, 3.0], dtype=torch.float64))
    close(y.grad, yt.grad)


def test_long_chain_backward_is_iterative():
    x = tg.Tensor(np.array([1.0]), requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.000001
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.000001**100_000], rtol=1e-9)


def test_long_chain_through_tg_grad():
    x = tg.Tensor(np.array([1.0]), requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.000001
    (grad,) = tg.grad(y.sum(), [x])
    np.testing.assert_allclose(grad.numpy(), [1.000001**100_000], rtol=1e-9)


def test_deep_chain_second_order():
    """Both the create_graph pass and the pass through it are deeper than Python's recursion
    limit."""
    x, xt = pair([0.3])
    y, yt = x, xt
    for _ in range(1500):
        y = (y * 1.001).tanh() + 0.001
        yt = (yt * 1.001).tanh() + 0.001
    (grad,) = tg.grad(y.sum(), [x], create_graph=True)
    (grad_t,) = torch.autograd.grad(yt.sum(), [xt], create_graph=True)
    close(grad, grad_t)
    (second,) = tg.grad(grad.sum(), [x])
    (second_t,) = torch.autograd.grad(grad_t.sum(), [xt])
    close(second, second_t)


# -- saved buffers are released -----------------------------------------------------------------


class SaveTemporary(tg.Function):
    """x * x, saving a temporary tensor (2 x) that nothing else holds."""

    temporaries: ClassVar[list] = []

    @staticmethod
    def forward(ctx, x):
        temporary = x * 2
        SaveTemporary.temporaries.append(weakref.ref(temporary))
        ctx.save_for_backward(temporary)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (temporary,) = ctx.saved_tensors
        return grad_output * temporary


def test_custom_function_saved_tensor_is_freed_after_backward():
    SaveTemporary.temporaries.clear()
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    loss = SaveTemporary.apply(x).sum()
    gc.collect()
    assert SaveTemporary.temporaries[0]() is not None
    loss.backward()
    gc.collect()
    assert SaveTemporary.temporaries[0]() is None
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    assert loss is not None  # the graph itself is still alive


def test_custom_function_saved_tensor_is_kept_with_retain_graph():
    SaveTemporary.temporaries.clear()
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    loss = SaveTemporary.apply(x).sum()
    loss.backward(retain_graph=True)
    gc.collect()
    assert SaveTemporary.temporaries[0]() is not None
    loss.backward()
    gc.collect()
    assert SaveTemporary.temporaries[0]() is None
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda x: x.relu(), id="relu-mask"),
        pytest.param(lambda x: x.abs(), id="abs-sign"),
        pytest.param(lambda x: x.max(axis=0), id="max-share"),
        pytest.param(lambda x: tg.maximum(x, 0.5), id="maximum-share"),
        pytest.param(lambda x: x.clip(-1.0, 1.0), id="clip-mask"),
    ],
)
def test_op_saved_array_is_freed_after_backward(make):
    x = tg.Tensor(np.array([[0.5, -1.5], [2.0, -0.1]]), requires_grad=True)
    out = make(x)
    (saved,) = [value for value in out.grad_fn.saved_tensors if value is not None]
    reference = weakref.ref(saved)
    del saved
    gc.collect()
    assert reference() is not None
    out.sum().backward()
    gc.collect()
    assert reference() is None


def test_tg_grad_releases_buffers_unless_retained():
    SaveTemporary.temporaries.clear()
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    loss = SaveTemporary.apply(x).sum()
    tg.grad(loss, [x], retain_graph=True)
    gc.collect()
    assert SaveTemporary.temporaries[0]() is not None
    tg.grad(loss, [x])
    gc.collect()
    assert SaveTemporary.temporaries[0]() is None


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


# -- custom Function ----------------------------------------------------------------------------


class ScaledExp(tg.Function):
    """out = scale * exp(x) * y, with a plain-number argument."""

    @staticmethod
    def forward(ctx, x, y, scale):
        out = x.exp() * y * scale
        ctx.save_for_backward(out, y)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad_output):
        out, y = ctx.saved_tensors
        return grad_output * out, grad_output * out / y, None


def test_custom_function_against_torch():
    x, xt = pair([0.5, -1.0])
    y, yt = pair([2.0, 3.0])
    out = ScaledExp.apply(x, y, 1.5)
    assert out.requires_grad
    assert not out.is_leaf
    (out * out).sum().backward()
    expected = xt.exp() * yt * 1.5
    (expected * expected).sum().backward()
    close(out, expected)
    close(x.grad, xt.grad)
    close(y.grad, yt.grad)


def test_custom_function_needs_input_grad_and_constants():
    seen = []

    class Recorder(tg.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append(ctx.needs_input_grad)
            return a * b

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2, None

    x = tg.Tensor([1.0], requires_grad=True)
    Recorder.apply(x, tg.Tensor([3.0])).sum().backward()
    assert seen == [(True, False)]
    np.testing.assert_allclose(x.grad.numpy(), [2.0])
    with tg.no_grad():
        assert not Recorder.apply(x, x).requires_grad


def test_custom_function_forward_is_not_recorded():
    class Inspect(tg.Function):
        @staticmethod
        def forward(ctx, a):
            inner = a * 2
            assert not inner.requires_grad
            return inner

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2

    x = tg.Tensor([1.0], requires_grad=True)
    Inspect.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0])


class Cube(tg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x * x


def test_custom_function_with_create_graph():
    x = tg.Tensor(np.array([2.0, -1.0]), requires_grad=True)
    (first,) = tg.grad(Cube.apply(x).sum(), [x], create_graph=True)
    assert first.requires_grad
    np.testing.assert_allclose(first.numpy(), [12.0, 3.0])
    (second,) = tg.grad(first.sum(), [x])
    np.testing.assert_allclose(second.numpy(), [12.0, -6.0])


def test_custom_function_wrong_gradient_count_is_an_error():
    class TooMany(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    x = tg.Tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"TooMany.*2 gradients.*1 input"):
        TooMany.apply(x).sum().backward()


def test_custom_function_wrong_gradient_shape_names_the_op():
    class BadShape(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad_output):
            return tg.Tensor(np.ones((3, 3)))

    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"BadShape.*\(3, 3\).*\(2,\)"):
        BadShape.apply(x).sum().backward()


def test_custom_function_saved_tensor_modified_in_place_is_an_error():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    middle = x * 1
    out = Cube.apply(middle)
    middle.add_(1.0)
    with pytest.raises(RuntimeError, match="in-place"):
        out.sum().backward()


# -- in-place operations ------------------------------------------------------------------------


def test_inplace_on_a_saved_input_makes_backward_raise_naming_the_op():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y.log()
    y.mul_(2)
    with pytest.raises(RuntimeError, match=r"Log.*in-place"):
        z.sum().backward()


def test_inplace_on_a_saved_output_makes_backward_raise_naming_the_op():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1.0)
    with pytest.raises(RuntimeError, match=r"Exp.*in-place"):
        y.sum().backward()


def test_inplace_through_a_view_is_detected():
    x = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    z = y.log()
    with tg.no_grad():
        y[0:2].mul_(2)
    with pytest.raises(RuntimeError, match=r"Log.*in-place"):
        z.sum().backward()


@pytest.mark.parametrize(
    "view",
    [
        pytest.param(lambda t: t[0:2], id="getitem-of-leaf"),
        pytest.param(lambda t: t.reshape(3), id="reshape-of-leaf"),
        pytest.param(lambda t: (t * 1)[1:], id="getitem-of-non-leaf"),
        pytest.param(lambda t: (t * 1).T, id="transpose-of-non-leaf"),
    ],
)
def test_inplace_on_a_view_that_requires_grad_is_refused(view):
    """Its new node would not reach the viewed tensor's gradient (and a leaf's data would
    change under its gradient): refused, instead of silently wrong gradients."""
    x = tg.Tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Mul in place.*view"):
        view(x).mul_(2.0)
    np.testing.assert_array_equal(x.numpy(), [1.0, -2.0, 3.0])


@pytest.mark.parametrize(
    "modify",
    [
        pytest.param(lambda t: t.relu_(), id="relu_"),
        pytest.param(lambda t: t.add_(1.0), id="add_"),
        pytest.param(lambda t: t.mul_(2.0), id="mul_"),
        pytest.param(lambda t: t.zero_(), id="zero_"),
        pytest.param(lambda t: t.clamp_(0.0, 1.0), id="clamp_"),
    ],
)
def test_inplace_on_a_leaf_that_requires_grad_is_refused(modify):
    x = tg.Tensor([1.0, -2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        modify(x)
    np.testing.assert_array_equal(x.numpy(), [1.0, -2.0])


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        pytest.param(lambda t: t.relu_(), lambda t: t.relu_(), id="relu_"),
        pytest.param(lambda t: t.add_(1.5), lambda t: t.add_(1.5), id="add_"),
        pytest.param(lambda t: t.mul_(-2.0), lambda t: t.mul_(-2.0), id="mul_"),
        pytest.param(lambda t: t.zero_(), lambda t: t.zero_(), id="zero_"),
        pytest.param(lambda t: t.clamp_(-1.0, 1.0), lambda t: t.clamp_(-1.0, 1.0), id="clamp_"),
    ],
)
def test_inplace_on_a_non_leaf_gives_torch_gradients(ours, theirs):
    x, xt = pair([0.5, -2.0, 3.0])
    w, wt = pair([1.0, 2.0, -1.5])
    y, yt = x * w, xt * wt
    assert ours(y) is y
    theirs(yt)
    (y * y * w).sum().backward()
    (yt * yt * wt).sum().backward()
    close(y, yt)
    close(x.grad, xt.grad)
    close(w.grad, wt.grad)


def test_inplace_with_a_tensor_operand_gives_torch_gradients():
    x, xt = pair([0.5, -2.0])
    other, other_t = pair([3.0, 4.0])
    y, yt = x.exp(), xt.exp()
    y = y * 1
    yt = yt * 1
    y.mul_(other)
    yt.mul_(other_t)
    y.add_(other)
    yt.add_(other_t)
    y.sum().backward()
    yt.sum().backward()
    close(x.grad, xt.grad)
    close(other.grad, other_t.grad)


def test_consumers_recorded_before_an_inplace_op_keep_the_old_history():
    # z consumed y before y.mul_(5): z's gradient must not pass through the in-place op.
    x, xt = pair([1.0, 2.0])
    for engine_x in (x, xt):
        y = engine_x * 2
        z = y * 3
        y.mul_(5)
        w = y * 7
        y.add_(1)
        (z.sum() + w.sum() + y.sum()).backward()
    close(x.grad, xt.grad)  # 6 + 5 * 7 * 2 + 5 * 2 = 86 per element
    np.testing.assert_allclose(x.grad.numpy(), [86.0, 86.0])


def test_inplace_on_a_leaf_is_allowed_under_no_grad():
    x = tg.Tensor([1.0, -2.0], requires_grad=True)
    with tg.no_grad():
        x.mul_(2.0)
        x.relu_()
        x.add_(1.0)
    np.testing.assert_array_equal(x.numpy(), [3.0, 1.0])
    assert x.is_leaf
    assert x.requires_grad
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 2.0])


def test_inplace_under_no_grad_on_a_saved_tensor_is_still_detected():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    with tg.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match=r"Mul.*in-place"):
        loss.backward()


# -- hooks ---------------------------------------------------------------------------------------


def test_hook_is_called_with_the_gradient():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = []
    y.register_hook(lambda grad: seen.append(grad.numpy().copy()))
    (y * y).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], [6.0, 12.0])


def test_hook_on_a_leaf():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda grad: seen.append(grad.numpy().copy()))
    (x * 5).sum().backward()
    np.testing.assert_allclose(seen[0], [5.0, 5.0])
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_hook_replacement_is_used_and_handle_removes_it():
    x, xt = pair([1.0, 2.0])
    middle, middle_t = x * 2, xt * 2
    handle = middle.register_hook(lambda grad: grad * 10)
    handle_t = middle_t.register_hook(lambda grad: grad * 10)
    (middle * middle).sum().backward(retain_graph=True)
    (middle_t * middle_t).sum().backward(retain_graph=True)
    close(x.grad, xt.grad)
    np.testing.assert_allclose(x.grad.numpy(), [80.0, 160.0])
    handle.remove()
    handle_t.remove()
    x.grad = None
    xt.grad = None
    (middle * middle).sum().backward()
    (middle_t * middle_t).sum().backward()
    close(x.grad, xt.grad)
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0])


def test_hooks_run_in_registration_order():
    x = tg.Tensor([1.0], requires_grad=True)
    y = x * 1
    y.register_hook(lambda grad: grad + 1)
    y.register_hook(lambda grad: grad * 10)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [20.0])


def test_hook_on_a_tensor_without_grad_is_an_error():
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.Tensor([1.0]).register_hook(lambda grad: grad)


def test_hook_returning_the_wrong_shape_is_an_error():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.register_hook(lambda grad: tg.Tensor(np.ones(3)))
    with pytest.raises(RuntimeError, match=r"\(3,\).*\(2,\)"):
        y.sum().backward()


# -- anomaly mode -------------------------------------------------------------------------------


def make_nan_gradient(x):
    return (x.sqrt() * 0).sum()  # d sqrt at 0 is inf; times the 0 upstream gives NaN


def test_detect_anomaly_names_the_op_and_the_forward_line():
    x = tg.Tensor([0.0, 1.0], requires_grad=True)
    with tg.detect_anomaly():
        loss = make_nan_gradient(x)
        with pytest.raises(RuntimeError, match="Sqrt") as error:
            loss.backward()
    message = str(error.value)
    assert "make_nan_gradient" in message
    assert "test_autograd.py" in message
    assert "x.sqrt()" in message


def test_detect_anomaly_catches_inf():
    x = tg.Tensor([0.0], requires_grad=True)
    with tg.detect_anomaly():
        loss = x.sqrt().sum()
        with pytest.raises(RuntimeError, match="Sqrt"):
            loss.backward()


def test_without_anomaly_mode_nan_gradients_pass_silently():
    x = tg.Tensor([0.0, 1.0], requires_grad=True)
    make_nan_gradient(x).backward()
    assert np.isnan(x.grad.numpy()[0])


def test_detect_anomaly_restores_the_previous_mode():
    x = tg.Tensor([0.0], requires_grad=True)
    with pytest.raises(RuntimeError), tg.detect_anomaly():
        x.sqrt().sum().backward()
    loss = x.sqrt().sum()
    loss.backward()
    assert np.isinf(x.grad.numpy()[0])


# -- grad mode ----------------------------------------------------------------------------------


def test_no_grad_context_records_nothing():
    x = tg.Tensor([1.0], requires_grad=True)
    with tg.no_grad():
        assert not tg.is_grad_enabled()
        y = x * 2
        assert not y.requires_grad
        assert y.is_leaf
    assert tg.is_grad_enabled()
    assert (x * 2).requires_grad


def test_no_grad_and_enable_grad_as_decorators():
    @tg.no_grad()
    def without(t):
        return t * 2

    @tg.enable_grad()
    def with_grad(t):
        return t * 2

    x = tg.Tensor([1.0], requires_grad=True)
    assert not without(x).requires_grad
    with tg.no_grad():
        assert with_grad(x).requires_grad
        assert not tg.is_grad_enabled()
    assert without.__name__ == "without"


def test_enable_grad_nested_in_no_grad():
    x = tg.Tensor([1.0], requires_grad=True)
    with tg.no_grad():
        with tg.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad


def test_grad_mode_is_restored_after_an_exception():
    with pytest.raises(ValueError, match="boom"), tg.no_grad():
        raise ValueError("boom")
    assert tg.is_grad_enabled()

    @tg.no_grad()
    def failing():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        failing()
    assert tg.is_grad_enabled()


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


# -- random graphs ------------------------------------------------------------------------------


def _flip_rows(t):
    return t[::-1] if isinstance(t, tg.Tensor) else t.flip(0)


def _where_positive(a, b):
    return tg.where(a > 0, a, b) if isinstance(a, tg.Tensor) else torch.where(a > 0, a, b)


def _maximum(a, b):
    return tg.maximum(a, b) if isinstance(a, tg.Tensor) else torch.maximum(a, b)


def _stack_sum(a, b):
    if isinstance(a, tg.Tensor):
        return tg.stack([a, b, a]).sum(axis=0)
    return torch.stack([a, b, a]).sum(0)


RANDOM_GRAPH_UNARY = [
    lambda a: (a * 0.5).exp(),
    lambda a: a.tanh(),
    lambda a: a.sigmoid(),
    lambda a: -a,
    lambda a: a.reshape(3, 2).reshape(2, 3),
    lambda a: a.T.T,
    _flip_rows,
    lambda a: a[0] + a[1] * a,
    lambda a: a.sum(axis=0, keepdims=True) * a,
    lambda a: a * a,
]
RANDOM_GRAPH_BINARY = [
    lambda a, b: a + b,
    lambda a, b: a - b,
    lambda a, b: a * b,
    _maximum,
    _where_positive,
    _stack_sum,
    lambda a, b: a @ b.T @ a * 0.1,
]


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_match_torch(seed):
    """Random DAGs (fan-out, diamonds, views, the same tensor twice in an op), two
    backward passes each (accumulation), against torch."""
    generator = np.random.default_rng(seed)
    leaves = [generator.standard_normal((2, 3)) * 0.5 for _ in range(3)]
    plan = []
    for step in range(12):
        pool_size = 3 + step
        if generator.random() < 0.5:
            plan.append(
                (
                    0,
                    int(generator.integers(len(RANDOM_GRAPH_UNARY))),
                    int(generator.integers(pool_size)),
                    None,
                )
            )
        else:
            plan.append(
                (
                    1,
                    int(generator.integers(len(RANDOM_GRAPH_BINARY))),
                    int(generator.integers(pool_size)),
                    int(generator.integers(pool_size)),
                )
            )
    weights = generator.standard_normal(3 + len(plan))

    def build(pool):
        pool = list(pool)
        for arity, op_index, first, second in plan:
            if arity == 0:
                pool.append(RANDOM_GRAPH_UNARY[op_index](pool[first]))
            else:
                pool.append(RANDOM_GRAPH_BINARY[op_index](pool[first], pool[second]))
        loss = pool[3].sum() * weights[3]
        for index in range(4, len(pool)):
            loss = loss + pool[index].sum() * weights[index]
        return loss

    ours = [tg.Tensor(leaf.copy(), requires_grad=True) for leaf in leaves]
    theirs = [torch.tensor(leaf.copy(), requires_grad=True) for leaf in leaves]
    for _ in range(2):
        build(ours).backward()
        build(theirs).backward()
    for mine, reference in zip(ours, theirs):
        if reference.grad is None:
            assert mine.grad is None
        else:
            np.testing.assert_allclose(
                mine.grad.numpy(), reference.grad.numpy(), rtol=1e-9, atol=1e-12
            )


# -- smaller semantics ----------------------------------------------------------------------------


def test_hook_under_create_graph_matches_torch():
    x, xt = pair([1.0, 2.0])
    y, yt = x * x, xt * xt
    y.register_hook(lambda grad: grad * y)
    yt.register_hook(lambda grad: grad * yt)
    (gx,) = tg.grad(y.sum(), [x], create_graph=True)
    (gxt,) = torch.autograd.grad(yt.sum(), [xt], create_graph=True)
    close(gx, gxt)
    (ggx,) = tg.grad(gx.sum(), [x])
    (ggxt,) = torch.autograd.grad(gxt.sum(), [xt])
    close(ggx, ggxt)


def test_grad_of_a_tensor_with_respect_to_itself_is_the_seed():
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (same,) = tg.grad(x, [x], grad_outputs=[np.array([3.0, 4.0])])
    np.testing.assert_allclose(same.numpy(), [3.0, 4.0])
    y = x * 3
    (seed,) = tg.grad(y.sum(), [y])
    np.testing.assert_allclose(seed.numpy(), [1.0, 1.0])


def test_backward_on_a_scalar_leaf():
    x = tg.Tensor(np.array(2.0), requires_grad=True)
    x.backward()
    assert x.grad.shape == ()
    assert x.grad.item() == 1.0


def test_backward_into_a_grad_the_user_set():
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    x.grad = tg.Tensor(np.array([10.0, 10.0]))
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [13.0, 13.0])


def test_one_element_non_scalar_backward_needs_no_gradient():
    x, xt = pair([[1.5]])
    (x * 2).backward()
    (xt * 2).backward()
    close(x.grad, xt.grad)


def test_upstream_gradient_in_another_dtype_is_cast_to_the_output_dtype():
    x = tg.Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    (x * 2).backward(np.ones(2))
    assert x.grad.dtype == np.float32
    (grad,) = tg.grad(x * 2, [x], grad_outputs=[tg.Tensor(np.ones(2))])
    assert grad.dtype == np.float32


def test_custom_function_may_return_numpy_arrays():
    class Doubler(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x.numpy() * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.numpy() * 2

    x = tg.Tensor(np.array([1.0, 3.0]), requires_grad=True)
    out = Doubler.apply(x)
    assert isinstance(out, tg.Tensor)
    (out * out).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 24.0])


def test_anomaly_report_names_a_custom_function():
    class NanGradient(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * np.nan

    x = tg.Tensor(np.array([1.0]), requires_grad=True)
    with tg.detect_anomaly():
        out = NanGradient.apply(x)
        with pytest.raises(RuntimeError, match="NanGradient") as error:
            out.sum().backward()
    assert "test_anomaly_report_names_a_custom_function" in str(error.value)


def test_custom_function_second_backward_says_to_retain_graph():
    x = tg.Tensor(np.array([1.0]), requires_grad=True)
    loss = Cube.apply(x).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=r"retain_graph=True"):
        loss.backward()


def test_create_graph_gradients_accumulate_as_a_graph():
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    for _ in range(2):
        (x**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    first = x.grad
    x.grad = None
    first.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 6 * np.array([1.0, 2.0]))


def test_a_gradient_array_the_rule_keeps_is_never_written_into():
    kept = tg.Tensor(np.array([1.0, 2.0]))

    class ReturnsKept(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad_output):
            return kept  # the same tensor every time: the engine must not add into it

    x = tg.Tensor(np.array([0.0, 0.0]), requires_grad=True)
    # The last-recorded consumer's gradient (kept's array) reaches x first.
    ((x * 3).sum() + ReturnsKept.apply(x).sum() + ReturnsKept.apply(x).sum()).backward()
    np.testing.assert_array_equal(kept.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 7.0])


def test_leaves_given_the_same_upstream_array_get_separate_gradients():
    a = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    b = tg.Tensor(np.array([3.0, 4.0]), requires_grad=True)
    (a + b).sum().backward()  # Add passes the same array to both inputs
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad.numpy()[:] = 0.0
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0])
    (a * b).sum().backward()  # accumulating into one leaf leaves the other alone
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(b.grad.numpy(), [2.0, 3.0])


def test_a_gradient_sent_again_after_a_pop_is_not_taken_as_owned():
    # A scheduler that pops a pending (owned) gradient and sends one of its own instead:
    # the engine must not then add into that array in place.
    mine = np.array([1.0, 1.0])

    class PopAndResend:
        name = "pop-and-resend"

        def run(self, graph):
            (target,) = [t for t in graph.order if t.name == "y"]
            graph.send(target, np.zeros(2), owned=True)
            graph.pop_grad(target)
            graph.send(target, mine)  # not owned
            graph.send(target, np.array([2.0, 2.0]))  # must not be added into `mine`
            graph.run_sequential()

    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * 3
    y.name = "y"
    (y * y).sum().backward(scheduler=PopAndResend())
    np.testing.assert_array_equal(mine, [1.0, 1.0])
    # 3 * (2y + mine + 2) with y = [3, 6]
    np.testing.assert_array_equal(x.grad.numpy(), [27.0, 45.0])
