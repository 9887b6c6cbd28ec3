"""Activations, softmax and dropout: fused primitives whose backward rule is derived by hand.

Each class is one node of the tape, with the forward formula and the backward formula in
its docstring; `docs/derivations.md` derives every rule step by step (`ops/dual.py` says how a
rule serves both a plain backward and create_graph, and how float16 is computed).
"""

import math

import numpy as np

from .base import Op
from .checks import check_float, normalize_axis
from .dtypes import promote_float
from .dual import _is_tensor, exp, like_inputs, upcast
from .jacobian import Diagonal, diagonal_kind
from .kernels import RowBuffers, as_rows, exp_of_shifted, from_rows, row_dot, row_max, row_sum

# scipy is optional (the engine depends on numpy only) and imported on the first erf: the
# import costs about 0.4 s, which every `import tinygrad_ops` paid at module level.
_NOT_LOADED = object()
_scipy_erf = _NOT_LOADED  # scipy's erf once looked up, None without scipy


def _load_scipy_erf():
    global _scipy_erf
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:  # pragma: no cover - exercised by forcing the fallback in the tests
        scipy_erf = None
    _scipy_erf = scipy_erf
    return scipy_erf


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
    scipy_erf = _load_scipy_erf() if _scipy_erf is _NOT_LOADED else _scipy_erf
    if scipy_erf is not None:
        return scipy_erf(x)
    return erf_numpy(x).astype(x.dtype, copy=False)


def erf(value):
    """erf for arrays (`erf_array`) and for Tensors (the differentiable `Erf` primitive)."""
    return Erf.apply(value) if _is_tensor(value) else erf_array(value)


class Erf(Op):
    """out = erf(a);  da = g * 2/sqrt(pi) * exp(-a^2)"""

    __slots__ = ()
    promotion = staticmethod(promote_float)

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


def _rows_along(op, name, x, axis):
    """Where softmax and log_softmax start: the axis (checked, kept on the op for backward),
    x as rows along it (float16 upcast to float32), and each row's maximum."""
    check_float(name, x)
    op.axis = axis = normalize_axis(axis, x.ndim, name)
    rows = as_rows(upcast(x), axis)
    return axis, rows, row_max(rows)


class Softmax(Op):
    """y = exp(x - max x) / sum(exp(x - max x));  dx = y * (g - sum(g * y))  (sums along axis)

    The Jacobian dy_i/dx_j = y_i (δ_ij - y_j) is never built: its product with g is the
    elementwise formula above (derivations.md, "the Jacobian-vector shortcut").
    """

    __slots__ = ("axis",)

    def forward(self, x, axis):
        axis, rows, maximum = _rows_along(self, "softmax", x, axis)
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
        axis, rows, maximum = _rows_along(self, "log_softmax", x, axis)
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


class Dropout(Op):
    """y = x · m / (1 - p), m ~ Bernoulli(1 - p) per element;  dx = g · m / (1 - p)"""

    __slots__ = ()

    jacobian_kind = diagonal_kind

    def jacobian(self, index):
        """J_x = diag(m / (1 - p)), the saved mask."""
        (scaled_mask,) = self.saved_tensors
        return Diagonal(scaled_mask)

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
