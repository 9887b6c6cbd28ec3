"""Property tests (hypothesis) for the nn ops: random shapes (size-1 dims included), random
axes and normalized ranks, forward and gradients against PyTorch in float64."""

import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
from helpers import check_affine_norm, check_op
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)

PROPERTY_SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None)
shapes = array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)


@PROPERTY_SETTINGS
@given(shape=shapes, data=st.data(), seed=st.integers(0, 2**16))
def test_softmax_any_axis(shape, data, seed):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_op(lambda x: F.softmax(x, axis), lambda x: torch.softmax(x, axis), shape, seed=seed)
    check_op(
        lambda x: F.log_softmax(x, axis), lambda x: torch.log_softmax(x, axis), shape, seed=seed
    )


@PROPERTY_SETTINGS
@given(shape=shapes, data=st.data(), seed=st.integers(0, 2**16))
def test_norms_any_normalized_rank(shape, data, seed):
    k = data.draw(st.integers(1, len(shape)))
    normalized = shape[len(shape) - k :]
    if any(size > 1 for size in normalized):  # one element per row: var 0, as in torch
        check_affine_norm("layer_norm", shape, normalized, seed=seed, atol=1e-9, rtol=1e-7)
    check_affine_norm("rms_norm", shape, normalized, seed=seed, atol=1e-9, rtol=1e-7)


@PROPERTY_SETTINGS
@given(
    shape=array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4),
    seed=st.integers(0, 2**16),
)
def test_batch_norm_training_shapes(shape, seed):
    count = shape[0] * (shape[2] if len(shape) == 3 else 1)
    if count < 2:
        return  # one value per channel: an error (tested elsewhere)
    channels = shape[1]
    check_op(
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
        shape,
        (channels,),
        (channels,),
        seed=seed,
        atol=1e-9,
        rtol=1e-7,
    )
