"""In-place operators (tinygrad_ops/autograd/inplace.py): `+= -= *= /=` change the tensor
itself, with version counters, PyTorch's leaf rule and PyTorch's casting rule."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg


def test_manual_sgd_under_no_grad_updates_the_parameter_itself():
    p = tg.Tensor([1.0, 2.0], requires_grad=True)
    (p * p).sum().backward()
    same = p
    with tg.no_grad():
        p -= 0.5 * p.grad
    assert p is same
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0])
    assert p.is_leaf
    assert p.requires_grad


@pytest.mark.parametrize(
    "update",
    [
        lambda t: t.__iadd__(1.0),
        lambda t: t.__isub__(1.0),
        lambda t: t.__imul__(2.0),
        lambda t: t.__itruediv__(2.0),
    ],
)
def test_leaf_that_requires_grad_refuses_in_place_outside_no_grad(update):
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    message = "a leaf Variable that requires grad is being used in an in-place operation."
    with pytest.raises(RuntimeError, match=message):
        update(x)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=message):
        update(xt)


def test_version_counters_count_like_torch():
    ours, theirs = tg.Tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    versions = []
    for tensor in (ours, theirs):
        tensor += 1
        tensor *= 2
        tensor -= tg.Tensor([1.0, 1.0]) if tensor is ours else torch.tensor([1.0, 1.0])
        tensor /= 4
        versions.append(tensor._version[0] if tensor is ours else tensor._version)
    assert versions[0] == versions[1] == 4
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def test_non_leaf_in_place_operators_are_recorded_like_torch():
    generator = np.random.default_rng(0)
    x_values = generator.standard_normal((3, 4))
    w_values = generator.standard_normal((4,))

    def run(module, x, w):
        y = x * 2
        y += x
        y *= w
        y -= 1.5
        y /= w * w + 1
        y += 3
        return (y * y).sum()

    x = tg.Tensor(x_values, requires_grad=True, dtype=np.float64)
    w = tg.Tensor(w_values, requires_grad=True, dtype=np.float64)
    run(tg, x, w).backward()
    xt = torch.tensor(x_values, requires_grad=True)
    wt = torch.tensor(w_values, requires_grad=True)
    run(torch, xt, wt).backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-10)


def test_in_place_operator_on_a_saved_tensor_makes_backward_refuse():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = (y * y).sum()  # saves y
    y += 1
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.backward()


@pytest.mark.parametrize(
    ("dtype", "torch_dtype", "value", "result"),
    [
        (np.int64, torch.int64, 1.5, "Float"),
        (np.int32, torch.int32, 0.5, "Float"),
        (np.bool_, torch.bool, 1, "Long"),
    ],
)
def test_in_place_result_that_cannot_be_cast_raises_as_torch(dtype, torch_dtype, value, result):
    ours = tg.Tensor(np.array([1, 0], dtype=dtype))
    theirs = torch.tensor([1, 0], dtype=torch_dtype)
    for tensor in (ours, theirs):
        with pytest.raises(RuntimeError, match=f"result type {result} can't be cast"):
            tensor += value
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours._version[0] == 0


def test_integer_true_division_in_place_raises_as_torch():
    ours = tg.Tensor(np.array([4, 2], dtype=np.int64))
    with pytest.raises(RuntimeError, match=r"result type Float can.t be cast .* type Long"):
        ours /= 2
    theirs = torch.tensor([4, 2])
    with pytest.raises(RuntimeError, match=r"result type Float can.t be cast .* type Long"):
        theirs /= 2


def test_in_place_result_is_cast_to_the_tensors_own_dtype():
    ours = tg.Tensor(np.array([1.0, 2.0], dtype=np.float32))
    ours += tg.Tensor(np.array([0.5, 0.25]), dtype=np.float64)
    assert ours.dtype == np.float32
    counts = tg.Tensor(np.array([1, 2], dtype=np.int32))
    counts += tg.Tensor(np.array([3, 4], dtype=np.int64))
    assert counts.dtype == np.int32
    np.testing.assert_array_equal(counts.numpy(), [4, 6])


def test_unsupported_operand_is_a_type_error():
    x = tg.Tensor([1.0])
    with pytest.raises(TypeError):
        x += object()
