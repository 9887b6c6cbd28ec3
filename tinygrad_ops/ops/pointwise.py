"""The elementwise activation functions: softplus, silu, mish, the ELU family (elu, selu,
celu), hardsigmoid, hardswish, logsigmoid, softsign, relu6, hardtanh and gelu's tanh
approximation.

Each is one primitive, out = f(x) and dx = g f'(x), with PyTorch's formulas (its CPU kernels)
so that values and gradients agree at the kinks and at NaN. `formula` computes f on numpy
arrays; `slope` computes f' with operations that arrays and Tensors share, so a create_graph
backward is recorded. Like PyTorch, they take floating-point tensors only.
"""

import math

import numpy as np

from . import dual
from .base import Op
from .checks import ArgumentError, check_float
from .elementwise import where
from .jacobian import diagonal_from_vjp, diagonal_kind
from .unary import Sigmoid, Tanh, call, stable_sigmoid


class Activation(Op):
    """out = f(x);  dx = g * f'(x): the shared shape of the functions below."""

    __slots__ = ("options",)
    jacobian_kind = diagonal_kind  # on a scanned chain: diagonal, from the vjp
    jacobian = diagonal_from_vjp
    op_name = ""

    def forward(self, x, **options):
        check_float(type(self).op_name, x)
        self.options = options
        with np.errstate(over="ignore"):  # exp of a large input: inf, as PyTorch
            out = self.formula(x, **options).astype(x.dtype, copy=False)
        self.save_for_backward(x, out)
        return out

    def backward(self, grad_output):
        x, out = self.saved_tensors
        with np.errstate(over="ignore", invalid="ignore"):
            grad = grad_output * self.slope(x, out, **self.options)
        flat = self.flat(dual.raw(x))
        # 0 where f is flat, also for a NaN or inf upstream (g * 0 is NaN), as PyTorch's kernels
        return (grad if flat is None else where(flat, 0.0, grad),)

    def flat(self, x):
        """Where f is flat (a boolean array: there dx = 0, and `slope` need not say it), for
        the functions that are flat somewhere; None for the others."""
        return None

    def formula(self, x, **options):  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def slope(self, x, out, **options):  # pragma: no cover - every subclass overrides it
        raise NotImplementedError


def softplus_array(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as PyTorch)."""
    scaled = x * beta
    return np.where(scaled > threshold, x, np.log1p(np.exp(np.minimum(scaled, threshold))) / beta)


class Softplus(Activation):
    """out = log(1 + exp(βx)) / β (x where βx > threshold);  dx = g σ(βx) (g past threshold)"""

    __slots__ = ()
    op_name = "softplus"

    def formula(self, x, beta, threshold):
        return softplus_array(x, beta, threshold)

    def slope(self, x, out, beta, threshold):
        return where(dual.raw(x) * beta > threshold, 1.0, call(Sigmoid, x * beta))


class Silu(Activation):
    """out = x σ(x) (silu, swish);  dx = g σ(x) (1 + x (1 - σ(x)))"""

    __slots__ = ()
    op_name = "silu"

    def formula(self, x):
        return x * stable_sigmoid(x)

    def slope(self, x, out):
        sigmoid = call(Sigmoid, x)
        return sigmoid * (x * (1.0 - sigmoid) + 1.0)


class Mish(Activation):
    """out = x tanh(softplus(x));  dx = g (t + x σ(x) (1 - t²)), t = tanh(softplus(x))"""

    __slots__ = ()
    op_name = "mish"

    def formula(self, x):
        return x * np.tanh(softplus_array(x))

    def slope(self, x, out):
        if dual._is_tensor(x):
            softplus = Softplus.apply(x, beta=1.0, threshold=20.0)
        else:
            softplus = softplus_array(x)
        tanh_softplus = call(Tanh, softplus)
        return tanh_softplus + x * call(Sigmoid, x) * (1.0 - tanh_softplus * tanh_softplus)


class Elu(Activation):
    """out = x p where x > 0, else n (exp(x s) - 1) (elu: p = s = 1, n = α; selu and celu set
    the three);  dx = g p where x > 0, else g n s exp(x s)  (PyTorch's elu kernel)"""

    __slots__ = ()
    op_name = "elu"

    def formula(self, x, negative_scale, positive_scale, input_scale):
        negative = np.expm1(np.minimum(x, 0) * input_scale) * negative_scale
        return np.where(x <= 0, negative, x * positive_scale)

    def slope(self, x, out, negative_scale, positive_scale, input_scale):
        negative = dual.exp(x * input_scale) * (negative_scale * input_scale)
        return where(dual.raw(x) <= 0, negative, positive_scale)


class Hardsigmoid(Activation):
    """out = min(max(x + 3, 0), 6) / 6;  dx = g / 6 where -3 < x < 3, else 0"""

    __slots__ = ()
    op_name = "hardsigmoid"

    def formula(self, x):
        return np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0

    def slope(self, x, out):
        return 1.0 / 6.0  # (0 where flat: see Activation.backward)

    def flat(self, x):
        return ~((x > -3.0) & (x < 3.0))  # (NaN too, as PyTorch's kernel)


class Hardswish(Activation):
    """out = x min(max(x + 3, 0), 6) / 6;  dx = 0 for x <= -3, g (x/3 + 1/2) below 3, g from 3"""

    __slots__ = ()
    op_name = "hardswish"

    def formula(self, x):
        return x * np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0

    def slope(self, x, out):
        # (PyTorch's kernel; 0 for x <= -3: see Activation.backward)
        return where(dual.raw(x) < 3.0, x / 3.0 + 0.5, 1.0)

    def flat(self, x):
        return x <= -3.0


class LogSigmoid(Activation):
    """out = log σ(x) = min(x, 0) - log(1 + exp(-|x|));  dx = g σ(-x)"""

    __slots__ = ()
    op_name = "logsigmoid"

    def formula(self, x):
        return np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x)))

    def slope(self, x, out):
        return call(Sigmoid, -x)


class Softsign(Activation):
    """out = x / (1 + |x|);  dx = g / (1 + |x|)²"""

    __slots__ = ()
    op_name = "softsign"

    def formula(self, x):
        return x / (np.abs(x) + 1.0)

    def slope(self, x, out):
        magnitude = x.abs() if dual._is_tensor(x) else np.abs(x)
        reciprocal = 1.0 / (magnitude + 1.0)
        # x - x is 0, or NaN at ±inf: there PyTorch's slope is NaN (inf/inf in its chain rule)
        return reciprocal * (reciprocal + (x - x))


class Hardtanh(Activation):
    """out = min(max(x, min_val), max_val);  dx = g strictly between the bounds, else 0
    (PyTorch's hardtanh: 0 at the bounds themselves, where clamp's gradient is g)"""

    __slots__ = ()
    op_name = "hardtanh"

    def formula(self, x, min_val, max_val):
        return np.minimum(np.maximum(x, min_val), max_val)

    def slope(self, x, out, min_val, max_val):
        return 1.0  # (0 where flat: see Activation.backward)

    def flat(self, x):  # (g at NaN, as PyTorch's kernel)
        return (x <= self.options["min_val"]) | (x >= self.options["max_val"])


class Relu6(Hardtanh):
    """out = min(max(x, 0), 6): hardtanh between 0 and 6, as PyTorch's relu6;
    dx = g except where x <= 0 or x >= 6 (g at NaN, as PyTorch)"""

    __slots__ = ()
    op_name = "relu6"

    def forward(self, x):
        return super().forward(x, min_val=0.0, max_val=6.0)


_GELU_BETA = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715


class GeluTanh(Activation):
    """out = x (1 + tanh(u)) / 2, u = √(2/π) (x + 0.044715 x³) (gelu, approximate="tanh");
    dx = g ((1 + t) / 2 + x (1 - t²) √(2/π) (1 + 3 · 0.044715 x²) / 2), t = tanh(u)"""

    __slots__ = ()
    op_name = "gelu"

    def formula(self, x):
        return 0.5 * x * (1.0 + np.tanh(_GELU_BETA * (x + _GELU_KAPPA * x * x * x)))

    def slope(self, x, out):
        squared = x * x
        tanh_inner = call(Tanh, (x + squared * x * _GELU_KAPPA) * _GELU_BETA)
        inner_slope = (squared * (3.0 * _GELU_KAPPA) + 1.0) * _GELU_BETA
        return (tanh_inner + 1.0) * 0.5 + x * 0.5 * (1.0 - tanh_inner * tanh_inner) * inner_slope


# ----------------------------------------------------------------------------------------------
# The functions (re-exported by tinygrad_ops.functional as F.softplus, F.silu, ...)


def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as PyTorch).

    >>> import tinygrad_ops as tg
    >>> softplus(tg.Tensor([0.0, 30.0])).numpy().round(4)
    array([ 0.6931, 30.    ], dtype=float32)
    """
    return Softplus.apply(x, beta=float(beta), threshold=float(threshold))


def silu(x):
    """x σ(x) (also called swish).

    >>> import tinygrad_ops as tg
    >>> silu(tg.Tensor([0.0, 1.0])).numpy().round(4)
    array([0.    , 0.7311], dtype=float32)
    """
    return Silu.apply(x)


swish = silu


def mish(x):
    """x tanh(softplus(x)).

    >>> import tinygrad_ops as tg
    >>> mish(tg.Tensor([0.0, 1.0])).numpy().round(4)
    array([0.    , 0.8651], dtype=float32)
    """
    return Mish.apply(x)


def elu(x, alpha=1.0):
    """x where x > 0, else alpha (exp(x) - 1).

    >>> import tinygrad_ops as tg
    >>> elu(tg.Tensor([-1.0, 2.0])).numpy().round(4)
    array([-0.6321,  2.    ], dtype=float32)
    """
    return Elu.apply(x, negative_scale=float(alpha), positive_scale=1.0, input_scale=1.0)


# The constants of SELU (Klambauer et al. 2017, "Self-Normalizing Neural Networks", eq. 14).
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """scale · elu(x, alpha) with SELU's fixed alpha ≈ 1.6733 and scale ≈ 1.0507.

    >>> import tinygrad_ops as tg
    >>> selu(tg.Tensor([-1.0, 1.0])).numpy().round(4)
    array([-1.1113,  1.0507], dtype=float32)
    """
    negative = _SELU_ALPHA * _SELU_SCALE
    return Elu.apply(x, negative_scale=negative, positive_scale=_SELU_SCALE, input_scale=1.0)


def celu(x, alpha=1.0):
    """x where x > 0, else alpha (exp(x / alpha) - 1).

    >>> import tinygrad_ops as tg
    >>> celu(tg.Tensor([-1.0, 2.0]), alpha=2.0).numpy().round(4)
    array([-0.7869,  2.    ], dtype=float32)
    """
    if alpha == 0:
        raise ArgumentError("celu: alpha must not be 0 (it divides the input)")
    scale = 1.0 / float(alpha)
    return Elu.apply(x, negative_scale=float(alpha), positive_scale=1.0, input_scale=scale)


def hardsigmoid(x):
    """min(max(x + 3, 0), 6) / 6: a piecewise-linear sigmoid.

    >>> import tinygrad_ops as tg
    >>> hardsigmoid(tg.Tensor([-4.0, 0.0, 4.0])).numpy()
    array([0. , 0.5, 1. ], dtype=float32)
    """
    return Hardsigmoid.apply(x)


def hardswish(x):
    """x · hardsigmoid(x).

    >>> import tinygrad_ops as tg
    >>> hardswish(tg.Tensor([-4.0, 1.0, 4.0])).numpy().round(4)
    array([-0.    ,  0.6667,  4.    ], dtype=float32)
    """
    return Hardswish.apply(x)


def logsigmoid(x):
    """log σ(x), stable for large |x|.

    >>> import tinygrad_ops as tg
    >>> logsigmoid(tg.Tensor([0.0, -100.0])).numpy().round(4)
    array([  -0.6931, -100.    ], dtype=float32)
    """
    return LogSigmoid.apply(x)


def softsign(x):
    """x / (1 + |x|).

    >>> import tinygrad_ops as tg
    >>> softsign(tg.Tensor([-1.0, 3.0])).numpy()
    array([-0.5 ,  0.75], dtype=float32)
    """
    return Softsign.apply(x)


def relu6(x):
    """min(max(x, 0), 6).

    >>> import tinygrad_ops as tg
    >>> relu6(tg.Tensor([-1.0, 3.0, 8.0])).numpy()
    array([0., 3., 6.], dtype=float32)
    """
    return Relu6.apply(x)


def hardtanh(x, min_val=-1.0, max_val=1.0):
    """min(max(x, min_val), max_val), as torch.nn.functional.hardtanh (its gradient is 0
    at the bounds, where clip's is 1).

    >>> import tinygrad_ops as tg
    >>> hardtanh(tg.Tensor([-3.0, 0.5, 2.0])).numpy()
    array([-1. ,  0.5,  1. ], dtype=float32)
    """
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val {min_val} is greater than max_val {max_val}")
    return Hardtanh.apply(x, min_val=float(min_val), max_val=float(max_val))
