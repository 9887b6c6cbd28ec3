"""The neural-network primitives: fused ops whose backward rule is derived by hand.

Each class is one node of the tape, with the forward formula and the backward formula in
its docstring; `docs/derivations.md` derives every rule step by step. They are fused
because the derivation is the lesson, and because one node with a hand-written rule is
several times faster than a graph of small ops (fewer temporaries, no tape per step).

How the two kinds of backward work here (see the autograd module docstring)
    A plain backward receives numpy arrays. The rules then take a fast path: they reuse the
    intermediates saved in forward (the normalised input, 1/std, the softmax output) and
    write into arrays they own (`out=`, in-place updates), float32 end to end.
    Under `create_graph=True` the rule receives Tensors, and saved intermediates would be
    constants of the new graph, which is wrong for everything that depends on the input
    (x-hat and 1/std depend on x). So in that mode (`self.graph_mode` true) each rule
    evaluates the *same formula* with operations that numpy arrays and Tensors both
    support, recomputing those intermediates from the input Tensors (or reading the output
    Tensor, for softmax): the result is differentiable again (double backward,
    Hessian-vector products) at the cost of speed. Values that do not depend on any input
    (the dropout mask, one-hot targets, running statistics in eval mode) stay saved
    constants. `docs/derivations.md` ends with the same explanation.

float16
    softmax, log_softmax and the norms compute in float32 inside and return float16: the
    statistics (sums of exponentials, variances) overflow or lose all precision in half
    precision. float32 and float64 inputs are computed in their own dtype, never upcast.
"""

import math

import numpy as np

from ..autograd import Op
from . import dispatch, register

try:  # scipy is optional: the engine depends on numpy only.
    from scipy.special import erf as _scipy_erf
except ImportError:  # pragma: no cover - exercised by forcing the fallback in the tests
    _scipy_erf = None


# ----------------------------------------------------------------------------------------------
# Helpers shared by the rules


def _is_tensor(value):
    return dispatch._is_tensor(value)


def exp(value):
    """`np.exp` for arrays, `Tensor.exp` for Tensors (a backward rule may get either)."""
    return value.exp() if _is_tensor(value) else np.exp(value)


_LOG2_E = 1.4426950408889634


# From this many elements exp_of_shifted's exp2 route is faster than np.exp (measured:
# 1.5 us against 0.6 us at 640 elements, 6 us against 7.8 us at 16,384).
_EXP2_FROM = 4096


def exp_of_shifted(values, out=None):
    """exp(values) for values <= 0 (logits minus their maximum), into `out` if given.

    float32 goes through exp(t) = 2^(t·log2 e): numpy's float32 exp2 runs about twice as
    fast as its exp. The extra rounding of t·log2 e costs a relative error of about
    |t|·1e-7, the same size as the rounding already in t = x - max(x) (so a probability
    near 1 is still exact to an ulp, and a tiny one to a few ulps). float64, and arrays
    below `_EXP2_FROM` elements, where the second call costs more than it saves, use exp.
    """
    if values.dtype != np.float32 or values.size < _EXP2_FROM:
        return np.exp(values, out=out)
    scaled = np.multiply(values, np.float32(_LOG2_E), out=out)
    return np.exp2(scaled, out=scaled)


def compute_dtype(dtype):
    """The dtype an op computes in: float32 for float16 inputs, else the input's own."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def upcast(value):
    """float16 arrays or Tensors as float32; everything else unchanged."""
    if value is not None and value.dtype == np.float16:
        return value.astype(np.float32)
    return value


def like_inputs(node, grads):
    """`grads` cast to their inputs' dtypes, for the create_graph path: a plain backward's
    arrays are cast by the engine, but Tensors are not (float16 ops compute in float32)."""
    cast = []
    for grad, operand in zip(grads, node.inputs):
        dtype = getattr(operand, "dtype", None)
        if grad is not None and dtype is not None and grad.dtype != dtype:
            grad = grad.astype(dtype)
        cast.append(grad)
    return tuple(cast)


def check_float(op_name, array, what="input"):
    if not isinstance(array, np.ndarray) or array.dtype.kind != "f":
        dtype = getattr(array, "dtype", type(array).__name__)
        raise TypeError(f"{op_name}: the {what} must be a floating-point tensor, got {dtype}")


class RowBuffers:
    """`np.errstate(**error_handling)` in which numpy's ufunc buffer is at most one row long.

    For rows of 512 to 8191 elements this makes the broadcast updates of the fused ops
    (per-row statistics such as `out -= mean`, per-column parameters such as `out *= w`)
    run about 1.5 times faster: with a buffer longer than a row, numpy's iterator copies
    the broadcast operand row after row into its buffer to make longer inner loops, an
    extra pass over the data; with a buffer of at most one row it runs each row directly.
    Measured on (256, 1024) float32: 52 us per update with the default buffer of 8192,
    33 us with 1024, the cost of a plain `a * b` of two full arrays. Reductions along rows
    (`np.maximum.reduce`) are a little slower with it, so they run before entering.
    The previous buffer size is restored on exit (numpy 2's errstate would restore it too,
    numpy 1's would not).
    """

    __slots__ = ("length", "state", "previous")

    def __init__(self, length, **error_handling):
        self.length = length
        # Nothing to set for short rows without error handling: then this costs ~0.3 us.
        self.state = np.errstate(**error_handling) if error_handling else None
        self.previous = None

    def __enter__(self):
        if self.state is not None:
            self.state.__enter__()
        if 512 <= self.length < 8192:  # the default buffer is 8192 elements
            self.previous = np.setbufsize(self.length - self.length % 16)  # a multiple of 16
        return self

    def __exit__(self, *exception):
        if self.previous is not None:
            np.setbufsize(self.previous)
        if self.state is not None:
            self.state.__exit__(*exception)


_VECTORS = {}  # (kind, *arguments) -> a read-only vector (see `_cached_vector`)


def _cached_vector(key, length, make):
    """`make()`, made read-only and kept for the next call with the same `key`: building
    a small vector costs a microsecond of Python per call, as much as the BLAS product it
    feeds for a small layer. Vectors longer than 65,536 are made afresh each time, and the
    cache is emptied when it holds 128 (a few shapes recur in a training loop)."""
    vector = _VECTORS.get(key)
    if vector is None:
        vector = make()
        if length <= 65536:
            if len(_VECTORS) >= 128:
                _VECTORS.clear()
            vector.flags.writeable = False
            _VECTORS[key] = vector
    return vector


def ones_vector(length, dtype):
    """A read-only vector of `length` ones, cached (see `_cached_vector`)."""
    return _cached_vector(("ones", length, dtype), length, lambda: np.ones(length, dtype=dtype))


def row_starts(rows, columns):
    """0, columns, 2·columns, ...: where each row of a flattened (rows, columns) array
    starts; read-only and cached (see `_cached_vector`)."""
    return _cached_vector(
        ("row starts", rows, columns), rows, lambda: np.arange(0, rows * columns, columns)
    )


def row_sum(matrix):
    """Sums of the rows of a C-contiguous 2-D array, shape (rows, 1).

    A matrix-vector product with a vector of ones runs in BLAS, about three times faster
    than `np.add.reduce` along the last axis for the (256, 1024) shapes of a small model.
    """
    rows, columns = matrix.shape
    if rows == 0 or columns == 0:
        return np.add.reduce(matrix, axis=1, keepdims=True)
    return np.matmul(matrix, ones_vector(columns, matrix.dtype)).reshape(rows, 1)


def column_sum(matrix):
    """Sums of the columns of a 2-D array, shape (columns,): a BLAS product with ones (as
    row_sum; twice as fast as `np.add.reduce` at (64, 128)) for C-contiguous float32 and
    float64, `np.add.reduce` otherwise, a recorded sum for a Tensor (create_graph)."""
    if type(matrix) is not np.ndarray:
        return matrix.sum(axis=0)
    rows, columns = matrix.shape
    if rows == 0 or columns == 0 or matrix.dtype == np.float16 or not matrix.flags.c_contiguous:
        return np.add.reduce(matrix, axis=0)
    return np.matmul(ones_vector(rows, matrix.dtype), matrix)


def as_matrix(array):
    """`array` as (rows, last dim): itself when it is 2-D already (no reshape call)."""
    return array if array.ndim == 2 else array.reshape((-1, array.shape[-1]))


_vecdot = getattr(np, "vecdot", None)  # numpy >= 2.0: twice as fast as einsum here


def row_dot(a, b):
    """sum_j a[i, j] * b[i, j] for every row i, shape (rows, 1), without a temporary."""
    if _vecdot is not None:
        return _vecdot(a, b).reshape(a.shape[0], 1)
    return np.einsum("ij,ij->i", a, b).reshape(a.shape[0], 1)


def column_dot(a, b):
    """sum_i a[i, j] * b[i, j] for every column j, shape (columns,), without a temporary."""
    return np.einsum("ij,ij->j", a, b)


def as_rows(array, axis):
    """`array` with `axis` moved last and the rest flattened: a C-contiguous (rows, n) array."""
    if array.ndim == 2 and axis == 1 and array.flags.c_contiguous:
        return array  # already rows: no calls
    if array.ndim and axis != array.ndim - 1:
        array = np.moveaxis(array, axis, -1)
    length = array.shape[-1] if array.ndim else 1
    return np.ascontiguousarray(array).reshape(math.prod(array.shape[:-1]), length)


def row_max(rows):
    """The maximum of each row, shape (rows, 1) (zeros for rows of length 0)."""
    if rows.shape[1] == 0:
        return np.zeros((rows.shape[0], 1), dtype=rows.dtype)
    return np.maximum.reduce(rows, axis=1, keepdims=True)


def trailing_rows(array, k):
    """`array` as a (rows, n) matrix, n the product of its last k dims (a view if possible)."""
    return array.reshape(math.prod(array.shape[: array.ndim - k]), math.prod(array.shape[-k:]))


def reshaped(array, shape):
    """`array` with `shape`; itself (not a view) when it has that shape already, so that the
    engine can treat a returned gradient as its own (no defensive copy for a leaf's .grad)."""
    return array if array.shape == shape else array.reshape(shape)


def from_rows(rows, shape, axis):
    """Undo `as_rows`: back to `shape` with the last axis moved to `axis` (C-contiguous).

    Returns `rows` itself when no reshape is needed (see `reshaped`).
    """
    last = len(shape) - 1
    if axis == last and rows.shape == shape:
        return rows
    moved = shape[:axis] + shape[axis + 1 :] + (shape[axis],) if shape else ()
    array = rows.reshape(moved)
    if shape and axis != last:
        array = np.ascontiguousarray(np.moveaxis(array, -1, axis))
    return array


def normalize_axis(axis, ndim, op_name):
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{op_name}: axis must be an int, got {axis!r}")
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ValueError(f"{op_name}: axis {axis} is out of range for a {ndim}-d tensor")
    return int(axis) % max(ndim, 1)


# ----------------------------------------------------------------------------------------------
# Activations


def erf_numpy(x):
    """The error function in pure numpy, accurate to about 1e-15 (used when scipy is absent).

    |x| < 3: the series erf x = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1·3···(2n+1))
    (Abramowitz & Stegun 7.1.6), whose terms are all positive (no cancellation).
    |x| >= 3: erfc x = exp(-x^2)/sqrt(pi) · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
    (the continued fraction A&S 7.1.14), evaluated bottom-up with 60 levels.
    """
    x = np.asarray(x, dtype=np.float64)
    magnitude = np.abs(x)
    out = np.empty_like(x)
    small = magnitude < 3.0
    if np.any(small):
        z = x[small]
        two_z_squared = 2.0 * z * z
        term = z.copy()
        total = z.copy()
        for n in range(1, 120):
            term = term * two_z_squared / (2 * n + 1)
            total += term
            if np.all(np.abs(term) <= 1e-17 * np.abs(total)):
                break
        out[small] = (2.0 / math.sqrt(math.pi)) * np.exp(-z * z) * total
    large = ~small & ~np.isnan(x)
    if np.any(large):
        z = magnitude[large]
        fraction = z.copy()
        for k in range(60, 0, -1):
            fraction = z + (k / 2.0) / fraction
        complement = np.exp(-z * z) / (math.sqrt(math.pi) * fraction)
        out[large] = np.sign(x[large]) * (1.0 - complement)
    out[np.isnan(x)] = np.nan
    return out


def erf_array(x):
    """erf of a numpy array in its own dtype: scipy's when importable, else `erf_numpy`."""
    if _scipy_erf is not None:
        return _scipy_erf(x)
    return erf_numpy(x).astype(x.dtype, copy=False)


def erf(value):
    """erf for arrays (`erf_array`) and for Tensors (the differentiable `Erf` primitive)."""
    return Erf.apply(value) if _is_tensor(value) else erf_array(value)


class Erf(Op):
    """out = erf(a);  da = g * 2/sqrt(pi) * exp(-a^2)"""

    __slots__ = ()

    def forward(self, a):
        self.save_for_backward(a)
        return erf_array(a)

    def backward(self, grad_output):
        (a,) = self.saved_tensors
        return (grad_output * (exp(a * a * -1.0) * (2.0 / math.sqrt(math.pi))),)


class Gelu(Op):
    """out = x Φ(x), Φ(x) = (1 + erf(x/√2))/2;  dx = g (Φ(x) + x φ(x)), φ(x) = exp(-x²/2)/√(2π)"""

    __slots__ = ()

    def forward(self, x):
        check_float("gelu", x)
        wide = upcast(x)
        cdf = erf_array(wide * (1.0 / math.sqrt(2.0)))
        cdf += 1.0
        cdf *= 0.5
        self.save_for_backward(x, cdf)
        return (wide * cdf).astype(x.dtype, copy=False)

    def backward(self, grad_output):
        x, cdf = self.saved_tensors
        x = upcast(x)
        density = exp(x * x * -0.5) * (1.0 / math.sqrt(2.0 * math.pi))
        if self.graph_mode is not False:  # Φ recomputed from the Tensor x: differentiable
            cdf = (erf(x * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5
            return like_inputs(self, (grad_output * (cdf + x * density),))
        return (grad_output * (cdf + x * density),)


class LeakyRelu(Op):
    """out = x if x > 0 else s x;  dx = g if x > 0 else s g"""

    __slots__ = ()

    def forward(self, x, negative_slope):
        check_float("leaky_relu", x)
        slope = np.where(x > 0, x.dtype.type(1), x.dtype.type(negative_slope))
        self.save_for_backward(slope)
        return x * slope

    def backward(self, grad_output):
        (slope,) = self.saved_tensors
        return (grad_output * slope,)


# ----------------------------------------------------------------------------------------------
# softmax and log_softmax


class Softmax(Op):
    """y = exp(x - max x) / sum(exp(x - max x));  dx = y * (g - sum(g * y))  (sums along axis)

    The Jacobian dy_i/dx_j = y_i (δ_ij - y_j) is never built: its product with g is the
    elementwise formula above (derivations.md, "the Jacobian-vector shortcut").
    """

    __slots__ = ("axis",)

    def forward(self, x, axis):
        check_float("softmax", x)
        axis = normalize_axis(axis, x.ndim, "softmax")
        self.axis = axis
        rows = as_rows(upcast(x), axis)
        maximum = row_max(rows)
        # invalid: a row of only -inf gives NaN, as in PyTorch; divide: rows of length 0.
        with RowBuffers(rows.shape[1], invalid="ignore", divide="ignore"):
            out = np.subtract(rows, maximum)
            exp_of_shifted(out, out=out)
            out *= np.reciprocal(row_sum(out))  # one division per row, then products
        out = from_rows(out, x.shape, axis).astype(x.dtype, copy=False)
        self.save_for_backward(out)
        return out

    def backward(self, grad_output):
        (y,) = self.saved_tensors
        axis = self.axis
        if self.graph_mode is not False:
            g = upcast(grad_output)
            y = upcast(y)
            return like_inputs(self, (y * (g - (g * y).sum(axis=axis, keepdims=True)),))
        shape = y.shape
        y = as_rows(upcast(y), axis)
        g = as_rows(upcast(grad_output), axis)
        with RowBuffers(y.shape[1]):
            grad = np.subtract(g, row_dot(g, y))
            grad *= y
        return (from_rows(grad, shape, axis),)


class LogSoftmax(Op):
    """y = x - max x - log sum exp(x - max x);  dx = g - exp(y) * sum(g)  (sums along axis)"""

    __slots__ = ("axis",)

    def forward(self, x, axis):
        check_float("log_softmax", x)
        axis = normalize_axis(axis, x.ndim, "log_softmax")
        self.axis = axis
        rows = as_rows(upcast(x), axis)
        maximum = row_max(rows)
        # invalid: a row of only -inf gives NaN, as in PyTorch; divide: rows of length 0
        # (their output is empty).
        with RowBuffers(rows.shape[1], invalid="ignore", divide="ignore"):
            out = np.subtract(rows, maximum)
            probabilities = exp_of_shifted(out)
            total = row_sum(probabilities)
            out -= np.log(total)
            # Keep softmax = exp(y) from the forward pass: a product now is cheaper than the
            # exp that backward would otherwise recompute.
            probabilities *= np.reciprocal(total)
        with np.errstate(over="ignore"):  # float16: below -65504 is -inf, as in PyTorch
            out = from_rows(out, x.shape, axis).astype(x.dtype, copy=False)
        self.save_for_backward(out, probabilities)
        return out

    def backward(self, grad_output):
        y, probabilities = self.saved_tensors
        axis = self.axis
        if self.graph_mode is not False:  # exp(y) from the output Tensor: differentiable
            g = upcast(grad_output)
            return like_inputs(self, (g - exp(upcast(y)) * g.sum(axis=axis, keepdims=True),))
        g = as_rows(upcast(grad_output), axis)
        with RowBuffers(g.shape[1]):
            grad = np.multiply(probabilities, row_sum(g))
            np.subtract(g, grad, out=grad)
        return (from_rows(grad, y.shape, axis),)


# ----------------------------------------------------------------------------------------------
# The norms


def check_affine(op_name, name, parameter, expected_shape, x):
    if parameter is None:
        return
    check_float(op_name, parameter, name)
    if parameter.shape != tuple(expected_shape):
        raise ValueError(
            f"{op_name}: {name} has shape {parameter.shape}, expected {tuple(expected_shape)}"
        )
    if parameter.dtype != x.dtype:
        raise TypeError(
            f"{op_name}: {name} has dtype {parameter.dtype} but the input has dtype {x.dtype}; "
            "convert one of them (mixing dtypes would silently change the output's dtype)"
        )


def statistics_composed(x, axes, eps):
    """x-hat = (x - mean) / sqrt(var + eps) and 1/sqrt(var + eps), over `axes`, in operations
    that arrays and Tensors share (the create_graph path recomputes them from x with this)."""
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    inverse_std = ((centered * centered).mean(axis=axes, keepdims=True) + eps) ** -0.5
    return centered * inverse_std, inverse_std


def norm_input_grad_composed(grad_xhat, xhat, inverse_std, axes):
    """dx = (dx̂ - mean(dx̂) - x̂ · mean(dx̂ · x̂)) / std, means over the normalised `axes`."""
    mean_grad = grad_xhat.mean(axis=axes, keepdims=True)
    mean_projection = (grad_xhat * xhat).mean(axis=axes, keepdims=True)
    return (grad_xhat - mean_grad - xhat * mean_projection) * inverse_std


def norm_input_grad_rows(g, weight, xhat, inverse_std):
    """The same formula on (rows, n) arrays normalised along each row, with dx̂ = g w:
    dx = s - mean(s) - x̂ mean(s x̂), s = g w / std (the 1/std of each row folded in first).

    s is built as (1/std) wᵀ, an outer product written in one pass, times g in place: one
    pass cheaper than g w followed by a per-row scaling. Then two row reductions (BLAS)
    and three passes for the correction.
    """
    count = max(xhat.shape[1], 1)
    if weight is not None:
        scaled = np.multiply(inverse_std, upcast(weight).reshape(-1))
        scaled *= g
    else:
        scaled = np.multiply(g, inverse_std)
    mean_grad = row_sum(scaled) / count
    mean_projection = row_dot(scaled, xhat) / count
    correction = np.multiply(xhat, mean_projection)
    correction += mean_grad
    scaled -= correction
    return scaled


def check_normalized_shape(op_name, x, normalized_shape):
    normalized_shape = tuple(int(size) for size in normalized_shape)
    k = len(normalized_shape)
    if k == 0 or x.ndim < k or x.shape[x.ndim - k :] != normalized_shape:
        raise ValueError(
            f"{op_name}: normalized_shape={normalized_shape} must be the last "
            f"{k} dims of the input, but the input has shape {x.shape}"
        )
    return normalized_shape


class LayerNorm(Op):
    """y = x̂ w + b, x̂ = (x - mean) / sqrt(var + eps) over the last k dims (biased var);
    dx = (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)) / sqrt(var + eps) with dx̂ = g w;
    dw = sum over the batch of g x̂;  db = sum over the batch of g"""

    __slots__ = ("normalized_shape", "eps")

    def forward(self, x, weight, bias, normalized_shape, eps):
        check_float("layer_norm", x)
        normalized_shape = check_normalized_shape("layer_norm", x, normalized_shape)
        check_affine("layer_norm", "weight", weight, normalized_shape, x)
        check_affine("layer_norm", "bias", bias, normalized_shape, x)
        self.normalized_shape = normalized_shape
        self.eps = eps
        rows = trailing_rows(upcast(x), len(normalized_shape))
        count = max(rows.shape[1], 1)  # the divisor (an empty normalized_shape gives empty rows)
        with RowBuffers(rows.shape[1]):
            # Two passes (mean, then the mean of squared deviations): exact for constant
            # rows, where E[x^2] - E[x]^2 would cancel catastrophically.
            centered = np.subtract(rows, row_sum(rows) / count)
            inverse_std = row_dot(centered, centered) / count
            inverse_std += eps
            np.sqrt(inverse_std, out=inverse_std)
            np.reciprocal(inverse_std, out=inverse_std)
            xhat = centered
            xhat *= inverse_std
            if weight is not None:
                out = np.multiply(xhat, upcast(weight).reshape(-1))
                if bias is not None:
                    out += upcast(bias).reshape(-1)
            elif bias is not None:
                out = np.add(xhat, upcast(bias).reshape(-1))
            else:  # xhat is saved: the output must be another array (float16's cast makes one)
                out = xhat.copy() if x.dtype == xhat.dtype else xhat
        # x for the create_graph path (and its version check, as in PyTorch), weight for dx̂.
        self.save_for_backward(x, weight, xhat, inverse_std)
        return reshaped(out, x.shape).astype(x.dtype, copy=False)

    def backward(self, grad_output):
        if self.graph_mode is not False:
            return like_inputs(self, self.backward_composed(grad_output))
        _, weight, xhat, inverse_std = self.saved_tensors
        needs_x, needs_weight, needs_bias = self.needs_input_grad
        g = upcast(grad_output).reshape(xhat.shape)
        shape = self.normalized_shape
        with RowBuffers(xhat.shape[1]):
            grad_weight = column_dot(g, xhat).reshape(shape) if needs_weight else None
            grad_bias = column_sum(g).reshape(shape) if needs_bias else None
            grad_x = None
            if needs_x:
                grad_x = norm_input_grad_rows(g, weight, xhat, inverse_std)
        return reshaped(grad_x, grad_output.shape) if needs_x else None, grad_weight, grad_bias

    def backward_composed(self, grad_output):
        x, weight, _, _ = self.saved_tensors
        bias = self.inputs[2]
        k = len(self.normalized_shape)
        axes = tuple(range(x.ndim - k, x.ndim))
        batch_axes = tuple(range(x.ndim - k))
        g = upcast(grad_output)
        xhat, inverse_std = statistics_composed(upcast(x), axes, self.eps)
        grad_xhat = g * upcast(weight) if weight is not None else g
        grad_x = norm_input_grad_composed(grad_xhat, xhat, inverse_std, axes)
        grad_weight = (g * xhat).sum(axis=batch_axes) if weight is not None else None
        grad_bias = g.sum(axis=batch_axes) if bias is not None else None
        return grad_x, grad_weight, grad_bias


class RMSNorm(Op):
    """y = x̂ w, x̂ = x / sqrt(mean(x²) + eps) over the last k dims;
    dx = (dx̂ - x̂ mean(dx̂ x̂)) / sqrt(mean(x²) + eps) with dx̂ = g w;  dw = sum of g x̂"""

    __slots__ = ("normalized_shape", "eps")

    def forward(self, x, weight, normalized_shape, eps):
        check_float("rms_norm", x)
        normalized_shape = check_normalized_shape("rms_norm", x, normalized_shape)
        check_affine("rms_norm", "weight", weight, normalized_shape, x)
        self.normalized_shape = normalized_shape
        self.eps = eps
        rows = trailing_rows(upcast(x), len(normalized_shape))
        count = max(rows.shape[1], 1)  # the divisor (an empty normalized_shape gives empty rows)
        inverse_rms = row_dot(rows, rows) / count
        inverse_rms += eps
        np.sqrt(inverse_rms, out=inverse_rms)
        np.reciprocal(inverse_rms, out=inverse_rms)
        with RowBuffers(rows.shape[1]):
            xhat = np.multiply(rows, inverse_rms)
            if weight is not None:
                out = np.multiply(xhat, upcast(weight).reshape(-1))
            else:  # xhat is saved: the output must be another array (float16's cast makes one)
                out = xhat.copy() if x.dtype == xhat.dtype else xhat
        self.save_for_backward(x, weight, xhat, inverse_rms)
        return reshaped(out, x.shape).astype(x.dtype, copy=False)

    def backward(self, grad_output):
        x, weight, xhat, inverse_rms = self.saved_tensors
        if self.graph_mode is not False:
            return like_inputs(self, self.backward_composed(grad_output, x, weight))
        count = max(xhat.shape[1], 1)
        g = upcast(grad_output).reshape(xhat.shape)
        grad_weight = grad_x = None
        with RowBuffers(xhat.shape[1]):
            if self.needs_input_grad[1]:
                grad_weight = column_dot(g, xhat).reshape(self.normalized_shape)
            if self.needs_input_grad[0]:
                # s = g w / rms (as in layer_norm's rule); dx = s - x̂ mean(s x̂)
                if weight is not None:
                    scaled = np.multiply(inverse_rms, upcast(weight).reshape(-1))
                    scaled *= g
                else:
                    scaled = np.multiply(g, inverse_rms)
                correction = np.multiply(xhat, row_dot(scaled, xhat) / count)
                scaled -= correction
                grad_x = reshaped(scaled, grad_output.shape)
        return grad_x, grad_weight

    def backward_composed(self, grad_output, x, weight):
        k = len(self.normalized_shape)
        axes = tuple(range(x.ndim - k, x.ndim))
        g = upcast(grad_output)
        x = upcast(x)
        inverse_rms = ((x * x).mean(axis=axes, keepdims=True) + self.eps) ** -0.5
        xhat = x * inverse_rms
        grad_xhat = g * upcast(weight) if weight is not None else g
        projection = (grad_xhat * xhat).mean(axis=axes, keepdims=True)
        grad_x = (grad_xhat - xhat * projection) * inverse_rms
        grad_weight = None
        if weight is not None:
            grad_weight = (g * xhat).sum(axis=tuple(range(x.ndim - k)))
        return grad_x, grad_weight


class BatchNorm(Op):
    """Training: y = x̂ w + b, x̂ = (x - mean) / sqrt(var + eps), mean and biased var per
    channel over the batch (and length) axes; dx = (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)) / std
    with dx̂ = g w. Eval: x̂ = (x - running_mean) / sqrt(running_var + eps), a constant
    affine map, so dx = g w / sqrt(running_var + eps). Both: dw = sum g x̂, db = sum g."""

    __slots__ = ("training", "eps")

    def forward(self, x, weight, bias, running_mean, running_var, training, momentum, eps):
        check_float("batch_norm", x)
        if x.ndim not in (2, 3):
            raise ValueError(
                f"batch_norm: expected a 2-d (N, C) or 3-d (N, C, L) input, got shape {x.shape}"
            )
        channels = x.shape[1]
        check_affine("batch_norm", "weight", weight, (channels,), x)
        check_affine("batch_norm", "bias", bias, (channels,), x)
        for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
            if stat is not None and stat.shape != (channels,):
                raise ValueError(
                    f"batch_norm: {name} has shape {stat.shape}, expected ({channels},) "
                    f"for an input of shape {x.shape}"
                )
        self.training = training
        self.eps = eps
        # Channels last, as a (rows, C) matrix: per-channel statistics are column reductions.
        columns = as_rows(upcast(x), 1)
        count = columns.shape[0]
        if training:
            if count == 0:
                raise ValueError(
                    f"batch_norm: cannot compute batch statistics of an empty batch (input "
                    f"shape {x.shape}) in training mode"
                )
            if count == 1:
                raise ValueError(
                    "batch_norm: expected more than 1 value per channel when training, got "
                    f"input of shape {x.shape}"
                )
            mean = column_sum(columns) / count
            with RowBuffers(columns.shape[1]):
                centered = np.subtract(columns, mean)
            variance = column_dot(centered, centered) / count
            if running_mean is not None:
                running_mean *= 1 - momentum
                running_mean += momentum * mean
            if running_var is not None:
                running_var *= 1 - momentum
                running_var += (momentum * count / (count - 1)) * variance
            inverse_std = np.reciprocal(np.sqrt(variance + eps))
        else:
            if running_mean is None or running_var is None:
                raise ValueError("batch_norm: eval mode needs running_mean and running_var")
            inverse_std = np.reciprocal(np.sqrt(upcast(running_var) + eps))
            with RowBuffers(columns.shape[1]):
                centered = np.subtract(columns, upcast(running_mean))
            running_mean = running_mean.copy()  # a constant of backward, whatever comes next
        # Every factor is per channel, so x̂ w = (x - mean) · (w / std): one pass, and x̂
        # itself is never stored (backward folds 1/std into its per-channel sums).
        self.save_for_backward(x, weight, centered, inverse_std, None if training else running_mean)
        scale = inverse_std * upcast(weight) if weight is not None else inverse_std
        with RowBuffers(columns.shape[1]):
            out = np.multiply(centered, scale)
            if bias is not None:
                out += upcast(bias)
        return from_rows(out, x.shape, 1).astype(x.dtype, copy=False)

    def backward(self, grad_output):
        if self.graph_mode is not False:
            return like_inputs(self, self.backward_composed(grad_output))
        _, weight, centered, inverse_std, _ = self.saved_tensors
        needs_x, needs_weight, needs_bias = self.needs_input_grad
        g = as_rows(upcast(grad_output), 1)
        count = centered.shape[0]
        grad_sum = column_sum(g) if needs_bias or (needs_x and self.training) else None
        # sum over the batch of g x̂ = (sum of g (x - mean)) / std
        projection = None
        if needs_weight or (needs_x and self.training):
            projection = column_dot(g, centered) * inverse_std
        grad_x = None
        if needs_x:
            scale = inverse_std * upcast(weight) if weight is not None else inverse_std
            with RowBuffers(g.shape[1]):
                grad_x = np.multiply(g, scale)
                if self.training:
                    # dx = (w/std) (g - mean(g) - x̂ mean(g x̂)), regrouped per channel:
                    # g·(w/std) - (x - mean)·(w/std² · mean(g x̂)) - (w/std)·mean(g)
                    correction = np.multiply(centered, scale * inverse_std * (projection / count))
                    correction += scale * (grad_sum / count)
                    grad_x -= correction
            grad_x = from_rows(grad_x, grad_output.shape, 1)
        grad_weight = projection if needs_weight else None
        return grad_x, grad_weight, grad_sum if needs_bias else None

    def backward_composed(self, grad_output):
        x, weight, _, inverse_std, running_mean = self.saved_tensors
        bias = self.inputs[2]
        axes = (0,) if x.ndim == 2 else (0, 2)
        channel_shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        g = upcast(grad_output)
        x = upcast(x)
        if self.training:
            xhat, inverse_std = statistics_composed(x, axes, self.eps)
        else:
            inverse_std = inverse_std.reshape(channel_shape)
            xhat = (x - upcast(running_mean).reshape(channel_shape)) * inverse_std
        scale = upcast(weight).reshape(channel_shape) if weight is not None else None
        grad_xhat = g * scale if scale is not None else g
        if self.training:
            grad_x = norm_input_grad_composed(grad_xhat, xhat, inverse_std, axes)
        else:
            grad_x = grad_xhat * inverse_std
        grad_weight = (g * xhat).sum(axis=axes) if weight is not None else None
        grad_bias = g.sum(axis=axes) if bias is not None else None
        return grad_x, grad_weight, grad_bias


# ----------------------------------------------------------------------------------------------
# Linear layer and losses


class Linear(Op):
    """y = x Wᵀ + b (W is (out, in));  dx = g W,  dW = gᵀ x,  db = sum of g (batch dims summed)"""

    __slots__ = ()

    def forward(self, x, weight, bias):
        check_float("linear", x)
        check_float("linear", weight, "weight")
        if weight.ndim != 2 or x.ndim == 0 or x.shape[-1] != weight.shape[1]:
            raise ValueError(
                f"linear: input of shape {x.shape} does not match weight of shape "
                f"{weight.shape} (expected weight (out_features, {x.shape[-1] if x.ndim else '?'}))"
            )
        out_features = weight.shape[0]
        if bias is not None and bias.shape != (out_features,):
            raise ValueError(
                f"linear: bias has shape {bias.shape}, expected ({out_features},) for weight "
                f"of shape {weight.shape}"
            )
        dtype = x.dtype
        if weight.dtype != dtype or (bias is not None and bias.dtype != dtype):
            name, value = ("weight", weight) if weight.dtype != dtype else ("bias", bias)
            raise TypeError(
                f"linear: {name} has dtype {value.dtype} but the input has dtype {dtype}"
            )
        needs_x, needs_weight, _ = self.needs_input_grad
        self.save_for_backward(x if needs_weight else None, weight if needs_x else None)
        out = np.matmul(as_matrix(x), weight.T)
        if bias is not None:
            out += bias
        return reshaped(out, x.shape[:-1] + (out_features,))

    def backward(self, grad_output):
        x, weight = self.saved_tensors
        needs_x, needs_weight, needs_bias = self.needs_input_grad
        g = as_matrix(grad_output)
        grad_x = grad_weight = grad_bias = None
        if needs_x:
            grad_x = reshaped(g @ weight, grad_output.shape[:-1] + (weight.shape[1],))
        if needs_weight:
            grad_weight = g.swapaxes(0, 1) @ as_matrix(x)
        if needs_bias:
            grad_bias = column_sum(g)
        return grad_x, grad_weight, grad_bias


# Integer dtypes and their unsigned twins (a view, not a conversion, of the target).
_UNSIGNED = {np.dtype(f"int{bits}"): np.dtype(f"uint{bits}") for bits in (8, 16, 32, 64)}


class CrossEntropy(Op):
    """loss_i = log sum_c exp(z_ic) - z_i,t_i (log_softmax and the pick fused), reduced by
    mean/sum/none;  dz_ic = g_i (softmax(z_i)_c - [c == t_i]) (divided by N for the mean)"""

    __slots__ = ("reduction", "target", "count", "class_count", "positions")

    def forward(self, logits, target, reduction):
        check_float("cross_entropy", logits, "logits")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(
                f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
            )
        target = np.asarray(target)
        if target.dtype.kind not in "iu":
            raise TypeError(
                f"cross_entropy: target must hold integer class indices, got dtype "
                f"{target.dtype} (class probabilities are not supported)"
            )
        expected = logits.shape[:1] + logits.shape[2:] if logits.ndim > 1 else ()
        if logits.ndim < 1 or target.shape != expected:
            raise ValueError(
                f"cross_entropy: logits of shape {logits.shape} (N, C, ...) need a target of "
                f"shape {expected}, got {target.shape}"
            )
        class_count = logits.shape[1] if logits.ndim > 1 else logits.shape[0]
        if logits.ndim == 1:  # a single sample of C logits with a 0-d target
            logits = logits.reshape(1, class_count)
        flat_target = target.reshape(-1)
        # One reduction checks both bounds: viewed as unsigned, a negative index is huge.
        unsigned = flat_target.view(_UNSIGNED.get(flat_target.dtype, flat_target.dtype))
        if flat_target.size and np.maximum.reduce(unsigned) >= class_count:
            bad = flat_target[(flat_target < 0) | (flat_target >= class_count)][0]
            raise IndexError(
                f"cross_entropy: target {bad} is out of bounds for {class_count} classes "
                f"(valid targets are 0 to {class_count - 1})"
            )
        self.reduction = reduction
        self.target = flat_target
        self.class_count = class_count
        rows = as_rows(upcast(logits), 1)
        count = rows.shape[0]
        self.count = count
        # Each sample's target logit, found by its position in the flattened (N, C) rows
        # (one `take`, and the backward reuses the positions).
        # (Checked above to lie in [0, C), the target converts to intp safely; an uint64
        # target plus an intp offset would otherwise promote to float64.)
        positions = row_starts(count, class_count) + flat_target.astype(np.intp, copy=False)
        self.positions = positions
        maximum = row_max(rows)
        with RowBuffers(class_count):
            shifted = np.subtract(rows, maximum)
            picked = shifted.reshape(-1).take(positions)
            exponentials = exp_of_shifted(shifted, out=shifted)
            total = row_sum(exponentials).reshape(count)
            losses = np.log(total)
            losses -= picked
            if self.needs_input_grad[0]:
                # softmax = exponentials / total: the division is left to the backward,
                # where it joins the multiplication by the upstream gradient (one pass).
                self.save_for_backward(exponentials, total.reshape(count, 1))
        if reduction == "none":
            out = losses.reshape(target.shape)
        elif reduction == "sum":
            out = np.add.reduce(losses)
        else:
            out = np.add.reduce(losses) / count if count else np.full((), np.nan, losses.dtype)
        out = np.asarray(out)
        if out.dtype == logits.dtype:
            return out
        with np.errstate(over="ignore"):  # float16: a loss above 65504 is inf, as in PyTorch
            return out.astype(logits.dtype)

    def backward(self, grad_output):
        exponentials, total = self.saved_tensors
        logits = self.inputs[0]
        count = self.count
        if self.reduction == "none":
            scale = upcast(grad_output).reshape((count, 1))
        elif self.reduction == "sum":
            scale = upcast(grad_output)
        else:
            scale = upcast(grad_output) * (1.0 / max(count, 1))
        shape = logits.shape
        if self.graph_mode is not False:  # softmax recomputed from the logits: differentiable
            return like_inputs(self, (self.backward_composed(logits, scale), None))
        with RowBuffers(exponentials.shape[1]):
            grad = np.multiply(exponentials, scale / total)  # softmax times the scale
        grad.reshape(-1)[self.positions] -= scale.reshape(-1) if scale.ndim else scale
        if len(shape) <= 2:
            return reshaped(grad, shape), None
        return from_rows(grad, shape, 1), None

    def backward_composed(self, logits, scale):
        """(softmax(z) - one_hot(t)) * scale, with z's class axis moved last and back."""
        shape = logits.shape
        count, class_count = self.count, self.class_count
        class_axis = 1 if len(shape) > 1 else 0
        probabilities = Softmax.apply(upcast(logits), axis=class_axis)
        # (N, C, d...) -> (N, d..., C): the order in which `target.reshape(-1)` lists samples.
        to_last = (0,) + tuple(range(2, len(shape))) + (1,) if len(shape) > 2 else None
        if to_last is not None:
            probabilities = probabilities.transpose(to_last)
        moved_shape = probabilities.shape
        one_hot = np.zeros((count, class_count), dtype=compute_dtype(logits.dtype))
        one_hot[np.arange(count), self.target] = 1.0
        grad = (probabilities.reshape((count, class_count)) - one_hot) * scale
        grad = grad.reshape(moved_shape)
        if to_last is not None:
            grad = grad.transpose(tuple(np.argsort(to_last)))
        return grad


class MSELoss(Op):
    """loss = mean((a - b)²) (or sum, or none);  da = 2 g (a - b) (/ n for the mean), db = -da"""

    __slots__ = ("reduction", "count")

    def forward(self, a, b, reduction):
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(
                f"mse_loss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
            )
        for name, value in (("input", a), ("target", b)):
            if isinstance(value, np.ndarray):
                check_float("mse_loss", value, name)
        try:
            difference = np.subtract(a, b)
        except ValueError:
            raise ValueError(
                f"mse_loss: input of shape {np.shape(a)} and target of shape {np.shape(b)} "
                "cannot be broadcast together"
            ) from None
        self.reduction = reduction
        self.count = difference.size
        self.save_for_backward(a, b, difference)
        if reduction == "none":
            return difference * difference
        flat = difference.reshape(-1)
        total = np.dot(flat, flat)
        if reduction == "sum":
            return np.asarray(total)
        return np.asarray(total / flat.size if flat.size else np.nan, dtype=difference.dtype)

    def backward(self, grad_output):
        a, b, difference = self.saved_tensors
        if self.graph_mode is not False:  # a - b from the input Tensors: differentiable
            difference = a - b
        scale = grad_output * 2.0
        if self.reduction == "mean":
            scale = scale * (1.0 / max(self.count, 1))
        grad = difference * scale
        return grad, -grad


class Dropout(Op):
    """y = x · m / (1 - p), m ~ Bernoulli(1 - p) per element;  dx = g · m / (1 - p)"""

    __slots__ = ()

    def forward(self, x, p, generator):
        check_float("dropout", x)
        if p >= 1.0:
            scaled_mask = np.zeros_like(x)
        else:
            keep = (
                generator.random(x.shape, dtype=np.float64 if x.dtype == np.float64 else np.float32)
                >= p
            )
            scaled_mask = np.multiply(keep, x.dtype.type(1.0 / (1.0 - p)), dtype=x.dtype)
        self.save_for_backward(scaled_mask)
        return x * scaled_mask

    def backward(self, grad_output):
        (scaled_mask,) = self.saved_tensors
        return (grad_output * scaled_mask,)


OPS = (Erf, Gelu, LeakyRelu, Softmax, LogSoftmax, LayerNorm, RMSNorm, BatchNorm, Linear,
       CrossEntropy, MSELoss, Dropout)  # fmt: skip

for _op in OPS:
    register(_op)
