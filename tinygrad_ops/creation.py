"""Tensors made from a shape: zeros, ones, random numbers, ranges."""

import math

import numpy as np

from .tensor import DEFAULT_DTYPE, from_numpy


def _fresh(array, requires_grad=False):
    """A tensor around an array made here (nobody else holds it: no copy needed)."""
    tensor = from_numpy(array)
    tensor.requires_grad = requires_grad
    return tensor


def _shape(shape):
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


def zeros(*shape, dtype=DEFAULT_DTYPE, requires_grad=False):
    """A tensor of zeros.

    >>> import tinygrad_ops as tg
    >>> tg.zeros(2, 3).shape
    (2, 3)
    """
    return _fresh(np.zeros(_shape(shape), dtype=dtype), requires_grad)


def ones(*shape, dtype=DEFAULT_DTYPE, requires_grad=False):
    """A tensor of ones.

    >>> import tinygrad_ops as tg
    >>> tg.ones(2).numpy()
    array([1., 1.], dtype=float32)
    """
    return _fresh(np.ones(_shape(shape), dtype=dtype), requires_grad)


def full(shape, value, dtype=DEFAULT_DTYPE, requires_grad=False):
    """A tensor filled with `value`.

    >>> import tinygrad_ops as tg
    >>> tg.full((2,), 7.0).numpy()
    array([7., 7.], dtype=float32)
    """
    return _fresh(np.full(shape, value, dtype=dtype), requires_grad)


def zeros_like(tensor, requires_grad=False):
    """Zeros with the shape and dtype of `tensor`.

    >>> import tinygrad_ops as tg
    >>> tg.zeros_like(tg.Tensor([[1.0, 2.0]])).numpy()
    array([[0., 0.]], dtype=float32)
    """
    return _fresh(np.zeros_like(tensor.data), requires_grad)


def ones_like(tensor, requires_grad=False):
    """Ones with the shape and dtype of `tensor`.

    >>> import tinygrad_ops as tg
    >>> tg.ones_like(tg.Tensor([1.0, 2.0], dtype="float64")).numpy()
    array([1., 1.])
    """
    return _fresh(np.ones_like(tensor.data), requires_grad)


def randn(*shape, seed=None, dtype=DEFAULT_DTYPE, requires_grad=False):
    """Standard normal samples; the same `seed` gives the same numbers.

    >>> import tinygrad_ops as tg
    >>> bool((tg.randn(3, seed=0).numpy() == tg.randn(3, seed=0).numpy()).all())
    True
    """
    generator = np.random.default_rng(seed)
    data = generator.standard_normal(_shape(shape)).astype(dtype)
    return _fresh(data, requires_grad)


def rand(*shape, seed=None, dtype=DEFAULT_DTYPE, requires_grad=False):
    """Uniform samples in [0, 1); the same `seed` gives the same numbers.

    >>> import tinygrad_ops as tg
    >>> sample = tg.rand(2, 3, seed=0)
    >>> sample.shape, bool(((sample.numpy() >= 0) & (sample.numpy() < 1)).all())
    ((2, 3), True)
    """
    generator = np.random.default_rng(seed)
    return _fresh(generator.random(_shape(shape)).astype(dtype), requires_grad)


def arange(start, stop=None, step=1, dtype=None):
    """Evenly spaced values; integer arguments give an int64 tensor (usable as an index),
    as in PyTorch, and float arguments a float32 one.

    >>> import tinygrad_ops as tg
    >>> tg.arange(3).numpy()
    array([0, 1, 2])
    """
    if stop is None:
        start, stop = 0, start
    _check_range(start, stop, step)
    integral = all(isinstance(value, (int, np.integer)) for value in (start, stop, step))
    if dtype is None:
        dtype = np.int64 if integral else DEFAULT_DTYPE
    return _fresh(np.arange(start, stop, step, dtype=dtype))


def _check_range(start, stop, step):
    """PyTorch's checks: numpy divides by a zero step, or gives an empty or endless range."""
    if step == 0:
        raise ValueError(f"arange: step must be nonzero (got start={start}, stop={stop}, step=0)")
    for name, value in (("start", start), ("stop", stop), ("step", step)):
        if not math.isfinite(value):
            raise ValueError(f"arange: {name} must be finite, got {value}")
    if (stop - start) * step < 0:
        raise ValueError(
            f"arange: the step {step} goes away from stop: start={start}, stop={stop} "
            "(upper bound and lower bound inconsistent with step sign)"
        )


def eye(n, dtype=DEFAULT_DTYPE):
    """The n x n identity matrix.

    >>> import tinygrad_ops as tg
    >>> tg.eye(2).numpy()
    array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    return _fresh(np.eye(n, dtype=dtype))
