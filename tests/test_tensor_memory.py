"""What a Tensor holds (tinygrad_ops/tensor.py): its own copy or the caller's array, the
checked `.data` and `.grad` assignments, and hooks that may not change a gradient's kind."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg

# -- Tensor(array) copies, from_numpy shares (torch.tensor / torch.from_numpy) ------------------


def test_tensor_of_an_array_keeps_its_own_copy():
    array = np.array([1.0, 2.0], dtype=np.float32)
    tensor = tg.Tensor(array)
    array[0] = 100.0
    assert tensor.numpy()[0] == 1.0
    tensor.add_(1.0)
    assert array[1] == 2.0  # an in-place op never writes into the caller's array


def test_reusing_the_input_buffer_between_forward_and_backward_keeps_the_gradient():
    buffer = np.array([1.0, 2.0, 3.0])
    w = tg.Tensor([0.5, -1.0, 2.0], requires_grad=True, dtype=np.float64)
    loss = (w * tg.Tensor(buffer)).sum()
    buffer[:] = 0.0  # the next batch is loaded into the same buffer before backward
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0, 3.0])


def test_from_numpy_shares_memory_both_ways():
    array = np.zeros(3, dtype=np.float64)
    tensor = tg.from_numpy(array)
    array[0] = 7.0
    tensor.add_(1.0)
    np.testing.assert_array_equal(array, [8.0, 1.0, 1.0])
    np.testing.assert_array_equal(tensor.numpy(), array)
    assert tensor.dtype == np.float64
    assert "from_numpy" in tg.__all__


@pytest.mark.parametrize("value", [[1.0, 2.0], 3.0, np.float64(1.0)])
def test_from_numpy_takes_only_arrays(value):
    with pytest.raises(TypeError, match=r"from_numpy expects a numpy\.ndarray"):
        tg.from_numpy(value)
    with pytest.raises(TypeError, match=r"expected np\.ndarray"):
        torch.from_numpy(value)


# -- .grad assignments are checked (as PyTorch) ----------------------------------------------------


@pytest.mark.parametrize(
    ("grad", "message"),
    [
        (np.ones((2, 3), dtype=np.float32), "assign a gradient of (shape|size)"),
        (np.ones(3, dtype=np.float32), "assign a gradient of (shape|size)"),
        (np.ones((3, 2), dtype=np.float64), "assign a gradient with dtype"),
    ],
)
def test_assigning_a_grad_of_another_shape_or_dtype_raises(grad, message):
    ours = tg.Tensor(np.zeros((3, 2)), dtype=np.float32, requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        ours.grad = tg.Tensor(grad, dtype=grad.dtype)
    theirs = torch.zeros((3, 2), requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        theirs.grad = torch.from_numpy(grad)
    assert ours.grad is None


def test_assigning_a_non_tensor_grad_raises():
    ours = tg.Tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError, match="expected to be a Tensor or None"):
        ours.grad = np.ones(1, dtype=np.float32)


def test_a_wrong_shape_grad_can_no_longer_reach_the_optimizer():
    parameter = tg.Tensor(np.ones((2, 2), dtype=np.float32), requires_grad=True)
    optimizer = tg.optim.SGD([parameter], lr=0.1)
    with pytest.raises(RuntimeError, match="assign a gradient of shape"):
        parameter.grad = tg.Tensor([1.0, 2.0])  # was broadcast over the parameter
    parameter.grad = tg.Tensor(np.full((2, 2), 2.0, dtype=np.float32))
    optimizer.step()
    np.testing.assert_allclose(parameter.numpy(), np.full((2, 2), 0.8))
    optimizer.zero_grad()
    assert parameter.grad is None


# -- hooks may not change the gradient's shape or dtype -------------------------------------------


@pytest.mark.parametrize(
    ("replace", "message"),
    [
        (lambda grad: grad.astype(np.float64), "changed the type"),
        (lambda grad: grad.sum(), "changed the size"),
    ],
)
def test_a_hook_that_changes_the_gradient_kind_raises(replace, message):
    for leaf in (True, False):
        x = tg.Tensor([1.0, 2.0], requires_grad=True)
        target = x if leaf else x * 2
        target.register_hook(replace)
        with pytest.raises(RuntimeError, match=message):
            (target * 3).sum().backward()


def test_torch_refuses_a_hook_that_changes_the_dtype_too():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda grad: grad.double())
    with pytest.raises(RuntimeError, match="changed the type of value"):
        (x * 3).sum().backward()


# -- .data assignments --------------------------------------------------------------------------


def test_integer_data_on_a_tensor_that_requires_grad_is_refused():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="must be floating point"):
        x.data = np.array([1, 2])
    assert x.dtype == np.float32
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="must be floating point"):
        xt.data = torch.tensor([1, 2])


def test_data_assignment_takes_float_arrays_and_tensors():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    x.data = np.array([3.0, 4.0, 5.0])  # PyTorch allows another shape or float dtype too
    assert x.shape == (3,)
    x.data = tg.Tensor([6.0])
    np.testing.assert_array_equal(x.numpy(), [6.0])
    counts = tg.Tensor(np.array([1, 2]))
    counts.data = np.array([3, 4])  # no grad: any numeric array
    with pytest.raises(TypeError, match="numpy array or a Tensor"):
        counts.data = [1, 2]
