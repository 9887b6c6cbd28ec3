"""`F.interpolate`: resizing the spatial dims of an (N, C, ...) input, as PyTorch's (modes
nearest, nearest-exact, linear, bilinear, trilinear; align_corners; size or scale_factor).

Composed, one spatial dim after another: nearest picks a source row per output row
(`index_select`), linear mixes the two source rows around each output row's position with
constant weights, out = (1 - λ) x[i0] + λ x[i1]. The gradient is then the ops': each source
row gets the sum of g times its weight over the outputs that read it. The source positions
follow aten's `UpSample.h` (`area_pixel_compute_source_index`, `nearest_idx`).
"""

import math

import numpy as np

from .base import is_tensor, new_tensor
from .checks import UnsupportedError, check_float

LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}  # mode: the spatial dims it takes
NEAREST_MODES = ("nearest", "nearest-exact")


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """out = input resized over its spatial dims (all but N and C) to `size`, or to
    floor(in · scale_factor): "nearest" takes the source element at floor(i · in/out),
    "nearest-exact" at floor((i + ½) · in/out), "linear"/"bilinear"/"trilinear" mix the two
    neighbours of source position (i + ½) · in/out - ½ (or i · (in-1)/(out-1) with
    align_corners=True), as torch.nn.functional.interpolate. A given scale_factor is the
    scale used, unless recompute_scale_factor=True.

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([[[0.0, 1.0, 2.0]]])
    >>> interpolate(x, scale_factor=2).tolist()
    [[[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]]]
    >>> interpolate(x, size=5, mode="linear", align_corners=True).tolist()
    [[[0.0, 0.5, 1.0, 1.5, 2.0]]]
    """
    if not is_tensor(input):
        raise TypeError(f"interpolate: input must be a Tensor, got {type(input).__name__}")
    spatial = input.ndim - 2
    _check_mode(mode, spatial, align_corners, antialias)
    sizes, scales = _output_sizes(input.shape[2:], size, scale_factor, recompute_scale_factor)
    # aten leaves a dim whose size is unchanged as it is, whatever scale_factor says, in the
    # linear modes and in 2-d "nearest" (whose kernel also doubles a dim by repeating each
    # row), and applies the scale elsewhere.
    if input.dtype.kind != "f" and mode in LINEAR_MODES:
        return _bilinear_uint8(input, mode, sizes, scales, bool(align_corners))
    shortcuts = mode == "nearest" and spatial == 2
    out = input
    for axis, (length, scale) in enumerate(zip(sizes, scales, strict=True), start=2):
        if (shortcuts or mode in LINEAR_MODES) and length == input.shape[axis]:
            continue
        if shortcuts and length == 2 * input.shape[axis]:
            out = out.index_select(axis, np.arange(length) // 2)
        elif mode in NEAREST_MODES:
            exact = mode == "nearest-exact"
            source = _nearest_source(input.shape[axis], length, scale, exact, input.dtype)
            out = out.index_select(axis, source)
        else:
            out = _linear_along(out, axis, length, scale, bool(align_corners))
    return out


def _check_mode(mode, spatial, align_corners, antialias):
    if mode not in NEAREST_MODES and mode not in LINEAR_MODES:
        raise NotImplementedError(
            f"interpolate: mode {mode!r} is not implemented (nearest, nearest-exact, linear, "
            "bilinear and trilinear are)"
        )
    if spatial < 1 or spatial > 3:
        raise ValueError(
            f"interpolate: expected a 3-d, 4-d or 5-d input (N, C, spatial...), got {spatial + 2}-d"
        )
    if mode in LINEAR_MODES and LINEAR_MODES[mode] != spatial:
        raise NotImplementedError(
            f"interpolate: got {spatial + 2}D input, but {mode} mode needs "
            f"{LINEAR_MODES[mode] + 2}D input"
        )
    if mode in NEAREST_MODES and align_corners is not None:
        raise ValueError(
            "interpolate: align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear"
        )
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not implemented")


def _output_sizes(input_sizes, size, scale_factor, recompute_scale_factor):
    """(output sizes, the scale per dim or None), as F.interpolate computes them."""
    count = len(input_sizes)
    if (size is None) == (scale_factor is None):
        raise ValueError(
            "interpolate: either size or scale_factor should be defined, and only one of them"
        )
    if size is not None:
        sizes = tuple(size) if isinstance(size, (tuple, list)) else (size,) * count
        if len(sizes) != count:
            raise ValueError(
                f"interpolate: size shape must match input shape; input is {count}D, size is "
                f"{len(sizes)}"
            )
        if recompute_scale_factor:
            raise ValueError(
                "interpolate: recompute_scale_factor is not meaningful with an explicit size"
            )
        return tuple(int(length) for length in sizes), (None,) * count
    factors = (
        tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * count
    )
    if len(factors) != count:
        raise ValueError(
            f"interpolate: scale_factor shape must match input shape; input is {count}D, "
            f"scale_factor is {len(factors)}"
        )
    sizes = tuple(
        math.floor(float(length) * float(factor))
        for length, factor in zip(input_sizes, factors, strict=True)
    )
    if any(length <= 0 for length in sizes):
        raise RuntimeError(f"interpolate: the output size {sizes} must be greater than 0")
    scales = (None,) * count if recompute_scale_factor else tuple(float(f) for f in factors)
    return sizes, scales


def _source_scale(input_size, output_size, scale):
    """in/out, or 1/scale_factor when one was given (aten's compute_scales_value)."""
    if scale is not None and scale > 0:
        return 1.0 / scale
    return input_size / output_size


def _nearest_source(input_size, output_size, scale, exact, dtype):
    """The source index of every output index: floor(i · s) or floor((i + ½) · s), s in the
    input's float dtype (float32 for integers) as aten computes it, clamped to the last one."""
    work = dtype.type if dtype.kind == "f" else np.float32
    ratio = work(_source_scale(input_size, output_size, scale))
    positions = np.arange(output_size, dtype=work) + (work(0.5) if exact else work(0))
    return np.minimum(np.floor(positions * ratio).astype(np.int64), input_size - 1)


def _linear_source(input_size, output_size, scale, align_corners, dtype):
    """The two source indices (lower, upper) of every output index and the weight λ of the
    upper one, in `dtype`, from aten's source positions (area_pixel_compute_source_index)."""
    index = np.arange(output_size, dtype=dtype)
    if align_corners:
        ratio = (input_size - 1) / (output_size - 1) if output_size > 1 else 0.0
        source = dtype(ratio) * index
    else:
        ratio = dtype(_source_scale(input_size, output_size, scale))
        source = np.maximum(ratio * (index + dtype(0.5)) - dtype(0.5), dtype(0))
    lower = np.minimum(source.astype(np.int64), input_size - 1)
    upper = np.minimum(lower + 1, input_size - 1)
    return lower, upper, (source - lower).astype(dtype)


def _linear_along(x, axis, output_size, scale, align_corners):
    """(1 - λ) x[i0] + λ x[i1] along `axis`, from aten's source positions."""
    check_float("interpolate", x.data)
    lower, upper, weight = _linear_source(
        x.shape[axis], output_size, scale, align_corners, x.dtype.type
    )
    shape = [1] * x.ndim
    shape[axis] = output_size
    weight = weight.reshape(shape)
    return x.index_select(axis, lower) * (1 - weight) + x.index_select(axis, upper) * weight


def _bilinear_uint8(input, mode, sizes, scales, align_corners):
    """Bilinear resizing of a uint8 image as PyTorch's CPU kernel does it (no gradient: an
    integer tensor has none): one pass per dim, width first, each in fixed point. The two
    weights are scaled by 2**p, p the largest precision at which the larger weight still fits
    an int16, and out = clip((2**(p-1) + Σ x w) >> p, 0, 255) rounds to the nearest (Pillow's
    resampling arithmetic, which aten's uint8 path follows). Other modes and integer dtypes
    are PyTorch's NotImplementedError."""
    if mode != "bilinear" or input.dtype != np.uint8:
        raise UnsupportedError(
            f"interpolate: mode {mode!r} is not implemented for {input.dtype} inputs (PyTorch's "
            "CPU kernels take uint8 in bilinear only); cast the input to a float dtype first"
        )
    image = input.data
    for axis in (3, 2):
        if sizes[axis - 2] != image.shape[axis]:
            image = _fixed_point_pass(image, axis, sizes[axis - 2], scales[axis - 2], align_corners)
    return new_tensor(image)


def _fixed_point_pass(image, axis, output_size, scale, align_corners):
    """One dim of `_bilinear_uint8`: the two neighbours mixed with int16 weights."""
    lower, upper, weight = _linear_source(
        image.shape[axis], output_size, scale, align_corners, np.float64
    )
    largest = max(float((1 - weight).max()), float(weight.max()))
    precision = 0
    while precision < 15 and int(0.5 + largest * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    shape = [1] * image.ndim
    shape[axis] = output_size
    lower_weight = np.floor((1 - weight) * (1 << precision) + 0.5).astype(np.int64).reshape(shape)
    upper_weight = np.floor(weight * (1 << precision) + 0.5).astype(np.int64).reshape(shape)
    total = (1 << (precision - 1)) + np.take(image, lower, axis).astype(np.int64) * lower_weight
    total += np.take(image, upper, axis).astype(np.int64) * upper_weight
    return np.clip(total >> precision, 0, 255).astype(np.uint8)
