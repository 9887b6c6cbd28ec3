"""What a graph keeps after backward (tinygrad_ops/ops/base.py `released_inputs`): no saved
arrays and no activations, so holding the losses of many steps keeps memory flat."""

import gc
import tracemalloc
import weakref
from typing import ClassVar

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional name)
from tinygrad_ops import viz


def mlp_step(model, optimizer, features, labels):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(features), labels)
    loss.backward()
    optimizer.step()
    return loss


def test_holding_the_losses_of_many_steps_keeps_memory_flat():
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(512, 512), tg.nn.ReLU(), tg.nn.Linear(512, 10))
    optimizer = tg.optim.SGD(model.parameters(), lr=0.01)
    generator = np.random.default_rng(0)
    losses = []

    def steps(count):
        for _ in range(count):
            features = tg.Tensor(generator.standard_normal((64, 512)).astype(np.float32))
            labels = tg.Tensor(generator.integers(0, 10, 64))
            losses.append(mlp_step(model, optimizer, features, labels))

    tracemalloc.start()
    try:
        steps(2)  # the gradients and caches alive at both measurements are traced too
        before = tracemalloc.get_traced_memory()[0]
        steps(10)
        growth = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # One activation of this net is 64 x 512 x 4 bytes = 128 KiB; PyTorch keeps ~56 KiB a
    # loss on a net like it (its nodes). Before the release dropped the inputs: ~400 KiB.
    assert growth / 10 < 32 * 1024, f"{growth / 10 / 1024:.1f} KiB kept per held loss"


def test_a_released_input_keeps_shape_dtype_name_and_history_but_not_values():
    x = tg.Tensor(np.ones((32, 32)), requires_grad=True)
    hidden = x * 2
    hidden.name = "hidden"
    loss = hidden.exp().sum()
    hidden_node = hidden.grad_fn
    del hidden
    loss.backward()
    husk = loss.grad_fn.inputs[0].grad_fn.inputs[0]
    assert (husk.shape, husk.dtype, husk.name) == ((32, 32), np.float64, "hidden")
    assert husk.grad_fn is hidden_node
    assert hidden_node.inputs[0] is x  # a parameter stays: gradients must still reach it
    with pytest.raises(RuntimeError, match="were freed when backward released the graph"):
        husk.numpy()


def test_a_tensor_with_two_consumers_gets_one_husk_and_the_graph_still_draws():
    x = tg.Tensor(np.ones((32, 32)), requires_grad=True)
    hidden = x.tanh()
    loss = (hidden.exp() + hidden.sigmoid()).sum()
    before = viz.trace(loss).text()
    del hidden
    loss.backward()
    add = loss.grad_fn.inputs[0].grad_fn
    assert add.inputs[0].grad_fn.inputs[0] is add.inputs[1].grad_fn.inputs[0]
    assert viz.trace(loss).text() == before
    viz.draw(loss)  # the picture needs shapes, names and edges only


def test_retain_graph_keeps_everything():
    x = tg.Tensor(np.ones((32, 32)), requires_grad=True)
    hidden = x * 2
    loss = hidden.exp().sum()
    loss.backward(retain_graph=True)
    assert loss.grad_fn.inputs[0].grad_fn.inputs[0] is hidden
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.exp(2.0) * np.ones((32, 32)))


def test_a_second_backward_through_nodes_that_saved_nothing_still_reaches_the_leaf():
    x = tg.Tensor(np.ones((32, 32)), requires_grad=True)
    loss = ((x + 1) + 2).sum()  # Add saves nothing: a second backward works, as in PyTorch
    loss.backward()
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((32, 32), 2.0))


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
