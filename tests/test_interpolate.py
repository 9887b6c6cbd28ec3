"""F.interpolate against torch in float64 (values and gradients) over every mode, sizes and
scale factors up and down, align_corners and recompute_scale_factor; float32 and integer
inputs; central finite differences; the refusals."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF  # noqa: N812 (the conventional alias)
from helpers import check_op

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the conventional alias)

SHAPES = {1: (2, 3, 5), 2: (2, 3, 4, 5), 3: (1, 2, 3, 4, 2)}
LINEAR = {1: "linear", 2: "bilinear", 3: "trilinear"}
SIZES = [
    {"size": 7},
    {"size": 2},
    {"size": 1},
    {"scale_factor": 2},
    {"scale_factor": 1.7},
    {"scale_factor": 0.6},
    {"scale_factor": 1.3},
    {"scale_factor": 1.7, "recompute_scale_factor": True},
]


def cases():
    for spatial, shape in SHAPES.items():
        for mode in ("nearest", "nearest-exact", LINEAR[spatial]):
            corners = (None,) if mode.startswith("nearest") else (False, True)
            for options in SIZES:
                for align_corners in corners:
                    name = f"{mode}-{spatial}d-{options}-{align_corners}"
                    yield pytest.param(shape, mode, options, align_corners, id=name)


def torch_gradient_is_off(shape, mode, out_shape):
    """PyTorch's 1-d and 3-d "nearest" backward copies a dim whose size is unchanged, where
    its forward applies the scale (see test_nearest_gradient_counts_the_reads)."""
    spatial = len(shape) - 2
    unchanged = any(a == b for a, b in zip(shape[2:], out_shape[2:], strict=True))
    return mode == "nearest" and spatial != 2 and unchanged


@pytest.mark.parametrize(("shape", "mode", "options", "align_corners"), list(cases()))
def test_interpolate_against_torch(shape, mode, options, align_corners):
    def ours(x):
        return F.interpolate(x, mode=mode, align_corners=align_corners, **options)

    def theirs(x):
        return TF.interpolate(x, mode=mode, align_corners=align_corners, **options)

    out_shape = theirs(torch.zeros(shape, dtype=torch.float64)).shape
    if not torch_gradient_is_off(shape, mode, out_shape):
        check_op(ours, theirs, shape, atol=1e-12)
        return
    x = np.random.default_rng(0).standard_normal(shape)
    np.testing.assert_array_equal(ours(tg.Tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())
    assert tg.gradcheck(ours, (tg.Tensor(x, requires_grad=True),))


@pytest.mark.parametrize("shape", [(1, 1, 3), (1, 1, 3, 4, 2), (1, 1, 2, 2, 2)])
def test_nearest_gradient_counts_the_reads(shape):
    """Each input's gradient (of the sum) is the number of outputs that read it. PyTorch's
    1-d and 3-d nearest backward breaks this where a dim keeps its size (scale_factor 1.3 on
    3 elements: the forward reads rows 0, 0, 1; the backward gives 1 to each row)."""
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    ours = tg.Tensor(x, requires_grad=True)
    out = F.interpolate(ours, scale_factor=1.3)
    out.sum().backward()
    reads = np.bincount(out.numpy().astype(np.int64).ravel(), minlength=x.size)
    np.testing.assert_array_equal(ours.grad.numpy(), reads.reshape(shape))
    theirs = torch.tensor(x, requires_grad=True)
    TF.interpolate(theirs, scale_factor=1.3).sum().backward()
    assert not np.array_equal(theirs.grad.numpy(), reads.reshape(shape))  # (PyTorch's)


@pytest.mark.parametrize(
    ("mode", "options"),
    [
        ("nearest", {"size": (3, 8)}),
        ("nearest", {"scale_factor": (2.5, 0.7)}),
        ("nearest", {"scale_factor": (7 / 3, 1.2)}),  # one dim doubled, one unchanged
        ("bilinear", {"size": (6, 5)}),  # one dim unchanged
        ("bilinear", {"scale_factor": (1.2, 2.2)}),
    ],
)
def test_interpolate_per_dim_sizes(mode, options):
    check_op(
        lambda x: F.interpolate(x, mode=mode, **options),
        lambda x: TF.interpolate(x, mode=mode, **options),
        (1, 2, 3, 4),
        atol=1e-12,
    )


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear"])
def test_interpolate_float32_keeps_torchs_indices(mode):
    """The source positions are computed in the input's dtype, as aten does: float32
    inputs pick the same rows as PyTorch's at every size tried."""
    rng = np.random.default_rng(0)
    for length in range(1, 9):
        x = rng.standard_normal((1, 1, length)).astype(np.float32)
        for options in ({"size": 11}, {"scale_factor": 13 / 7}, {"scale_factor": 0.7}):
            if np.floor(length * options.get("scale_factor", 1)) < 1:
                continue
            ours = F.interpolate(tg.Tensor(x), mode=mode, **options)
            theirs = TF.interpolate(torch.tensor(x), mode=mode, **options)
            assert ours.dtype == np.float32
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)


def test_interpolate_nearest_on_integers():
    x = np.arange(24, dtype=np.uint8).reshape(1, 2, 3, 4)
    ours = F.interpolate(tg.Tensor(x), scale_factor=1.5)
    np.testing.assert_array_equal(
        ours.numpy(), TF.interpolate(torch.tensor(x), scale_factor=1.5).numpy()
    )
    assert ours.dtype == np.uint8


@pytest.mark.parametrize(
    ("mode", "shape"), [("linear", (1, 2, 4)), ("bilinear", (1, 1, 3, 3)), ("nearest", (1, 1, 3))]
)
def test_interpolate_finite_differences(mode, shape):
    x = tg.Tensor(np.random.default_rng(1).standard_normal(shape), requires_grad=True)
    assert tg.gradcheck(lambda t: F.interpolate(t, scale_factor=1.7, mode=mode), (x,))


@pytest.mark.parametrize(
    ("arguments", "error", "words"),
    [
        ({"mode": "bilinear", "size": 4}, NotImplementedError, "needs 4D input"),
        ({"mode": "bicubic", "size": 4}, NotImplementedError, "not implemented"),
        ({"size": 4, "scale_factor": 2}, ValueError, "only one"),
        ({}, ValueError, "either size or scale_factor"),
        ({"size": 4, "align_corners": True}, ValueError, "align_corners"),
        ({"size": (4, 4)}, ValueError, "size shape must match"),
        ({"scale_factor": 0.1}, RuntimeError, "greater than 0"),
        ({"mode": "linear", "size": 3, "antialias": True}, NotImplementedError, "antialias"),
    ],
)
def test_interpolate_refusals(arguments, error, words):
    with pytest.raises(error, match=words):
        F.interpolate(tg.ones(1, 2, 3), **arguments)


def uint8_cases():
    """Random uint8 images and sizes, both ways of resizing, with and without align_corners.
    (Not an output width of 1 with more than 4 channels: PyTorch's uint8 kernel then repeats
    the first output row down the whole image, where its float kernel and ours do not.)"""
    rng = np.random.default_rng(8)
    for _ in range(40):
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 5)), *rng.integers(1, 40, 2))
        size = tuple(int(length) for length in rng.integers(1, 50, 2))
        yield (rng.random(shape) * 255).astype(np.uint8), size, bool(rng.integers(2))


@pytest.mark.parametrize(("image", "size", "align_corners"), list(uint8_cases()))
def test_bilinear_on_uint8_equals_torchs_fixed_point_kernel(image, size, align_corners):
    ours = F.interpolate(tg.tensor(image), size=size, mode="bilinear", align_corners=align_corners)
    theirs = TF.interpolate(
        torch.tensor(image), size=size, mode="bilinear", align_corners=align_corners
    )
    assert ours.dtype == np.uint8
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_bilinear_on_uint8_takes_a_scale_factor_as_torch():
    image = (np.random.default_rng(3).random((1, 3, 7, 9)) * 255).astype(np.uint8)
    ours = F.interpolate(tg.tensor(image), scale_factor=1.7, mode="bilinear")
    theirs = TF.interpolate(torch.tensor(image), scale_factor=1.7, mode="bilinear")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    ("shape", "dtype", "mode"),
    [
        ((1, 2, 5), np.uint8, "linear"),
        ((1, 2, 3, 3, 3), np.uint8, "trilinear"),
        ((1, 2, 4, 4), np.int32, "bilinear"),
        ((1, 2, 4, 4), np.int64, "bilinear"),
    ],
)
def test_linear_modes_on_other_integers_are_torchs_not_implemented(shape, dtype, mode):
    image = np.ones(shape, dtype=dtype)
    size = (3,) * (len(shape) - 2)
    with pytest.raises(NotImplementedError):
        TF.interpolate(torch.tensor(image), size=size, mode=mode)
    with pytest.raises(NotImplementedError, match="cast the input to a float dtype"):
        F.interpolate(tg.tensor(image), size=size, mode=mode)
