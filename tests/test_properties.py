"""Property tests (hypothesis): random broadcast-compatible shapes and random reduction axes,
forward and gradients against PyTorch in float64 through `check_op`.

Shapes include 0-d, size-1 and (for the ops defined on them) empty dims. Values are kept
inside each function's domain. Examples are derandomized, so every run checks the same ones.
"""

import numpy as np
import torch
from helpers import check_op
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import tinygrad_ops as tg

PROPERTY_SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None)

BINARY_OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, None),
    "sub": (lambda a, b: a - b, lambda a, b: a - b, None),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, None),
    "div": (lambda a, b: a / b, lambda a, b: a / b, (0.5, 2.0)),
    "pow": (lambda a, b: a**b, lambda a, b: a**b, (0.5, 2.0)),
    "maximum": (tg.maximum, torch.maximum, None),
}

broadcast_pairs = mutually_broadcastable_shapes(
    num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=3
)


@PROPERTY_SETTINGS
@given(
    name=st.sampled_from(sorted(BINARY_OPS)),
    shapes=broadcast_pairs,
    seed=st.integers(0, 2**16),
)
def test_broadcasting_binary_ops(name, shapes, seed):
    ours, theirs, domain = BINARY_OPS[name]
    low, high = domain if domain else (None, None)
    check_op(ours, theirs, *shapes.input_shapes, seed=seed, low=low, high=high)


@PROPERTY_SETTINGS
@given(
    shapes=mutually_broadcastable_shapes(
        num_shapes=3, min_dims=0, max_dims=3, min_side=1, max_side=3
    ),
    seed=st.integers(0, 2**16),
)
def test_broadcasting_where(shapes, seed):
    condition_shape, shape_a, shape_b = shapes.input_shapes
    condition = np.random.default_rng(seed).random(condition_shape) > 0.5
    check_op(
        lambda a, b: tg.where(condition, a, b),
        lambda a, b: torch.where(torch.as_tensor(condition), a, b),
        shape_a,
        shape_b,
        seed=seed,
    )


@PROPERTY_SETTINGS
@given(shapes=broadcast_pairs, seed=st.integers(0, 2**16))
def test_broadcast_to_the_result_shape(shapes, seed):
    target = shapes.result_shape
    check_op(
        lambda a: a.broadcast_to(target),
        lambda a: a.broadcast_to(target),
        shapes.input_shapes[0],
        seed=seed,
    )


@st.composite
def shape_and_axes(draw, min_side=0):
    """A shape and an `axis` for it: None, an int or a tuple, with negative axes too."""
    shape = draw(array_shapes(min_dims=0, max_dims=4, min_side=min_side, max_side=4))
    ndim = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"] if ndim else ["none"]))
    if kind == "none":
        return shape, None
    if kind == "int":
        return shape, draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.lists(st.integers(0, ndim - 1), min_size=0, max_size=ndim, unique=True))
    negate = draw(st.lists(st.booleans(), min_size=len(chosen), max_size=len(chosen)))
    return shape, tuple(axis - ndim if flip else axis for axis, flip in zip(chosen, negate))


def torch_dims(shape, axis):
    if axis is None:
        return tuple(range(len(shape)))
    return axis


def reduced_size(shape, axis):
    if axis is None:
        return int(np.prod(shape))
    axes = (axis,) if isinstance(axis, int) else axis
    return int(np.prod([shape[a] for a in axes]))


def check_reduction(name, shape_axis, keepdims, seed):
    """The method `name` (sum, mean) of ours and of torch's over the drawn axes."""
    shape, axis = shape_axis
    if axis == ():  # numpy reduces nothing for (), torch reduces everything: not comparable
        axis = None
    check_op(
        lambda a: getattr(a, name)(axis=axis, keepdims=keepdims),
        lambda a: getattr(a, name)(dim=torch_dims(shape, axis), keepdim=keepdims),
        shape,
        seed=seed,
    )


@PROPERTY_SETTINGS
@given(shape_axis=shape_and_axes(), keepdims=st.booleans(), seed=st.integers(0, 2**16))
def test_sum(shape_axis, keepdims, seed):
    check_reduction("sum", shape_axis, keepdims, seed)


@PROPERTY_SETTINGS
@given(shape_axis=shape_and_axes(min_side=1), keepdims=st.booleans(), seed=st.integers(0, 2**16))
def test_mean(shape_axis, keepdims, seed):
    check_reduction("mean", shape_axis, keepdims, seed)


@PROPERTY_SETTINGS
@given(
    shape_axis=shape_and_axes(min_side=1),
    keepdims=st.booleans(),
    ddof=st.sampled_from([0, 1]),
    seed=st.integers(0, 2**16),
)
def test_var(shape_axis, keepdims, ddof, seed):
    shape, axis = shape_axis
    if axis == ():
        axis = None
    if reduced_size(shape, axis) <= ddof:
        ddof = 0
    check_op(
        lambda a: a.var(axis=axis, keepdims=keepdims, ddof=ddof),
        lambda a: a.var(dim=torch_dims(shape, axis), keepdim=keepdims, correction=ddof),
        shape,
        seed=seed,
        atol=1e-9,
    )


@PROPERTY_SETTINGS
@given(
    name=st.sampled_from(["max", "min"]),
    shape_axis=shape_and_axes(min_side=1),
    keepdims=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_max_min_with_ties(name, shape_axis, keepdims, seed):
    """Values drawn from a few integers, so that ties are common (torch splits the
    gradient evenly among them, as amax/amin)."""
    shape, axis = shape_axis
    if axis == ():
        axis = None
    values = np.random.default_rng(seed).integers(-2, 3, size=shape).astype(np.float64)
    reduce_torch = torch.amax if name == "max" else torch.amin
    check_op(
        lambda a: getattr(a, name)(axis=axis, keepdims=keepdims),
        lambda a: reduce_torch(a, dim=torch_dims(shape, axis), keepdim=keepdims),
        values,
        seed=seed,
    )
