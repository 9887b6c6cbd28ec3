"""The Tensor methods that hand values out (tinygrad_ops/tensor_convert.py): detach, item."""

import numpy as np
import pytest

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
