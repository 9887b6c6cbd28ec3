"""Tensors made from a shape: zeros, ones, random numbers, ranges."""

import math

import numpy as np

from .ops.checks import ArgumentError, check_number, checked_shape, varargs_shape

# The one shared generator lives in random_state.py; its functions are re-exported here,
# where the tensors it fills are made.
from .random_state import default_generator, get_rng_state, manual_seed, set_rng_state  # noqa: F401
from .tensor import DEFAULT_DTYPE, Tensor, from_numpy


def _generator(seed, generator, op_name):
    """The generator to draw from: `generator`, else a new one seeded with `seed`, else the
    shared one (`manual_seed`)."""
    if generator is not None and seed is not None:
        raise TypeError(f"{op_name}: pass seed= or generator=, not both")
    if generator is not None:
        return generator
    return default_generator() if seed is None else np.random.default_rng(seed)


def _fresh(array, requires_grad=False):
    """A tensor around an array made here (nobody else holds it: no copy needed)."""
    tensor = from_numpy(array)
    tensor.requires_grad = requires_grad
    return tensor


def tensor(data, dtype=None, requires_grad=False):
    """PyTorch's `torch.tensor`: a copy of `data`, its dtype inferred as PyTorch infers it:
    Python floats make float32, ints int64, bools bool; an array keeps its dtype.
    (`tg.Tensor(...)`, like the constructor `torch.Tensor(...)`, makes every Python number
    float32.)

    >>> import tinygrad_ops as tg
    >>> tg.tensor([1, 2]).dtype, tg.tensor([1.0, 2]).dtype, tg.tensor(True).dtype
    (dtype('int64'), dtype('float32'), dtype('bool'))
    """
    if dtype is None and isinstance(data, (bool, int, float, list, tuple)):
        dtype = _python_dtype(data)
    return Tensor(data, requires_grad, dtype)


def _python_dtype(data):
    """PyTorch's dtype for Python numbers: bool if all are bools, int64 if all are ints,
    else (a float among them, or no number at all) None, the default float32."""
    kind = np.array(data).dtype.kind
    if kind == "b":
        return np.bool_
    return np.int64 if kind in "iu" else None


def zeros(*shape, dtype=DEFAULT_DTYPE, requires_grad=False):
    """A tensor of zeros.

    >>> import tinygrad_ops as tg
    >>> tg.zeros(2, 3).shape
    (2, 3)
    """
    return _fresh(
        np.zeros(checked_shape(varargs_shape(shape), "zeros"), dtype=dtype), requires_grad
    )


def ones(*shape, dtype=DEFAULT_DTYPE, requires_grad=False):
    """A tensor of ones.

    >>> import tinygrad_ops as tg
    >>> tg.ones(2).numpy()
    array([1., 1.], dtype=float32)
    """
    return _fresh(np.ones(checked_shape(varargs_shape(shape), "ones"), dtype=dtype), requires_grad)


def full(shape, value, dtype=None, requires_grad=False):
    """A tensor filled with `value`; its dtype, unless given, as PyTorch infers it: bool for
    a bool, int64 for an int, float32 for a float.

    >>> import tinygrad_ops as tg
    >>> tg.full((2,), 7.0).numpy()
    array([7., 7.], dtype=float32)
    >>> tg.full((2,), 7).dtype
    dtype('int64')
    """
    shape = checked_shape(shape, "full")
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    check_number("full", value, "fill_value")
    if dtype is None:
        dtype = _inferred_dtype(value)
    return _fresh(np.full(shape, value, dtype=dtype), requires_grad)


def _inferred_dtype(value):
    if isinstance(value, (bool, np.bool_)):
        return np.bool_
    if isinstance(value, (int, np.integer)):
        return np.int64
    return DEFAULT_DTYPE if isinstance(value, float) else np.asarray(value).dtype


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


def randn(*shape, seed=None, generator=None, dtype=DEFAULT_DTYPE, requires_grad=False):
    """Standard normal samples from `generator` (a numpy Generator), else a new one seeded
    with `seed`, else the shared generator that `tg.manual_seed` reseeds.

    >>> import tinygrad_ops as tg
    >>> bool((tg.randn(3, seed=0).numpy() == tg.randn(3, seed=0).numpy()).all())
    True
    >>> tg.manual_seed(1); first = tg.randn(2).numpy()
    >>> tg.manual_seed(1); bool((tg.randn(2).numpy() == first).all())
    True
    """
    shape = checked_shape(varargs_shape(shape), "randn")
    data = _generator(seed, generator, "randn").standard_normal(shape).astype(dtype)
    return _fresh(data, requires_grad)


def rand(*shape, seed=None, generator=None, dtype=DEFAULT_DTYPE, requires_grad=False):
    """Uniform samples in [0, 1), drawn as `randn`'s (generator, seed or the shared one).

    >>> import tinygrad_ops as tg
    >>> sample = tg.rand(2, 3, seed=0)
    >>> sample.shape, bool(((sample.numpy() >= 0) & (sample.numpy() < 1)).all())
    ((2, 3), True)
    """
    shape = checked_shape(varargs_shape(shape), "rand")
    data = _generator(seed, generator, "rand").random(shape).astype(dtype)
    return _fresh(data, requires_grad)


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
        raise ArgumentError(
            f"arange: step must be nonzero (got start={start}, stop={stop}, step=0)"
        )
    for name, value in (("start", start), ("stop", stop), ("step", step)):
        if not math.isfinite(value):
            raise ArgumentError(f"arange: {name} must be finite, got {value}")
    if (stop - start) * step < 0:
        raise ArgumentError(
            f"arange: the step {step} goes away from stop: start={start}, stop={stop} "
            "(upper bound and lower bound inconsistent with step sign)"
        )


def eye(n, m=None, dtype=DEFAULT_DTYPE):
    """The n x n identity matrix (n x m with ones on the diagonal, given m).

    >>> import tinygrad_ops as tg
    >>> tg.eye(2).numpy()
    array([[1., 0.],
           [0., 1.]], dtype=float32)
    >>> tg.eye(2, 3).shape
    (2, 3)
    """
    for name, size in (("n", n), ("m", n if m is None else m)):
        if not isinstance(size, (int, np.integer)) or isinstance(size, (bool, np.bool_)):
            raise TypeError(f"eye: {name} must be an int, got {size!r}")
        if size < 0:
            raise ArgumentError(f"eye: {name} must be greater or equal to 0, got {size}")
    return _fresh(np.eye(n, m, dtype=dtype))


def linspace(start, end, steps, dtype=None, requires_grad=False):
    """`steps` evenly spaced values from start to end, both included, as torch.linspace
    (float32 unless `dtype` says otherwise): the first half counted up from start, the
    second half down from end, as PyTorch computes them, so both ends are exact.

    >>> import tinygrad_ops as tg
    >>> tg.linspace(0, 1, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    start, end = (_endpoint(value, name) for value, name in ((start, "start"), (end, "end")))
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, (bool, np.bool_)):
        raise TypeError(f"linspace: steps must be an int, got {steps!r}")
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    dtype = _spaced_dtype(dtype, "linspace")
    return _fresh(_spaced(start, end, steps, dtype).astype(dtype), requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, requires_grad=False):
    """base ** linspace(start, end, steps): `steps` values spaced evenly on a log scale from
    base**start to base**end, as torch.logspace.

    >>> import tinygrad_ops as tg
    >>> tg.logspace(0, 2, 3).tolist()
    [1.0, 10.0, 100.0]
    """
    dtype = _spaced_dtype(dtype, "logspace")
    exponents = linspace(start, end, steps, dtype=np.float64).data
    return _fresh(np.power(float(base), exponents).astype(dtype), requires_grad)


def _spaced_dtype(dtype, op_name):
    """float32 by default; a number dtype (PyTorch has no bool ranges: NotImplementedError)."""
    dtype = np.dtype(DEFAULT_DTYPE if dtype is None else dtype)
    if dtype.kind not in "iuf":
        raise NotImplementedError(f"{op_name}: not implemented for dtype {dtype}, as PyTorch's")
    return dtype


def _spaced(start, end, steps, dtype):
    """PyTorch's linspace (aten's CPU kernel): start + i step for the first half, end -
    (steps - 1 - i) step for the rest, in the result's float dtype; for an integer dtype
    the ends are made integers first and the steps taken in float64."""
    work = dtype if dtype.kind == "f" else np.dtype(np.float64)
    if dtype.kind != "f":
        start, end = math.trunc(start), math.trunc(end)
    start, end = work.type(start), work.type(end)
    if steps == 1:
        return np.array([start], dtype=work)
    step = (end - start) / work.type(steps - 1)
    positions = np.arange(steps, dtype=work)
    reverse = np.arange(steps - 1, -1, -1, dtype=work)
    return np.where(np.arange(steps) < steps // 2, start + step * positions, end - step * reverse)


def _endpoint(value, name):
    if hasattr(value, "item") and np.ndim(value) == 0:  # a 0-d Tensor or array
        value = value.item()
    check_number("linspace", value, name)
    return float(value)


def randn_like(tensor, dtype=None, seed=None, generator=None, requires_grad=False):
    """Standard normal samples in the shape (and float dtype, unless given) of `tensor`,
    drawn as `randn`'s.

    >>> import tinygrad_ops as tg
    >>> tg.randn_like(tg.zeros(2, 3, dtype="float64")).dtype
    dtype('float64')
    """
    dtype = _like_dtype(tensor, dtype, "randn_like")
    return randn(*tensor.shape, seed=seed, generator=generator, dtype=dtype,
                 requires_grad=requires_grad)  # fmt: skip


def rand_like(tensor, dtype=None, seed=None, generator=None, requires_grad=False):
    """Uniform samples in [0, 1) in the shape (and float dtype, unless given) of `tensor`.

    >>> import tinygrad_ops as tg
    >>> tg.rand_like(tg.zeros(4)).shape
    (4,)
    """
    dtype = _like_dtype(tensor, dtype, "rand_like")
    return rand(*tensor.shape, seed=seed, generator=generator, dtype=dtype,
                requires_grad=requires_grad)  # fmt: skip


def _like_dtype(tensor, dtype, op_name):
    dtype = np.dtype(tensor.dtype if dtype is None else dtype)
    if dtype.kind != "f":
        raise NotImplementedError(
            f"{op_name}: random floats need a floating-point dtype, got {dtype} (pass dtype=)"
        )
    return dtype


def randint(low, high=None, size=None, seed=None, generator=None, dtype=np.int64):
    """Integers drawn uniformly from [low, high) (or [0, low) given one bound), in the shape
    `size`, as torch.randint (int64), from `generator`, `seed` or the shared generator.

    >>> import tinygrad_ops as tg
    >>> sample = tg.randint(3, 7, (2, 5), seed=0)
    >>> sample.dtype, bool(((sample.numpy() >= 3) & (sample.numpy() < 7)).all())
    (dtype('int64'), True)
    """
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size), as PyTorch
        high, size = None, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint: size (a tuple of ints) is required")
    if low >= high:
        raise RuntimeError(
            f"randint: random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    shape = checked_shape(tuple(size) if isinstance(size, (tuple, list)) else (size,), "randint")
    values = _generator(seed, generator, "randint").integers(low, high, size=shape)
    return _fresh(values.astype(dtype))
