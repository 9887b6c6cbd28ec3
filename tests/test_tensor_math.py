"""The Tensor methods of the elementwise functions (tinygrad_ops/tensor_math.py): clip and its
in-place forms need a bound, as PyTorch's; PyTorch's method names against PyTorch."""

import pytest
import torch
from helpers import check_op

import tinygrad_ops as tg


@pytest.mark.parametrize("method", ["clip", "clamp", "clamp_", "clip_"])
def test_clip_without_bounds_is_an_error(method):
    x = tg.Tensor([1.0, -1.0])
    with pytest.raises(ValueError, match=rf"{method}: at least one of low"):
        getattr(x, method)()
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        getattr(torch.tensor([1.0, -1.0]), method)()


# PyTorch's method names for the elementwise functions and operators, and softmax along a
# dim, against PyTorch in float64 (values and gradients).
@pytest.mark.parametrize(
    ("name", "ours", "theirs", "low"),
    [
        ("pow", lambda x: x.pow(3), lambda x: x.pow(3), None),
        ("pow-tensor", lambda x: x.pow(x), lambda x: x.pow(x), 0.5),
        ("square", lambda x: x.square(), lambda x: x.square(), None),
        ("reciprocal", lambda x: x.reciprocal(), lambda x: x.reciprocal(), 0.5),
        ("rsqrt", lambda x: x.rsqrt(), lambda x: x.rsqrt(), 0.5),
        ("add-alpha", lambda x: x.add(x * x, alpha=2), lambda x: x.add(x * x, alpha=2), None),
        ("sub-alpha", lambda x: x.sub(1.5, alpha=3), lambda x: x.sub(1.5, alpha=3), None),
        ("mul", lambda x: x.mul(x), lambda x: x.mul(x), None),
        ("neg", lambda x: x.neg(), lambda x: x.neg(), None),
        ("softmax", lambda x: x.softmax(1), lambda x: x.softmax(1), None),
        ("softmax-dim", lambda x: x.softmax(dim=-2), lambda x: x.softmax(dim=-2), None),
        ("log_softmax", lambda x: x.log_softmax(0), lambda x: x.log_softmax(0), None),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_pytorch_method_names_match_torch(name, ours, theirs, low):
    check_op(ours, theirs, (3, 4), low=low)


def test_softmax_method_needs_a_dim_as_pytorch():
    with pytest.raises(TypeError):
        tg.Tensor([1.0, 2.0]).softmax()
    with pytest.raises(TypeError, match="softmax"):
        tg.Tensor([1.0, 2.0]).softmax(True)
