"""Errors PyTorch code can catch: for each refusal, the class PyTorch raises (IndexError,
RuntimeError, NotImplementedError, ValueError, TypeError) is read from torch itself, and ours
must be an instance of it, with a message naming the op. The engine's classes also subclass
numpy's (ValueError, TypeError), so that `except ValueError` keeps working."""

import numpy as np
import pytest
import torch
import torch.nn.functional as torch_F  # noqa: N812 (PyTorch's conventional alias)

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812
from tinygrad_ops.ops.checks import ArgumentError, AxisError, DtypeError, ShapeError


def ints(values):
    return np.array(values, dtype=np.int64)


def both(x):
    """The same data as a tinygrad_ops and a torch tensor."""
    return tg.Tensor(x), torch.tensor(x)


ONES23 = np.ones((2, 3))
ONES4 = np.ones(4)

# (id, the op's name in the message, ours(tg, F), theirs(torch, F))
CASES = [
    ("sum_axis", "sum", lambda t, f: t.ones(2, 3).sum(5), lambda t, f: t.ones(2, 3).sum(5)),
    ("cumsum_axis", "cumsum", lambda t, f: t.ones(3).cumsum(1), lambda t, f: t.ones(3).cumsum(1)),
    (
        "softmax_axis",
        "softmax",
        lambda t, f: t.ones(3).softmax(2),
        lambda t, f: t.ones(3).softmax(2),
    ),
    (
        "squeeze_axis",
        "squeeze",
        lambda t, f: t.ones(3).squeeze(2),
        lambda t, f: t.ones(3).squeeze(2),
    ),
    (
        "unsqueeze_axis",
        "expand_dims",
        lambda t, f: t.ones(3).unsqueeze(3),
        lambda t, f: t.ones(3).unsqueeze(3),
    ),
    (
        "transpose_axis",
        "transpose",
        lambda t, f: t.ones(3).transpose(0, 2),
        lambda t, f: t.ones(3).transpose(0, 2),
    ),
    (
        "movedim_axis",
        "movedim",
        lambda t, f: t.ones(2, 3).movedim(0, 5),
        lambda t, f: t.ones(2, 3).movedim(0, 5),
    ),
    (
        "stack_axis",
        "stack",
        lambda t, f: t.stack([t.ones(2)], 5),
        lambda t, f: t.stack([t.ones(2)], 5),
    ),
    ("amax_empty", "max", lambda t, f: t.zeros(0).amax(0), lambda t, f: t.zeros(0).amax(0)),
    (
        "argmax_empty_dim",
        "argmax",
        lambda t, f: t.zeros(0, 3).argmax(0),
        lambda t, f: t.zeros(0, 3).argmax(0),
    ),
    (
        "argmax_empty",
        "argmax",
        lambda t, f: t.zeros(0, 3).argmax(),
        lambda t, f: t.zeros(0, 3).argmax(),
    ),
    (
        "max_dim_empty",
        "max",
        lambda t, f: t.zeros(2, 0).max(1),
        lambda t, f: t.zeros(2, 0).max(1),
    ),
    ("trace_vector", "trace", lambda t, f: t.ones(3).trace(), lambda t, f: t.ones(3).trace()),
    ("item_many", "item", lambda t, f: t.ones(3).item(), lambda t, f: t.ones(3).item()),
    ("bool_many", "truth value", lambda t, f: bool(t.ones(3)), lambda t, f: bool(t.ones(3))),
    (
        "compare_broadcast",
        "comparison",
        lambda t, f: t.ones(3) < t.ones(4),
        lambda t, f: t.ones(3) < t.ones(4),
    ),
    (
        "batch_norm_stats",
        "batch_norm",
        lambda t, f: f.batch_norm(t.ones(2, 3), t.ones(4), t.ones(4), training=False),
        lambda t, f: f.batch_norm(t.ones(2, 3), t.ones(4), t.ones(4), training=False),
    ),
    (
        "group_norm_groups",
        "group_norm",
        lambda t, f: f.group_norm(t.ones(2, 6, 3), 4),
        lambda t, f: f.group_norm(t.ones(2, 6, 3), 4),
    ),
    (
        "group_norm_weight",
        "group_norm",
        lambda t, f: f.group_norm(t.ones(2, 6, 3), 2, weight=t.ones(5)),
        lambda t, f: f.group_norm(t.ones(2, 6, 3), 2, weight=t.ones(5)),
    ),
    (
        "embedding_weight",
        "embedding",
        lambda t, f: f.embedding(t.Tensor(ints([0])), t.ones(3)),
        lambda t, f: f.embedding(t.tensor(ints([0])), t.ones(3)),
    ),
    (
        "gelu_mode",
        "gelu",
        lambda t, f: f.gelu(t.ones(3), approximate="x"),
        lambda t, f: f.gelu(t.ones(3), approximate="x"),
    ),
    (
        "celu_alpha",
        "celu",
        lambda t, f: f.celu(t.ones(3), 0.0),
        lambda t, f: f.celu(t.ones(3), 0.0),
    ),
    (
        "huber_delta",
        "huber_loss",
        lambda t, f: f.huber_loss(t.ones(3), t.ones(3), delta=-1.0),
        lambda t, f: f.huber_loss(t.ones(3), t.ones(3), delta=-1.0),
    ),
    (
        "bce_range",
        "binary_cross_entropy",
        lambda t, f: f.binary_cross_entropy(t.ones(3) * 2.0, t.ones(3)),
        lambda t, f: f.binary_cross_entropy(t.ones(3) * 2.0, t.ones(3)),
    ),
    (
        "ce_label_smoothing",
        "cross_entropy",
        lambda t, f: f.cross_entropy(t.ones(2, 3), t.Tensor(ints([0, 1])), label_smoothing=2.0),
        lambda t, f: f.cross_entropy(t.ones(2, 3), t.tensor(ints([0, 1])), label_smoothing=2.0),
    ),
    (
        "ce_weight_shape",
        "cross_entropy",
        lambda t, f: f.cross_entropy(t.ones(2, 3), t.Tensor(ints([0, 1])), weight=t.ones(4)),
        lambda t, f: f.cross_entropy(t.ones(2, 3), t.tensor(ints([0, 1])), weight=t.ones(4)),
    ),
    (
        "hardtanh_bounds",
        "hardtanh",
        lambda t, f: f.hardtanh(t.ones(3), 2.0, 1.0),
        lambda t, f: f.hardtanh(t.ones(3), 2.0, 1.0),
    ),
    (
        "dropout_p",
        "dropout",
        lambda t, f: f.dropout(t.ones(3), 1.5),
        lambda t, f: f.dropout(t.ones(3), 1.5),
    ),
    (
        "matmul",
        "matmul",
        lambda t, f: t.ones(2, 4) @ t.ones(1, 3),
        lambda t, f: t.ones(2, 4) @ t.ones(1, 3),
    ),
    (
        "matmul_0d",
        "matmul",
        lambda t, f: t.ones(()) @ t.ones(3, 3),
        lambda t, f: t.ones(()) @ t.ones(3, 3),
    ),
    (
        "bmm",
        "matmul",
        lambda t, f: t.ones(2, 3, 4).bmm(t.ones(2, 5, 4)),
        lambda t, f: t.ones(2, 3, 4).bmm(t.ones(2, 5, 4)),
    ),
    (
        "add_broadcast",
        "add",
        lambda t, f: t.ones(3) + t.ones(4),
        lambda t, f: t.ones(3) + t.ones(4),
    ),
    (
        "mul_broadcast",
        "mul",
        lambda t, f: t.ones(3) * t.ones(4),
        lambda t, f: t.ones(3) * t.ones(4),
    ),
    (
        "reshape",
        "reshape",
        lambda t, f: t.ones(3, 4).reshape(5, -1),
        lambda t, f: t.ones(3, 4).reshape(5, -1),
    ),
    ("view", "reshape", lambda t, f: t.ones(2, 3).view(4), lambda t, f: t.ones(2, 3).view(4)),
    (
        "permute",
        "transpose",
        lambda t, f: t.ones(2, 3, 4).permute(0, 1),
        lambda t, f: t.ones(2, 3, 4).permute(0, 1),
    ),
    (
        "expand",
        "broadcast_to",
        lambda t, f: t.ones(2, 3).expand(4, 3),
        lambda t, f: t.ones(2, 3).expand(4, 3),
    ),
    (
        "cat",
        "concatenate",
        lambda t, f: t.cat([t.ones(2, 3), t.ones(2, 4)]),
        lambda t, f: t.cat([t.ones(2, 3), t.ones(2, 4)]),
    ),
    (
        "stack_shapes",
        "stack",
        lambda t, f: t.stack([t.ones(2), t.ones(3)]),
        lambda t, f: t.stack([t.ones(2), t.ones(3)]),
    ),
    (
        "flip_repeat",
        "flip",
        lambda t, f: t.ones(2, 3).flip(0, 0),
        lambda t, f: t.ones(2, 3).flip(0, 0),
    ),
    (
        "roll_lengths",
        "roll",
        lambda t, f: t.ones(2, 3).roll((1, 2), (0,)),
        lambda t, f: t.ones(2, 3).roll((1, 2), (0,)),
    ),
    (
        "unfold_step",
        "unfold",
        lambda t, f: t.ones(8).unfold(0, 2, -1),
        lambda t, f: t.ones(8).unfold(0, 2, -1),
    ),
    (
        "unfold_size",
        "unfold",
        lambda t, f: t.ones(8).unfold(0, 9, 1),
        lambda t, f: t.ones(8).unfold(0, 9, 1),
    ),
    ("split_zero", "split", lambda t, f: t.ones(4).split(0), lambda t, f: t.ones(4).split(0)),
    ("chunk_zero", "chunk", lambda t, f: t.ones(4).chunk(0), lambda t, f: t.ones(4).chunk(0)),
    (
        "diagonal_dims",
        "diagonal",
        lambda t, f: t.ones(3, 3).diagonal(0, 0, 0),
        lambda t, f: t.ones(3, 3).diagonal(0, 0, 0),
    ),
    (
        "repeat_sizes",
        "repeat",
        lambda t, f: t.ones(2, 3).repeat(2),
        lambda t, f: t.ones(2, 3).repeat(2),
    ),
    (
        "meshgrid_indexing",
        "meshgrid",
        lambda t, f: t.meshgrid(t.ones(2), indexing="bad"),
        lambda t, f: t.meshgrid(t.ones(2), indexing="bad"),
    ),
    ("topk_k", "topk", lambda t, f: t.ones(3).topk(5), lambda t, f: t.ones(3).topk(5)),
    ("clamp_none", "clamp", lambda t, f: t.ones(3).clamp(), lambda t, f: t.ones(3).clamp()),
    (
        "div_mode",
        "div",
        lambda t, f: t.ones(3).div(2.0, rounding_mode="typo"),
        lambda t, f: t.ones(3).div(2.0, rounding_mode="typo"),
    ),
    (
        "int_pow_negative",
        "pow",
        lambda t, f: t.Tensor(ints([1, 2])) ** -2,
        lambda t, f: t.tensor(ints([1, 2])) ** -2,
    ),
    (
        "gather_shape",
        "gather",
        lambda t, f: t.ones(2, 3).gather(1, t.Tensor(ints([[0], [1], [2]]))),
        lambda t, f: t.ones(2, 3).gather(1, t.tensor(ints([[0], [1], [2]]))),
    ),
    (
        "scatter_shape",
        "scatter",
        lambda t, f: t.ones(2, 3).scatter(0, t.Tensor(ints(np.zeros((3, 3)))), t.ones(2, 3)),
        lambda t, f: t.ones(2, 3).scatter(0, t.tensor(ints(np.zeros((3, 3)))), t.ones(2, 3)),
    ),
    (
        "scatter_dtype",
        "scatter",
        lambda t, f: t.ones(2, 3).scatter(0, t.Tensor(ints([[0, 1, 0]])), t.ones(1, 3).double()),
        lambda t, f: t.ones(2, 3).scatter(0, t.tensor(ints([[0, 1, 0]])), t.ones(1, 3).double()),
    ),
    (
        "masked_fill_mask",
        "masked_fill",
        lambda t, f: t.ones(2, 3).masked_fill(t.ones(2, 3), 0.0),
        lambda t, f: t.ones(2, 3).masked_fill(t.ones(2, 3), 0.0),
    ),
    (
        "where_shapes",
        "where",
        lambda t, f: t.where(t.ones(2) > 0, t.ones(3), t.ones(4)),
        lambda t, f: t.where(t.ones(2) > 0, t.ones(3), t.ones(4)),
    ),
    (
        "einsum_shapes",
        "einsum",
        lambda t, f: t.einsum("ij,jk->ik", t.ones(2, 3), t.ones(4, 5)),
        lambda t, f: t.einsum("ij,jk->ik", t.ones(2, 3), t.ones(4, 5)),
    ),
    (
        "einsum_operands",
        "einsum",
        lambda t, f: t.einsum("ij,jk->ik", t.ones(2, 3)),
        lambda t, f: t.einsum("ij,jk->ik", t.ones(2, 3)),
    ),
    (
        "conv2d_small",
        "conv2d",
        lambda t, f: f.conv2d(t.ones(1, 1, 2, 2), t.ones(1, 1, 3, 3)),
        lambda t, f: f.conv2d(t.ones(1, 1, 2, 2), t.ones(1, 1, 3, 3)),
    ),
    (
        "conv2d_channels",
        "conv2d",
        lambda t, f: f.conv2d(t.ones(1, 2, 5, 5), t.ones(3, 3, 3, 3)),
        lambda t, f: f.conv2d(t.ones(1, 2, 5, 5), t.ones(3, 3, 3, 3)),
    ),
    (
        "linear_shapes",
        "linear",
        lambda t, f: f.linear(t.ones(2, 3), t.ones(4, 5)),
        lambda t, f: f.linear(t.ones(2, 3), t.ones(4, 5)),
    ),
    (
        "max_pool_small",
        "max_pool2d",
        lambda t, f: f.max_pool2d(t.ones(1, 1, 2, 2), 3),
        lambda t, f: f.max_pool2d(t.ones(1, 1, 2, 2), 3),
    ),
    (
        "layer_norm_shape",
        "layer_norm",
        lambda t, f: f.layer_norm(t.ones(2, 3), (4,)),
        lambda t, f: f.layer_norm(t.ones(2, 3), (4,)),
    ),
    (
        "one_hot_class",
        "one_hot",
        lambda t, f: f.one_hot(t.Tensor(ints([0, 5])), 3),
        lambda t, f: f.one_hot(t.tensor(ints([0, 5])), 3),
    ),
    (
        "pad_mode",
        "pad",
        lambda t, f: f.pad(t.ones(1, 2, 3), (1, 1), mode="typo"),
        lambda t, f: f.pad(t.ones(1, 2, 3), (1, 1), mode="typo"),
    ),
    (
        "cross_entropy_target_shape",
        "cross_entropy",
        lambda t, f: f.cross_entropy(t.ones(2, 3), t.Tensor(ints([0, 1, 2]))),
        lambda t, f: f.cross_entropy(t.ones(2, 3), t.tensor(ints([0, 1, 2]))),
    ),
    (
        "cross_entropy_reduction",
        "cross_entropy",
        lambda t, f: f.cross_entropy(t.ones(2, 3), t.Tensor(ints([0, 1])), reduction="avg"),
        lambda t, f: f.cross_entropy(t.ones(2, 3), t.tensor(ints([0, 1])), reduction="avg"),
    ),
    ("getitem_out_of_range", "getitem", lambda t, f: t.ones(3)[5], lambda t, f: t.ones(3)[5]),
    (
        "nll_target",
        "nll_loss",
        lambda t, f: f.nll_loss(t.ones(2, 3), t.Tensor(ints([0, 5]))),
        lambda t, f: f.nll_loss(t.ones(2, 3), t.tensor(ints([0, 5]))),
    ),
]


def _torch_class(theirs):
    try:
        theirs(torch, torch_F)
    except Exception as error:  # the class torch raises is what the test reads
        return type(error)
    raise AssertionError("torch accepted it")


@pytest.mark.parametrize(
    ("op_name", "ours", "theirs"), [pytest.param(*c[1:], id=c[0]) for c in CASES]
)
def test_ours_raises_the_class_torch_raises(op_name, ours, theirs):
    expected = _torch_class(theirs)
    with pytest.raises(expected, match=op_name):
        ours(tg, F)


@pytest.mark.parametrize(
    ("error_class", "also"),
    [
        (AxisError, ValueError),
        (ArgumentError, ValueError),
        (ShapeError, ValueError),
        (DtypeError, TypeError),
    ],
)
def test_the_classes_still_are_what_numpy_raises(error_class, also):
    assert issubclass(error_class, also)


def test_except_value_error_still_catches_a_shape_error():
    with pytest.raises(ValueError, match="matmul"):
        tg.ones(2, 3) @ tg.ones(2, 3)
