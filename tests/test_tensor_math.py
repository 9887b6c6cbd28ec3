"""The Tensor methods of the elementwise functions (tinygrad_ops/tensor_math.py): clip and its
in-place forms need a bound, as PyTorch's."""

import pytest
import torch

import tinygrad_ops as tg


@pytest.mark.parametrize("method", ["clip", "clamp", "clamp_", "clip_"])
def test_clip_without_bounds_is_an_error(method):
    x = tg.Tensor([1.0, -1.0])
    with pytest.raises(ValueError, match=rf"{method}: at least one of low"):
        getattr(x, method)()
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        getattr(torch.tensor([1.0, -1.0]), method)()
