"""The Tensor reductions: sums and means, variance, extrema with their indices, logical
reductions, products, running (cumulative) reductions. One line each over an op
(`ops/reduce.py`, `ops/cumulative.py`) or composed of a few. `Tensor` inherits them.

Reductions take numpy's `axis`/`keepdims` and PyTorch's `dim`/`keepdim`.

>>> import tinygrad_ops as tg
>>> x = tg.Tensor([[1.0, 4.0], [3.0, 2.0]])
>>> x.sum().item(), x.mean(axis=0).tolist(), x.argmax().item(), x.max(dim=1).indices.tolist()
(10.0, [2.0, 3.0], 1, [1, 0])
"""

import math

import numpy as np

from .ops import scatter_reduce
from .ops.base import is_tensor, values_read
from .ops.checks import (
    AxisError,
    ShapeError,
    check_float,
    ddof_argument,
    normalize_axis,
    reduction_arguments,
)
from .ops.cumulative import Cumprod, Cumsum, LogCumSumExp
from .ops.indexing import ValuesIndices
from .ops.reduce import Max, Min, Sum, VectorNorm, keepdims_shape, normalize_axes
from .tensor_functions import constant, where


class ReduceMethods:
    """Mixed into `Tensor` (see the module docstring)."""

    __slots__ = ()

    # -- reductions ----------------------------------------------------------------------------

    # (PyTorch's `dim`/`keepdim` are accepted for numpy's `axis`/`keepdims`.)

    def sum(self, axis=None, keepdims=False, *, dim=None, keepdim=None, dtype=None):
        """The sum over `axis` (every element by default); with `dtype`, of this tensor
        converted to it first, as PyTorch's `sum(dtype=)` (e.g. float64 sums of float32).
        Booleans and integers sum to int64, as PyTorch."""
        axis, keepdims = reduction_arguments("sum", axis, keepdims, dim, keepdim)
        source = self
        if dtype is not None and np.dtype(dtype) != self.dtype:
            source = self.astype(dtype)
        return Sum.apply(source, axis=axis, keepdims=keepdims)

    def trace(self):
        """The sum of a matrix's main diagonal, as PyTorch's trace;  dx = g on the diagonal,
        zeros elsewhere.

        >>> import tinygrad_ops as tg
        >>> tg.Tensor([[1.0, 2.0], [3.0, 4.0]]).trace().item()
        5.0
        """
        if self.ndim != 2:
            raise ShapeError(f"trace: expects a matrix (2-d), got shape {self.shape}")
        return self.diagonal().sum()

    def mean(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """The mean over `axis` (all axes by default): sum / count."""
        axis, keepdims = reduction_arguments("mean", axis, keepdims, dim, keepdim)
        if self.dtype == np.float16:  # summed in float32, as PyTorch (float16 overflows at 65504)
            return self.astype(np.float32).mean(axis, keepdims).astype(np.float16)
        count = _reduced_count(self.shape, axis, "mean")
        return self.sum(axis=axis, keepdims=keepdims) / count

    def var(
        self,
        axis=None,
        *,
        keepdims=False,
        ddof=None,
        correction=None,
        unbiased=None,
        dim=None,
        keepdim=None,
    ):
        """The variance over `axis`: the sum of squared deviations / max(count - ddof, 0).

        The default divides by count - 1, as PyTorch's `correction=1` (numpy's default is
        ddof=0: pass `ddof=0`, `correction=0` or `unbiased=False` for the biased variance).
        Only the axis is positional: PyTorch's second positional argument is `unbiased`, ours
        would be keepdims, so both are keywords. With ddof >= count the divisor is 0, so the
        variance is inf (or NaN for a constant slice), as in PyTorch, never negative.

        >>> import tinygrad_ops as tg
        >>> x = tg.Tensor([1.0, 2.0, 6.0])
        >>> x.var().item(), x.var(ddof=0).item()
        (7.0, 4.666666507720947)
        """
        axis, keepdims = reduction_arguments("var", axis, keepdims, dim, keepdim)
        ddof = ddof_argument("var", ddof, correction, unbiased)
        if self.dtype == np.float16:  # in float32, as PyTorch (float16 overflows at 65504)
            variance = self.astype(np.float32).var(axis, keepdims=keepdims, ddof=ddof)
            return variance.astype(np.float16)
        count = _reduced_count(self.shape, axis, "var")
        deviation = self - self.mean(axis=axis, keepdims=True)
        squares = (deviation * deviation).sum(axis=axis, keepdims=keepdims)
        return squares / max(count - ddof, 0)

    def std(self, axis=None, **options):
        """The standard deviation over `axis`: sqrt(var), with `var`'s keyword options
        (keepdims/keepdim, ddof/correction/unbiased, dim), so the default is PyTorch's,
        divided by count - 1.

        Where the variance is 0 the gradient is 0, as PyTorch (sqrt's slope there is inf): the
        square root is taken of 1 in those places and multiplied by 0.
        """
        variance = self.var(axis, **options)
        values_read(variance, "std: where the variance is 0")
        zero = variance.data == 0
        return where(zero, 1.0, variance).sqrt() * ~zero

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The maximum: as `torch.max` for a dim given positionally or as `dim=`
        ((values, indices), the gradient to the index: `_, predicted = logits.max(1)`);
        with numpy's `axis=` (an int or a tuple), the values alone (ties share the
        gradient). A Tensor argument: the elementwise maximum."""
        return self._max_or_min("max", np.argmax, Max, dim, keepdim, axis, keepdims)

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The minimum (as `max`: (values, indices) for a dim, the values for `axis=`)."""
        return self._max_or_min("min", np.argmin, Min, dim, keepdim, axis, keepdims)

    def amax(self, dim=None, keepdim=False):
        """The maximum over `dim` (an int, a tuple, or None for all), values only; ties share
        the gradient evenly, and a group holding NaN gets NaN gradients, as PyTorch's `amax`
        (`max` gives the NaNs the gradient)."""
        keepdim = self._keepdims("amax", keepdim, None)
        return Max.apply(self, axis=_all_if_empty(dim), keepdims=keepdim, nan_rows=True)

    def amin(self, dim=None, keepdim=False):
        """The minimum over `dim`, values only (as `amax`)."""
        keepdim = self._keepdims("amin", keepdim, None)
        return Min.apply(self, axis=_all_if_empty(dim), keepdims=keepdim, nan_rows=True)

    def norm(self, p="fro", dim=None, keepdim=False):
        """The vector p-norm over `dim` (every element by default), as `torch.norm`:
        p = 2 or "fro" the Euclidean norm (its gradient at a zero vector is 0, as
        PyTorch's), any other p (0 counts the nonzero entries), and inf / -inf for the
        largest / smallest |a|.

        >>> import tinygrad_ops as tg
        >>> x = tg.Tensor([[3.0, 4.0], [0.0, 0.0]])
        >>> x.norm().item(), x.norm(dim=1).tolist(), x.norm(p=1, dim=1).tolist()
        (5.0, [5.0, 0.0], [7.0, 0.0])
        """
        check_float("norm", self.data)
        p = 2.0 if isinstance(p, str) and p == "fro" else p
        if not isinstance(p, (int, float)) or isinstance(p, bool) or math.isnan(p):
            raise TypeError(f"norm: p must be a number, 'fro' or inf, got {p!r}")
        if self.dtype == np.float16:  # summed in float32, as PyTorch (squares overflow at 256)
            return self.astype(np.float32).norm(p, dim, keepdim).astype(np.float16)
        if math.isinf(p):
            return self.abs().amax(dim, keepdim) if p > 0 else self.abs().amin(dim, keepdim)
        return VectorNorm.apply(self, p=float(p), axis=dim, keepdims=keepdim)

    def _max_or_min(self, op_name, arg_function, op, dim, keepdim, axis, keepdims):
        if is_tensor(dim):  # x.max(other), as torch.max(x, other)
            return self.maximum(dim) if op_name == "max" else self.minimum(dim)
        if dim is not None and not isinstance(dim, tuple):  # PyTorch's form
            if axis is not None or keepdims is not None:
                raise TypeError(
                    f"{op_name}: pass a dim (PyTorch's form, giving values and indices) or "
                    "axis=/keepdims= (numpy's form, giving the values), not both"
                )
            return self._select_along(op_name, arg_function, dim, keepdim, None)
        if dim is not None:  # a tuple of dims: numpy's form (torch.max takes no tuple)
            axis, dim = dim, None
        keepdims = keepdim if keepdims is None else keepdims
        return op.apply(self, axis=axis, keepdims=self._keepdims(op_name, keepdims, None))

    def _keepdims(self, op_name, keepdims, keepdim):
        return reduction_arguments(op_name, None, keepdims, None, keepdim)[1]

    def _select_along(self, op_name, arg_function, dim, keepdim, axis):
        """(values, indices) of one element chosen along `dim` (its gradient goes there)."""
        axis, keepdims = reduction_arguments(op_name, axis, False, dim, keepdim)
        axis = normalize_axis(axis, self.ndim, op_name)
        if self.ndim and self.shape[axis] == 0:
            raise AxisError(f"{op_name}: cannot reduce over an empty dim (shape {self.shape})")
        values_read(self, f"{op_name}(dim=...): the indices")
        indices = arg_function(self.data, axis=axis, keepdims=True) if self.ndim else np.array(0)
        values = self.gather(axis, constant(indices)) if self.ndim else self * 1
        if not keepdims and self.ndim:
            values, indices = values.squeeze(axis), np.squeeze(indices, axis)
        return ValuesIndices(values, constant(indices))

    def argmax(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """The index of the maximum over `axis` (of the flattened tensor by default); int64."""
        return self._arg_reduce("argmax", np.argmax, axis, keepdims, dim, keepdim)

    def argmin(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """The index of the minimum over `axis` (of the flattened tensor by default); int64."""
        return self._arg_reduce("argmin", np.argmin, axis, keepdims, dim, keepdim)

    def _arg_reduce(self, op_name, function, axis, keepdims, dim, keepdim):
        axis, keepdims = reduction_arguments(op_name, axis, keepdims, dim, keepdim)
        if axis is not None:
            axis = normalize_axis(axis, self.ndim, op_name)
        if axis is None and self.size == 0:
            raise AxisError(
                f"{op_name}: cannot reduce an empty tensor (shape {self.shape}); give a dim "
                "of nonzero size"
            )
        if axis is not None and self.ndim and self.shape[axis] == 0:  # (other dims may be 0)
            raise AxisError(f"{op_name}: dim {axis} is empty (shape {self.shape})")
        values_read(self, op_name)
        data = self.data if self.ndim else self.data.reshape(1)
        indices = function(data, axis=axis, keepdims=keepdims and axis is not None)
        if keepdims and axis is None:
            indices = np.reshape(indices, (1,) * self.ndim)
        return constant(np.asarray(indices, dtype=np.int64).reshape(np.shape(indices)))

    def all(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """True where every element over `axis` is nonzero (a bool tensor, no gradient)."""
        axis, keepdims = reduction_arguments("all", axis, keepdims, dim, keepdim)
        axes = normalize_axes(axis, self.ndim, "all")
        values_read(self, "all")
        return constant(np.all(self.data, axis=axes, keepdims=keepdims))

    def any(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """True where some element over `axis` is nonzero (a bool tensor, no gradient)."""
        axis, keepdims = reduction_arguments("any", axis, keepdims, dim, keepdim)
        axes = normalize_axes(axis, self.ndim, "any")
        values_read(self, "any")
        return constant(np.any(self.data, axis=axes, keepdims=keepdims))

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        return scatter_reduce.scatter_reduce(
            self, dim, index, src, reduce, include_self=include_self
        )

    def prod(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """The product over `axis`: the last of the cumulative products over those axes
        (its exact gradient holds where elements are 0)."""
        axis, keepdims = reduction_arguments("prod", axis, keepdims, dim, keepdim)
        axes = normalize_axes(axis, self.ndim, "prod")
        kept = tuple(i for i in range(self.ndim) if i not in axes)
        reduced_size = math.prod(self.shape[i] for i in axes)
        rows = self.transpose(kept + axes).reshape(_drop(axes, self.shape) + (reduced_size,))
        if rows.shape[-1] == 0:  # an empty product is 1
            product = rows.sum(axis=-1) + 1
        else:
            product = Cumprod.apply(rows, axis=rows.ndim - 1)[..., -1]
        if keepdims:
            product = product.reshape(keepdims_shape(self.shape, axes))
        return product

    def logsumexp(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """log(sum(exp(x))) over `axis`, as max + log(sum(exp(x - max))): no overflow. The
        max is a constant (its two uses cancel in the gradient, which is softmax(x))."""
        axis, keepdims = reduction_arguments("logsumexp", axis, keepdims, dim, keepdim)
        axes = normalize_axes(axis, self.ndim, "logsumexp")
        if self.size == 0:
            shift = np.zeros(keepdims_shape(self.shape, axes))
        else:
            values_read(self, "logsumexp: the shift by the maximum")
            shift = np.max(self.data, axis=axes, keepdims=True)
        shift = np.where(np.isfinite(shift), shift, 0.0).astype(self.dtype, copy=False)
        with np.errstate(divide="ignore"):  # a slice of only -inf: log(0) = -inf, as PyTorch
            total = (self - shift).exp().sum(axis=axes, keepdims=True).log() + shift
        return total if keepdims else total.reshape(_drop(axes, total.shape))

    def cumsum(self, axis=None, *, dim=None):
        """Running sums along `axis`."""
        return self._cumulative(Cumsum, "cumsum", axis, dim)

    def cumprod(self, axis=None, *, dim=None):
        """Running products along `axis` (exact gradients where elements are 0)."""
        return self._cumulative(Cumprod, "cumprod", axis, dim)

    def logcumsumexp(self, axis=None, *, dim=None):
        """Running log(sum(exp(x))) along `axis`, without overflow."""
        return self._cumulative(LogCumSumExp, "logcumsumexp", axis, dim)

    def _cumulative(self, op_class, op_name, axis, dim):
        axis = self._one_axis(op_name, axis, dim)
        if self.ndim == 0:  # a 0-d tensor is its own running total (shape (), as PyTorch)
            return op_class.apply(self.reshape(1), axis=0).reshape(())
        return op_class.apply(self, axis=axis)

    def cummax(self, axis=None, *, dim=None):
        """(values, indices) of the running maximum along `axis`, as torch.cummax: the last
        index among ties, NaN propagates; the gradient goes to those indices."""
        return self._running_extremum("cummax", np.maximum, axis, dim)

    def cummin(self, axis=None, *, dim=None):
        """(values, indices) of the running minimum along `axis` (as `cummax`)."""
        return self._running_extremum("cummin", np.minimum, axis, dim)

    def _one_axis(self, op_name, axis, dim):
        axis, _ = reduction_arguments(op_name, axis, False, dim, None)
        if axis is None:
            raise TypeError(f"{op_name}: needs an axis (dim), got none")
        return normalize_axis(axis, self.ndim, op_name)

    def _running_extremum(self, op_name, ufunc, axis, dim):
        axis = self._one_axis(op_name, axis, dim)
        values_read(self, f"{op_name}: the indices")
        data = self.data if self.ndim else self.data.reshape(1)
        running = ufunc.accumulate(data, axis=axis)
        positions = np.arange(data.shape[axis]).reshape((-1,) + (1,) * (data.ndim - 1 - axis))
        # The last position j <= i where x_j reached the running value (or is NaN) is i's
        # index: the running value stays x_j until the next such position.
        reached = (data == running) | np.isnan(data) if data.dtype.kind == "f" else data == running
        indices = np.maximum.accumulate(np.where(reached, positions, 0), axis=axis)
        indices = indices.reshape(self.shape)
        values = self.gather(axis, constant(indices)) if self.ndim else self * 1
        return ValuesIndices(values, constant(indices.astype(np.int64)))


def var_mean(input, dim=None, *, correction=None, keepdim=False, unbiased=None):
    """(the variance, the mean) over `dim`, as torch.var_mean: Tensor.var with PyTorch's
    default correction of 1 (`correction=0` or `unbiased=False` for the biased one).

    >>> import tinygrad_ops as tg
    >>> [t.item() for t in tg.var_mean(tg.Tensor([1.0, 2.0, 6.0]))]
    [7.0, 3.0]
    """
    dim, unbiased = _dim_or_unbiased("var_mean", dim, unbiased)
    variance = input.var(dim, correction=correction, unbiased=unbiased, keepdims=keepdim)
    return variance, input.mean(dim, keepdims=keepdim)


def std_mean(input, dim=None, *, correction=None, keepdim=False, unbiased=None):
    """(the standard deviation, the mean) over `dim`, as torch.std_mean: Tensor.std with
    PyTorch's default correction of 1.

    >>> import tinygrad_ops as tg
    >>> [t.tolist() for t in tg.std_mean(tg.Tensor([[1.0, 3.0]]), 1)]
    [[1.4142135381698608], [2.0]]
    """
    dim, unbiased = _dim_or_unbiased("std_mean", dim, unbiased)
    deviation = input.std(dim, correction=correction, unbiased=unbiased, keepdims=keepdim)
    return deviation, input.mean(dim, keepdims=keepdim)


def _dim_or_unbiased(op_name, dim, unbiased):
    """PyTorch's overload `var_mean(x, True)`: a bool in dim's place is `unbiased`."""
    if isinstance(dim, (bool, np.bool_)):
        if unbiased is not None:
            raise TypeError(f"{op_name}: unbiased given twice")
        return None, bool(dim)
    return dim, unbiased


def _reduced_count(shape, axis, op_name):
    axes = normalize_axes(axis, len(shape), op_name)
    count = 1
    for axis_index in axes:
        count *= shape[axis_index]
    return count


def _drop(axes, shape):
    """`shape` without the (kept, size-1) `axes`."""
    return tuple(size for index, size in enumerate(shape) if index not in axes)


def _all_if_empty(dim):
    """PyTorch's amax/amin read an empty dim as every dim (numpy's `max(axis=())`, which
    reduces none, is refused as ambiguous)."""
    return None if isinstance(dim, (tuple, list)) and not dim else dim
