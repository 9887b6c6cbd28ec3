"""`Tensor`: a numpy array, its gradient, and the edge of the tape that produced it.

This module is the core: construction, the attributes (`data`, `grad`, `requires_grad`,
the version counter), `backward` and hooks, and the operators (`+ - * / @ **`, the
comparisons). The method families live beside it, one module each, and `Tensor` inherits
them: `tensor_convert` (numpy, item, dtype conversions, the Python protocols),
`tensor_shape` (reshape, transpose, indexing), `tensor_math` (elementwise functions),
`tensor_reduce` (sum, mean, max, cumulative), `tensor_inplace` (`+=`, `add_`, ...);
`tensor_functions` holds stack, concatenate, where and maximum. Every operator and method
is a real `def` that calls one primitive's `apply` (see `ops/`), or composes a few of them.
"""

from __future__ import annotations

import weakref

import numpy as np

from .autograd.backward import tensor_backward
from .autograd.graph import HookHandle, accumulate_leaf
from .ops.base import GRAD_READ, as_operand, bind_tensor, placeholder, values_read
from .ops.checks import ShapeError
from .ops.dtypes import FLOATS
from .ops.elementwise import Add, Div, Mul, Neg, Pow, PowScalar, Sub
from .ops.linalg import MatMul
from .tensor_convert import ConversionMethods
from .tensor_functions import concatenate, maximum, stack, where
from .tensor_inplace import InplaceMethods
from .tensor_math import MathMethods
from .tensor_reduce import ReduceMethods
from .tensor_shape import ElementCount, ShapeMethods

__all__ = ["ReleasedTensor", "Tensor", "concatenate", "from_numpy", "maximum", "stack", "where"]

FLOAT_DTYPES = (np.float16, np.float32, np.float64)
DEFAULT_DTYPE = np.float32


def _to_array(data, dtype):
    """Convert what `Tensor(...)` accepts into a numpy array, following the dtype rules."""
    if isinstance(data, Tensor):
        values_read(data, "tg.Tensor(tensor) (a copy made outside the ops)")
        array = np.array(data.data, dtype=dtype, copy=True)
    elif isinstance(data, np.ndarray):
        values_read(data, "tg.Tensor(array) (a copy made outside the ops)")
        array = np.array(data, dtype=dtype, copy=True)  # a copy, as torch.tensor makes
    elif isinstance(data, (bool, int, float, np.generic)):
        # A numpy scalar keeps its dtype, as a numpy array does (torch.tensor(np.int32(1))
        # is int32); Python numbers become float32.
        default = data.dtype if isinstance(data, np.generic) else DEFAULT_DTYPE
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


def _retainer(tensor_ref):
    """The hook of `retain_grad`: add the gradient into the tensor's `.grad` (the tensor is
    held weakly, so that its own hook does not keep it alive)."""

    def retain(grad):
        tensor = tensor_ref()
        if tensor is not None:  # as a leaf's: a copy, or a recorded sum in a create_graph pass
            accumulate_leaf(tensor, grad, create_graph=grad._ctx is not None)

    retain.retains_grad = True
    return retain


def binary_operator(op_class, reflected=False):
    """The method `self <op> other` (`other <op> self` when reflected, as `__radd__`): the one
    coercion of an operator's operand, then `op_class.apply`.

    Tensors and Python numbers go as they are; numpy scalars become Python numbers (so that
    they do not widen the tensor), lists become tensors; anything else is NotImplemented
    (Python then tries the other operand's operator). The method is this closure itself,
    one call between `a * b` and `Mul.apply` (the hot path of every expression); it tells
    `apply` when type promotion has nothing to do (a float tensor with a Python number or
    with a tensor of its own dtype), which it sees from the operand's type at no cost.
    """

    def operator(self, other):
        kind = type(other)
        if kind not in _FAST_OPERANDS and not isinstance(other, Tensor):
            other = as_operand(other)
            if other is None:
                return NotImplemented
        # A float tensor with a Python number or a tensor of its dtype: nothing to promote.
        dtype = self._data.dtype
        promoted = dtype in FLOATS and (
            kind is float or kind is int or (kind is Tensor and other._data.dtype is dtype)
        )
        if reflected:
            return op_class.apply(other, self, promoted=promoted)
        return op_class.apply(self, other, promoted=promoted)

    operator.op_class = op_class  # (read by tinygrad_ops.opdocs)
    return operator


def comparison_method(name, operator):
    """`x.<name>(y)` (`x.eq(y)` is `x == y`); a TypeError where the operator gives up."""

    def method(self, other):
        result = operator(self, other)
        if result is NotImplemented:
            raise TypeError(f"{name}: cannot compare a Tensor with {type(other).__name__}")
        return result

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`x.{name}(y)` is `x {_SYMBOLS[name]} y`: a boolean tensor."
    return method


_SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class Tensor(ConversionMethods, ShapeMethods, MathMethods, ReduceMethods, InplaceMethods):
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
        self._version = [0, -1]
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
        tensor._version = [0, -1]
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
        values_read(self, GRAD_READ)  # (tg.compile: a branch on it is guarded)
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
    def size(self) -> ElementCount:
        """The number of elements, as numpy's `size`; called, PyTorch's `size()`: the shape,
        or `size(dim)`, the length of one dim (see `ElementCount`)."""
        return ElementCount(self._data.shape)

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

    def requires_grad_(self, requires_grad=True):
        """Set `requires_grad` in place and return this tensor (PyTorch's idiom)."""
        self.requires_grad = requires_grad
        return self

    def retain_grad(self):
        """Keep this tensor's gradient in `.grad` after backward, also for a non-leaf (a
        leaf keeps it anyway); later backward passes add to it, as PyTorch's.

        >>> import tinygrad_ops as tg
        >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * 3
        >>> y.retain_grad()
        >>> (y * y).sum().backward()
        >>> y.grad.numpy()
        array([ 6., 12.], dtype=float32)
        """
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on a tensor that has requires_grad=False")
        if self._ctx is None or any(
            getattr(hook, "retains_grad", False) for hook in (self._hooks or {}).values()
        ):
            return
        self.register_hook(_retainer(weakref.ref(self)))

    # -- arithmetic operators ------------------------------------------------------------------

    __add__, __radd__ = binary_operator(Add), binary_operator(Add, reflected=True)
    __sub__, __rsub__ = binary_operator(Sub), binary_operator(Sub, reflected=True)
    __mul__, __rmul__ = binary_operator(Mul), binary_operator(Mul, reflected=True)
    __truediv__, __rtruediv__ = binary_operator(Div), binary_operator(Div, reflected=True)
    __matmul__, __rmatmul__ = binary_operator(MatMul), binary_operator(MatMul, reflected=True)

    def __pow__(self, exponent):
        exponent = as_operand(exponent)
        if exponent is None:
            return NotImplemented
        if isinstance(exponent, (int, float)):
            return PowScalar.apply(self, exponent=exponent)
        return Pow.apply(self, exponent)

    __rpow__ = binary_operator(Pow, reflected=True)

    def __neg__(self):
        return Neg.apply(self)

    def __pos__(self):
        """+a is a itself (no op, nothing recorded)."""
        return self

    # -- comparisons: boolean tensors, outside the tape ----------------------------------------

    def _compare(self, other, compare):
        """out = the elementwise comparison: a boolean tensor outside the tape (no gradient)."""
        values_read(self, "a comparison (x > 0, ...)")
        if isinstance(other, Tensor):
            values_read(other, "a comparison (x > 0, ...)")
        other = other.data if isinstance(other, Tensor) else as_operand(other)
        if other is None:
            return NotImplemented
        try:
            return Tensor._make(compare(self.data, other), False, None)
        except ValueError:
            raise ShapeError(
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

    # PyTorch's names of the comparisons, as methods: `predicted.eq(labels).sum()`.
    eq, ne = comparison_method("eq", __eq__), comparison_method("ne", __ne__)
    lt, le = comparison_method("lt", __lt__), comparison_method("le", __le__)
    gt, ge = comparison_method("gt", __gt__), comparison_method("ge", __ge__)


# Operand types an operator passes on as they are (checked first, for speed). Exact types:
# np.float64 subclasses float but must go through as_operand (it would upcast float32).
_FAST_OPERANDS = frozenset((Tensor, float, int))


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
