"""The Tensor methods that hand values out (tinygrad_ops/tensor_convert.py): detach, item."""

import numpy as np
import pytest
import torch

import tinygrad_ops as tg


def test_detach_shares_data_and_leaves_the_tape():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    detached = y.detach()
    assert detached.is_leaf
    assert not detached.requires_grad
    assert np.shares_memory(detached.numpy(), y.numpy())


def test_item_of_a_many_element_tensor_is_an_error():
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        tg.Tensor(np.zeros((2, 3))).item()


@pytest.mark.parametrize(
    ("method", "dtype"), [("long", "int64"), ("int", "int32"), ("bool", "bool")]
)
def test_integer_and_bool_conversions_carry_no_gradient_as_pytorch(method, dtype):
    values = np.array([1.5, -2.0, 0.0])
    x = tg.Tensor(values, requires_grad=True)
    theirs = getattr(torch.tensor(values, requires_grad=True), method)()
    ours = getattr(x, method)()
    assert ours.dtype == np.dtype(dtype)
    assert ours.requires_grad is theirs.requires_grad is False
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    (x * ours).sum().backward()  # through the product only, not back through the conversion
    np.testing.assert_array_equal(x.grad.numpy(), ours.numpy())


def test_to_converts_dtypes_accepts_the_cpu_and_refuses_other_devices():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    assert x.to("cpu") is x
    assert x.to(np.float32) is x
    assert x.to(None) is x
    assert x.to(np.float64).dtype == np.float64
    assert x.to(dtype="float16").dtype == np.float16
    assert x.to("cpu", np.float64).dtype == np.float64
    copied = x.to("cpu", copy=True)
    assert copied is not x
    assert not np.shares_memory(copied.numpy(), x.numpy())
    with pytest.raises(ValueError, match="no device 'cuda'"):
        x.to("cuda")


def test_clone_copies_and_stays_on_the_tape_as_pytorch():
    values = np.array([1.0, -2.0, 3.0])
    x = tg.Tensor(values, requires_grad=True)
    copy = x.clone()
    assert not np.shares_memory(copy.numpy(), x.numpy())
    assert copy.dtype == x.dtype
    (copy * copy).sum().backward()
    xt = torch.tensor(values, requires_grad=True)
    (xt.clone() * xt.clone()).sum().backward()  # each clone passes the gradient through
    np.testing.assert_allclose(x.grad.numpy(), 2 * values)
    np.testing.assert_allclose(xt.grad.numpy(), 2 * values)
