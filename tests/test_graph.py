"""The backward graph and its walk (autograd/graph.py, autograd/order.py): graph shapes,
retain_graph and accumulation, hooks, ownership of gradient arrays, random graphs against
PyTorch (float64).
"""

import numpy as np
import pytest
import torch
from helpers import check_op, close, close_twice, pair

import tinygrad_ops as tg

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
    close_twice(y, x, yt, xt)


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
    close_twice(y, x, yt, xt)


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


# -- end to end: a polynomial, and a composite against PyTorch ----------------------------------


def test_polynomial_gradient():
    x = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * x.numpy() ** 2)


def test_check_op_on_a_composite():
    check_op(
        lambda a, b: ((a @ b).tanh() * 2 + a.sum(axis=1, keepdims=True)).exp().mean(),
        lambda a, b: ((a @ b).tanh() * 2 + a.sum(1, keepdim=True)).exp().mean(),
        (2, 3),
        (3, 4),
    )
