"""`Tensor`: a numpy array, its gradient, and the edge of the tape that produced it.

Every operator and method here is a real `def` that calls one primitive's `apply`
(see `ops/`), or composes a few of them (mean, var, ...).
"""

from __future__ import annotations

import numpy as np

from .autograd.backward import tensor_backward
from .autograd.graph import HookHandle
from .autograd.inplace import apply_inplace
from .mode import STATE
from .ops import indexing, movement
from .ops.base import bind_tensor, placeholder
from .ops.checks import ddof_argument, normalize_axis, reduction_arguments
from .ops.elementwise import (
    Abs,
    Add,
    Cast,
    Clip,
    Div,
    Maximum,
    Mul,
    Neg,
    Pow,
    PowScalar,
    Relu,
    Sub,
    Where,
)
from .ops.linalg import MatMul
from .ops.reduce import Sum, normalize_axes
from .ops.shape import (
    BroadcastTo,
    Concatenate,
    GetItem,
    Reshape,
    Stack,
    Transpose,
    expanded_shape,
    normalize_index,
    squeezed_shape,
)
from .ops.unary import Exp, Log, Sigmoid, Sqrt, Tanh
from .tensor_math import MathMethods

FLOAT_DTYPES = (np.float16, np.float32, np.float64)
DEFAULT_DTYPE = np.float32


def _to_array(data, dtype):
    """Convert what `Tensor(...)` accepts into a numpy array, following the dtype rules."""
    if isinstance(data, Tensor):
        if STATE.recorder is not None:
            STATE.recorder.read_value(data, "tg.Tensor(tensor) (a copy made outside the ops)")
        array = np.array(data.data, dtype=dtype, copy=True)
    elif isinstance(data, np.ndarray):
        if STATE.recorder is not None:
            STATE.recorder.read_value(data, "tg.Tensor(array) (a copy made outside the ops)")
        array = np.array(data, dtype=dtype, copy=True)  # a copy, as torch.tensor makes
    elif isinstance(data, (bool, int, float, np.generic)):
        default = data.dtype if isinstance(data, np.floating) else DEFAULT_DTYPE
        array = np.asarray(data, dtype=dtype if dtype is not None else default)
    elif isinstance(data, (list, tuple)):
        try:
            array = np.array(data)
        except ValueError as error:
            raise ValueError(
                f"Tensor() got a ragged nested list (its rows have different lengths): {error}"
            ) from None
        if dtype is not None:
            array = array.astype(dtype)
        elif array.dtype.kind in "biuf":
            array = array.astype(DEFAULT_DTYPE)  # Python numbers become float32
    else:
        raise TypeError(
            "Tensor() takes a numpy array, a nested list of numbers, a Python number or a "
            f"Tensor, got {type(data).__name__}"
        )
    if array.dtype.kind not in "biuf":
        raise TypeError(
            f"Tensor() needs numeric data, got an array of dtype {array.dtype} "
            f"(from {type(data).__name__})"
        )
    return array


def from_numpy(array) -> Tensor:
    """A tensor that shares `array`'s memory, as `torch.from_numpy` (`tg.Tensor` copies).

    Writes through either show in both; an in-place op on the tensor writes into the array.

    >>> import numpy as np, tinygrad_ops as tg
    >>> array = np.zeros(2, dtype=np.float32)
    >>> tensor = tg.from_numpy(array)
    >>> array[0] = 5.0
    >>> tensor.numpy()
    array([5., 0.], dtype=float32)
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    if array.dtype.kind not in "biuf":
        raise TypeError(f"from_numpy needs a numeric array, got dtype {array.dtype}")
    return Tensor._make(array, False, None)


def _check_can_require_grad(array):
    if array.dtype.type not in FLOAT_DTYPES:
        raise TypeError(
            f"only floating-point tensors can require grad, this one has dtype {array.dtype}; "
            "pass dtype=np.float32 (or float64) to make it differentiable"
        )


def _check_grad(tensor, grad):
    if not isinstance(grad, Tensor):
        raise TypeError(
            f"assigned grad expected to be a Tensor or None but got grad of type "
            f"{type(grad).__name__}"
        )
    if grad.shape != tensor.shape:
        raise RuntimeError(
            f"attempting to assign a gradient of shape {grad.shape} to a tensor of shape "
            f"{tensor.shape}: the gradient and the tensor must have the same shape"
        )
    if grad.dtype != tensor.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype {grad.dtype} to a tensor with dtype "
            f"{tensor.dtype}: the gradient must have the tensor's dtype"
        )


def _operand(value):
    """An operand for an op: Tensors and numbers as they are, numpy scalars as Python numbers.

    A numpy scalar such as np.float64(2) would upcast a float32 tensor under numpy's
    promotion rules; as a Python number it is 'weak' and keeps the tensor's dtype.
    """
    if isinstance(value, np.generic):  # first: np.float64 is also a Python float
        return value.item()
    if isinstance(value, (Tensor, np.ndarray, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return Tensor(value)
    return None


class Tensor(MathMethods):
    """An n-dimensional array that records the operations applied to it.

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> y = (x * x).sum()
    >>> y.backward()
    >>> x.grad.numpy()
    array([2., 4., 6.], dtype=float32)
    """

    __slots__ = (
        "_data",  # the array; `data` is the checked property over it (the engine reads this)
        "_grad",  # the gradient Tensor or None; `grad` is the checked property over it
        "_requires_grad",
        "_ctx",
        "_version",
        "_hooks",
        "name",
        "__weakref__",
    )
    __array_ufunc__ = None  # numpy defers `array + tensor` to Tensor.__radd__
    __hash__ = object.__hash__  # comparisons return tensors, so hash by identity

    def __init__(self, data, requires_grad=False, dtype=None):
        """A tensor holding a copy of `data` (as `torch.tensor`; `tg.from_numpy` shares).

        >>> import numpy as np, tinygrad_ops as tg
        >>> array = np.zeros(2, dtype=np.float32)
        >>> tensor = tg.Tensor(array)
        >>> array[0] = 5.0  # the tensor keeps its own copy
        >>> tensor.numpy()
        array([0., 0.], dtype=float32)
        """
        self._data = _to_array(data, dtype)
        if requires_grad:
            _check_can_require_grad(self._data)
        self._requires_grad = bool(requires_grad)
        self._grad = None
        self._ctx = None
        self._version = [0]
        self._hooks = None
        self.name = None

    @classmethod
    def _make(cls, data, requires_grad, ctx):
        """Fast constructor for op results: no conversion or checks."""
        tensor = object.__new__(Tensor)
        tensor._data = data
        tensor._grad = None
        tensor._requires_grad = requires_grad
        tensor._ctx = ctx
        tensor._version = [0]
        tensor._hooks = None
        tensor.name = None
        return tensor

    def _released(self) -> ReleasedTensor:
        """What a graph released by backward keeps of this tensor (see ReleasedTensor)."""
        husk = object.__new__(ReleasedTensor)
        husk._data = placeholder(self._data.shape, self._data.dtype)
        husk._grad = None
        husk._requires_grad = self._requires_grad
        husk._ctx = self._ctx
        husk._version = self._version
        husk._hooks = None
        husk.name = self.name
        return husk

    # -- attributes ----------------------------------------------------------------------------

    @property
    def data(self) -> np.ndarray:
        """The numpy array (shared, not copied). Assigning replaces it, off the tape; a
        tensor that requires grad takes only a floating-point array (as PyTorch)."""
        return self._data

    @data.setter
    def data(self, value):
        array = value._data if isinstance(value, Tensor) else value
        if not isinstance(array, np.ndarray):
            raise TypeError(
                f"Tensor.data must be set to a numpy array or a Tensor, got {type(value).__name__}"
            )
        if self._requires_grad and array.dtype.type not in FLOAT_DTYPES:
            raise RuntimeError(
                f"data set to a tensor that requires gradients must be floating point: got "
                f"dtype {array.dtype}; convert it (array.astype(np.float32)) or turn off "
                "requires_grad first"
            )
        self._data = array

    @property
    def grad(self):
        """The gradient accumulated by backward (None until then). Assigning checks it: a
        Tensor (or None) of this tensor's shape and dtype, as PyTorch."""
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            _check_grad(self, value)
        self._grad = value

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if value:
            _check_can_require_grad(self.data)
        elif self._ctx is not None:
            raise RuntimeError(
                "requires_grad can only be turned off on a leaf; use .detach() on the result "
                "of an operation"
            )
        self._requires_grad = bool(value)

    @property
    def is_leaf(self) -> bool:
        """True for tensors made by the user (no recorded op produced them)."""
        return self._ctx is None

    @property
    def grad_fn(self):
        """The tape node that produced this tensor (None for leaves)."""
        return self._ctx

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def size(self) -> int:
        return self._data.size

    @property
    def T(self) -> Tensor:  # noqa: N802 (numpy's and PyTorch's name)
        """The transpose: all axes reversed."""
        return self.transpose()

    def numpy(self) -> np.ndarray:
        """The data as a numpy array (shared, not copied)."""
        if STATE.recorder is not None:
            STATE.recorder.read_value(self, ".numpy()")
        return self.data

    def item(self):
        """The single value of a one-element tensor, as a Python number."""
        if self.data.size != 1:
            raise ValueError(
                f"item() needs a tensor with one element, this one has shape {self.shape}"
            )
        if STATE.recorder is not None:
            STATE.recorder.read_value(self, ".item()")
        return self.data.item()

    def tolist(self):
        if STATE.recorder is not None:
            STATE.recorder.read_value(self, ".tolist()")
        return self.data.tolist()

    def detach(self) -> Tensor:
        """The same data, cut from the tape (shares memory and the version counter)."""
        tensor = Tensor._make(self.data, False, None)
        tensor._version = self._version
        return tensor

    def astype(self, dtype) -> Tensor:
        """This tensor converted to `dtype` (differentiable between float dtypes)."""
        return Cast.apply(self, dtype=np.dtype(dtype))

    def float(self) -> Tensor:
        return self.astype(np.float32)

    def double(self) -> Tensor:
        return self.astype(np.float64)

    def half(self) -> Tensor:
        return self.astype(np.float16)

    def __repr__(self):
        body = np.array2string(self.data, separator=", ", prefix="Tensor(")
        extra = f", dtype={self.data.dtype}"
        if self._ctx is not None:
            extra += f", grad_fn={type(self._ctx).__name__}"
        elif self._requires_grad:
            extra += ", requires_grad=True"
        return f"Tensor({body}{extra})"

    def __len__(self):
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __iter__(self):
        for index in range(len(self)):
            yield self[index]

    def __bool__(self):
        if self.data.size != 1:
            raise ValueError(
                f"the truth value of a tensor with {self.data.size} elements (shape "
                f"{self.shape}) is ambiguous; use .any() or .all() on .data"
            )
        if STATE.recorder is not None:
            STATE.recorder.read_value(self, "bool()")
        return bool(self.data)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __array__(self, dtype=None, copy=None):
        if STATE.recorder is not None:
            STATE.recorder.read_value(self, "np.asarray()")
        return self.data if dtype is None else self.data.astype(dtype)

    # -- autograd ------------------------------------------------------------------------------

    def backward(self, gradient=None, retain_graph=False, create_graph=False, scheduler=None):
        """Accumulate the gradient of this tensor into every leaf's `.grad`, as in PyTorch.

        `gradient` is required for a non-scalar tensor (the vector of a vector-Jacobian
        product). `retain_graph=True` keeps what the graph saved for backward, so that a
        second backward can run through it (by default it is freed, and a second backward
        raises). `create_graph=True` records the backward pass itself, so that the gradients
        it writes can be differentiated again (higher order; it keeps the graph too).
        `scheduler` chooses how backward walks the graph: a name from
        `tg.available_schedulers()` (`tg.set_default_scheduler` sets the default,
        "sequential"), or any object with `run(graph)`; `tg.backward_plan` says what a
        scheduler would do.

        >>> import tinygrad_ops as tg
        >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
        >>> y = (x * x).sum()
        >>> y.backward(retain_graph=True)
        >>> y.backward()  # through the same graph again: the gradients add up
        >>> x.grad.numpy()
        array([4., 8.], dtype=float32)
        """
        tensor_backward(self, gradient, retain_graph, create_graph, scheduler)

    def register_hook(self, hook):
        """Call `hook(grad)` when this tensor's gradient is computed; a returned Tensor
        replaces the gradient. Returns a handle with `.remove()`.

        >>> import tinygrad_ops as tg
        >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
        >>> handle = x.register_hook(lambda grad: grad * 10)
        >>> (x * 1).sum().backward()
        >>> x.grad.numpy()
        array([10., 10.], dtype=float32)
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that does not require grad")
        if self._hooks is None:
            self._hooks = {}
        handle = HookHandle(self._hooks)
        self._hooks[handle.key] = hook
        return handle

    # -- arithmetic operators ------------------------------------------------------------------

    def _binary(self, op_class, other, reverse=False):
        """`self <op> other` (or `other <op> self`): the one coercion of an operator's operand.

        Tensors and Python numbers go as they are; numpy scalars become Python numbers (so
        that they do not widen the tensor), lists become tensors; anything else is
        NotImplemented (Python then tries the other operand's operator).
        """
        if type(other) not in _FAST_OPERANDS and not isinstance(other, Tensor):
            other = _operand(other)
            if other is None:
                return NotImplemented
        return op_class.apply(other, self) if reverse else op_class.apply(self, other)

    def __add__(self, other):
        return self._binary(Add, other)

    def __radd__(self, other):
        return self._binary(Add, other, reverse=True)

    def __sub__(self, other):
        return self._binary(Sub, other)

    def __rsub__(self, other):
        return self._binary(Sub, other, reverse=True)

    def __mul__(self, other):
        return self._binary(Mul, other)

    def __rmul__(self, other):
        return self._binary(Mul, other, reverse=True)

    def __truediv__(self, other):
        return self._binary(Div, other)

    def __rtruediv__(self, other):
        return self._binary(Div, other, reverse=True)

    def __matmul__(self, other):
        return self._binary(MatMul, other)

    def __rmatmul__(self, other):
        return self._binary(MatMul, other, reverse=True)

    def __pow__(self, exponent):
        exponent = _operand(exponent)
        if exponent is None:
            return NotImplemented
        if isinstance(exponent, (int, float)):
            return PowScalar.apply(self, exponent=exponent)
        return Pow.apply(self, exponent)

    def __rpow__(self, base):
        return self._binary(Pow, base, reverse=True)

    def __neg__(self):
        return Neg.apply(self)

    def __pos__(self):
        """+a is a itself (no op, nothing recorded)."""
        return self

    # -- comparisons: boolean tensors, outside the tape ----------------------------------------

    def _compare(self, other, compare):
        """out = the elementwise comparison: a boolean tensor outside the tape (no gradient)."""
        if STATE.recorder is not None:  # tg.compile: a replay would reuse the first call's
            STATE.recorder.read_value(self, "a comparison (x > 0, ...)")
            if isinstance(other, Tensor):
                STATE.recorder.read_value(other, "a comparison (x > 0, ...)")
        other = other.data if isinstance(other, Tensor) else _operand(other)
        if other is None:
            return NotImplemented
        try:
            return Tensor._make(compare(self.data, other), False, None)
        except ValueError:
            raise ValueError(
                f"comparison: shapes {self.shape} and {np.shape(other)} cannot be broadcast "
                "together"
            ) from None

    def __lt__(self, other):
        return self._compare(other, np.less)

    def __le__(self, other):
        return self._compare(other, np.less_equal)

    def __gt__(self, other):
        return self._compare(other, np.greater)

    def __ge__(self, other):
        return self._compare(other, np.greater_equal)

    def __eq__(self, other):
        return self._compare(other, np.equal)

    def __ne__(self, other):
        return self._compare(other, np.not_equal)

    # -- elementwise functions -----------------------------------------------------------------

    def exp(self):
        return Exp.apply(self)

    def log(self):
        return Log.apply(self)

    def sqrt(self):
        return Sqrt.apply(self)

    def abs(self):
        return Abs.apply(self)

    def tanh(self):
        return Tanh.apply(self)

    def sigmoid(self):
        return Sigmoid.apply(self)

    def relu(self):
        return Relu.apply(self)

    def clip(self, low=None, high=None):
        """Elements limited to [low, high] (either bound may be None, not both).

        >>> import tinygrad_ops as tg
        >>> tg.Tensor([-2.0, 0.5, 3.0]).clip(-1, 1).numpy()
        array([-1. ,  0.5,  1. ], dtype=float32)
        """
        return Clip.apply(self, low=low, high=_check_bounds("clip", low, high))

    clamp = clip

    def maximum(self, other):
        return maximum(self, other)

    # -- reductions ----------------------------------------------------------------------------

    # (PyTorch's `dim`/`keepdim` are accepted for numpy's `axis`/`keepdims`.)

    def sum(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        axis, keepdims = reduction_arguments("sum", axis, keepdims, dim, keepdim)
        return Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        """The mean over `axis` (all axes by default): sum / count."""
        axis, keepdims = reduction_arguments("mean", axis, keepdims, dim, keepdim)
        if self.dtype == np.float16:  # summed in float32, as PyTorch (float16 overflows at 65504)
            return self.astype(np.float32).mean(axis, keepdims).astype(np.float16)
        count = _reduced_count(self.shape, axis, "mean")
        return self.sum(axis=axis, keepdims=keepdims) / count

    def var(self, axis=None, keepdims=False, ddof=0, *, correction=None, dim=None, keepdim=None):
        """The variance over `axis`: the sum of squared deviations / max(count - ddof, 0).

        `correction` is PyTorch's name for ddof; with ddof >= count the divisor is 0, so the
        variance is inf (or NaN for a constant slice), as in PyTorch, never negative.
        """
        axis, keepdims = reduction_arguments("var", axis, keepdims, dim, keepdim)
        ddof = ddof_argument("var", ddof, correction)
        if self.dtype == np.float16:  # in float32, as PyTorch (float16 overflows at 65504)
            return self.astype(np.float32).var(axis, keepdims, ddof).astype(np.float16)
        count = _reduced_count(self.shape, axis, "var")
        deviation = self - self.mean(axis=axis, keepdims=True)
        squares = (deviation * deviation).sum(axis=axis, keepdims=keepdims)
        return squares / max(count - ddof, 0)

    def std(self, axis=None, keepdims=False, ddof=0, *, correction=None, dim=None, keepdim=None):
        """The standard deviation over `axis`: sqrt(var) (same arguments as `var`).

        Where the variance is 0 the gradient is 0, as PyTorch (sqrt's slope there is inf): the
        square root is taken of 1 in those places and multiplied by 0.
        """
        variance = self.var(axis, keepdims, ddof, correction=correction, dim=dim, keepdim=keepdim)
        if STATE.recorder is not None:  # tg.compile: a replay would reuse the first call's
            STATE.recorder.read_value(variance, "std: where the variance is 0")
        zero = variance.data == 0
        return where(zero, 1.0, variance).sqrt() * ~zero

    # -- shape ---------------------------------------------------------------------------------

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return Reshape.apply(self, shape=tuple(shape))

    def flatten(self):
        return self.reshape(-1)

    def transpose(self, *axes):
        """Swap two dims given as two ints (`x.transpose(0, 1)`, as PyTorch's: numpy's would
        read (0, 1) as the identity permutation), else permute the axes as numpy's transpose
        (reversed when none are given)."""
        ints = all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axes)
        if len(axes) != 2 or not ints:
            return self.permute(*axes)
        first, second = (normalize_axis(axis, self.ndim, "transpose") for axis in axes)
        order = list(range(self.ndim))
        if order:  # (a 0-d tensor takes dims 0 and -1, as in PyTorch)
            order[first], order[second] = order[second], order[first]
        return Transpose.apply(self, axes=tuple(order))

    def permute(self, *axes):
        """Permute the axes (reverse them when none are given), as numpy's transpose."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if not axes:
            axes = tuple(reversed(range(self.ndim)))
        return Transpose.apply(self, axes=axes)

    def swapaxes(self, axis1, axis2):
        axis1, axis2 = (normalize_axis(axis, self.ndim, "swapaxes") for axis in (axis1, axis2))
        axes = list(range(self.ndim))
        axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
        return Transpose.apply(self, axes=tuple(axes))

    def broadcast_to(self, shape):
        return BroadcastTo.apply(self, shape=tuple(shape))

    def expand_dims(self, axis):
        return self.reshape(expanded_shape(self.shape, axis))

    unsqueeze = expand_dims

    def squeeze(self, axis=None):
        """The tensor without size-1 dims (those named by `axis`; a named dim of another
        size stays, as in PyTorch)."""
        return self.reshape(squeezed_shape(self.shape, axis))

    def __getitem__(self, index):
        return GetItem.apply(self, index=index)

    def __setitem__(self, index, value):
        if STATE.grad_enabled and self._requires_grad:
            raise RuntimeError(
                "assigning into a tensor that requires grad is not recorded; build the new "
                "tensor with tg.where or tg.concatenate, or assign under tg.no_grad()"
            )
        if STATE.recorder is not None:
            STATE.recorder.refuse("an assignment into a tensor (x[...] = value)")
        self.data[normalize_index(index)[0]] = value.data if isinstance(value, Tensor) else value
        self._version[0] += 1

    def matmul(self, other):
        return self @ other

    # -- more shape ops, composed (ops/movement.py) ---------------------------------------------

    def flip(self, *dims):
        return movement.flip(self, dims[0] if len(dims) == 1 else dims)

    def roll(self, shifts, dims=None):
        return movement.roll(self, shifts, dims)

    def tril(self, diagonal=0):
        return movement.tril(self, diagonal)

    def triu(self, diagonal=0):
        return movement.triu(self, diagonal)

    def repeat(self, *sizes):
        return movement.repeat(self, *sizes)

    def repeat_interleave(self, repeats, dim=None):
        return movement.repeat_interleave(self, repeats, dim)

    def diagonal(self, offset=0, dim1=0, dim2=1):
        return movement.diagonal(self, offset, dim1, dim2)

    def unfold(self, dimension, size, step):
        return movement.unfold(self, dimension, size, step)

    def movedim(self, source, destination):
        return movement.movedim(self, source, destination)

    moveaxis = movedim

    def split(self, split_size_or_sections, dim=0):
        return movement.split(self, split_size_or_sections, dim)

    def chunk(self, chunks, dim=0):
        return movement.chunk(self, chunks, dim)

    # -- indexing along a dim (ops/indexing.py) ------------------------------------------------

    def gather(self, dim, index):
        return indexing.gather(self, dim, index)

    def scatter(self, dim, index, src=None, *, value=None):
        return indexing.scatter(self, dim, index, src, value=value)

    def scatter_add(self, dim, index, src):
        return indexing.scatter_add(self, dim, index, src)

    def masked_fill(self, mask, value):
        return indexing.masked_fill(self, mask, value)

    def sort(self, dim=None, descending=False, stable=False, *, axis=None):
        return indexing.sort(self, dim, descending, stable, axis=axis)

    def argsort(self, dim=None, descending=False, stable=False, *, axis=None):
        return indexing.argsort(self, dim, descending, stable, axis=axis)

    def topk(self, k, dim=None, largest=True, sorted=True, *, axis=None):
        return indexing.topk(self, k, dim, largest, sorted, axis=axis)

    def nonzero(self, as_tuple=False):
        return indexing.nonzero(self, as_tuple)

    # -- in-place operations (bump the version counter) ----------------------------------------

    def _inplace(self, op_class, *operands, **options):
        """Apply an op and write its result into this tensor's array (see autograd/inplace)."""
        return apply_inplace(self, op_class, *(_operand(value) for value in operands), **options)

    # x += y is x.add_(y), as in PyTorch: the tensor itself changes, so `p -= lr * p.grad`
    # under tg.no_grad() updates the parameter. (x @= y rebinds x, as PyTorch's does.)
    def __iadd__(self, other):
        return self._inplace_operator(Add, other)

    def __isub__(self, other):
        return self._inplace_operator(Sub, other)

    def __imul__(self, other):
        return self._inplace_operator(Mul, other)

    def __itruediv__(self, other):
        return self._inplace_operator(Div, other)

    def _inplace_operator(self, op_class, other):
        other = _operand(other)
        return NotImplemented if other is None else apply_inplace(self, op_class, other)

    def relu_(self):
        return self._inplace(Relu)

    def add_(self, other):
        return self._inplace(Add, other)

    def sub_(self, other):
        return self._inplace(Sub, other)

    def mul_(self, other):
        return self._inplace(Mul, other)

    def div_(self, other):
        return self._inplace(Div, other)

    def clamp_(self, low=None, high=None):
        return self._inplace(Clip, low=low, high=_check_bounds("clamp_", low, high))

    clip_ = clamp_

    def zero_(self):
        """a = 0 in place (recorded as a * 0: no gradient flows to the old values)."""
        return self._inplace(Mul, 0.0)

    def fill_(self, value):
        """a = value in place (recorded as a * 0 + value: no gradient to the old values)."""
        self._inplace(Mul, 0.0)
        return self._inplace(Add, value)

    def copy_(self, source):
        """Overwrite the data with `source` (not recorded: use under tg.no_grad())."""
        if STATE.grad_enabled and self._requires_grad:
            raise RuntimeError("copy_ into a tensor that requires grad: use tg.no_grad()")
        source = source.data if isinstance(source, Tensor) else np.asarray(source)
        np.copyto(self.data, source, casting="same_kind")
        self._version[0] += 1
        if STATE.recorder is not None:
            STATE.recorder.record_write(self, source)
        return self


def _check_bounds(op_name, low, high):
    """clip needs a bound (PyTorch raises too): clip(None, None) is most likely a mistake."""
    if low is None and high is None:
        raise ValueError(f"{op_name}: at least one of low (min) and high (max) must not be None")
    return high


def _reduced_count(shape, axis, op_name):
    axes = normalize_axes(axis, len(shape), op_name)
    count = 1
    for axis_index in axes:
        count *= shape[axis_index]
    return count


# Operand types an operator passes on as they are (checked first, for speed). Exact types:
# np.float64 subclasses float but must go through _operand (it would upcast float32).
_FAST_OPERANDS = frozenset((Tensor, float, int))

# -- module-level functions ----------------------------------------------------------------------


def stack(tensors, axis=0):
    """Join tensors of the same shape along a new axis.

    >>> import tinygrad_ops as tg
    >>> tg.stack([tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0])]).shape
    (2, 2)
    """
    return Stack.apply(*(_as_tensor_operand(t) for t in tensors), axis=axis)


def concatenate(tensors, axis=0):
    """Join tensors along an existing axis.

    >>> import tinygrad_ops as tg
    >>> tg.concatenate([tg.Tensor([1.0]), tg.Tensor([2.0, 3.0])]).shape
    (3,)
    """
    return Concatenate.apply(*(_as_tensor_operand(t) for t in tensors), axis=axis)


def where(condition, x, y):
    """Elements of `x` where `condition` holds, else of `y` (differentiable in x and y).

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([-1.0, 2.0])
    >>> tg.where(x > 0, x, 0.0).numpy()
    array([0., 2.], dtype=float32)
    """
    condition = condition.data if isinstance(condition, Tensor) else np.asarray(condition)
    return Where.apply(condition, _as_tensor_operand(x), _as_tensor_operand(y))


def maximum(a, b):
    """The elementwise maximum (ties share the gradient equally, as PyTorch).

    >>> import tinygrad_ops as tg
    >>> tg.maximum(tg.Tensor([1.0, 5.0]), tg.Tensor([3.0, 2.0])).numpy()
    array([3., 5.], dtype=float32)
    """
    return Maximum.apply(_as_tensor_operand(a), _as_tensor_operand(b))


def _as_tensor_operand(value):
    operand = _operand(value)
    if operand is None:
        raise TypeError(f"expected a Tensor, array or number, got {type(value).__name__}")
    return operand


class ReleasedTensor(Tensor):
    """An input of a node that backward has released: the tensor's shape, dtype, name and
    history (`grad_fn`), without its values, which are freed unless someone else holds the
    tensor (as PyTorch frees what a graph held once backward has run).

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor(tg.randn(32, 32).numpy(), requires_grad=True)
    >>> loss = (x.exp() * 2).sum()
    >>> loss.backward()
    >>> husk = loss.grad_fn.inputs[0]
    >>> husk.shape, husk.grad_fn is not None
    ((32, 32), True)
    """

    __slots__ = ()

    @property
    def data(self):
        raise RuntimeError(
            f"the values of this {self.dtype} tensor of shape {self.shape} were freed when "
            "backward released the graph that held it; keep a reference to the tensor, or "
            "pass retain_graph=True to backward"
        )

    def __repr__(self):
        return f"ReleasedTensor(shape={self.shape}, dtype={self.dtype}, values freed)"


bind_tensor(Tensor)  # the ops and the engine build their results through this class
