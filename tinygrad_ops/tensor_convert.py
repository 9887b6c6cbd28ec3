"""The Tensor methods that hand its values out or convert it: `numpy`, `item`, `tolist`,
`detach`, the dtype conversions, and the Python protocols (repr, len, iteration, bool,
float, int, `np.asarray`). `Tensor` inherits them (see `tensor.py`).

>>> import tinygrad_ops as tg
>>> x = tg.Tensor([1.0, 2.0])
>>> x.tolist(), len(x), x.double().dtype
([1.0, 2.0], 2, dtype('float64'))
"""

import numpy as np

from .mode import no_grad
from .ops import base
from .ops.checks import ArgumentError, check_number, checked_shape, varargs_shape
from .ops.elementwise import Cast

# PyTorch's legacy type names, by dtype (Tensor.type).
TYPE_NAMES = {
    np.dtype(np.float16): "HalfTensor", np.dtype(np.float32): "FloatTensor",
    np.dtype(np.float64): "DoubleTensor", np.dtype(np.uint8): "ByteTensor",
    np.dtype(np.int8): "CharTensor", np.dtype(np.int16): "ShortTensor",
    np.dtype(np.int32): "IntTensor", np.dtype(np.int64): "LongTensor",
    np.dtype(np.bool_): "BoolTensor",
}  # fmt: skip


class ConversionMethods:
    """Mixed into `Tensor` (see the module docstring)."""

    __slots__ = ()

    def numpy(self) -> np.ndarray:
        """The data as a numpy array (shared, not copied)."""
        base.values_read(self, ".numpy()")
        return self.data

    def item(self):
        """The single value of a one-element tensor, as a Python number."""
        if self.data.size != 1:
            raise ArgumentError(
                f"item() needs a tensor with one element, this one has shape {self.shape}"
            )
        base.values_read(self, ".item()")
        return self.data.item()

    def tolist(self):
        base.values_read(self, ".tolist()")
        return self.data.tolist()

    # -- questions about the values (PyTorch's names; plain Python answers, off the tape) ------

    def is_floating_point(self) -> bool:
        """True for a float16/32/64 tensor.

        >>> import tinygrad_ops as tg
        >>> tg.Tensor([1.0]).is_floating_point(), tg.tensor([1]).is_floating_point()
        (True, False)
        """
        return self.dtype.kind == "f"

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
        """Whether |x - other| <= atol + rtol * |other| everywhere (as torch.allclose).

        >>> import tinygrad_ops as tg
        >>> tg.Tensor([1.0, 2.0]).allclose(tg.Tensor([1.0, 2.0 + 1e-9]))
        True
        """
        return bool(np.allclose(self.numpy(), _values(other, "allclose"), rtol, atol, equal_nan))

    def equal(self, other) -> bool:
        """Whether `other` has this shape and these values (as torch.equal).

        >>> import tinygrad_ops as tg
        >>> tg.Tensor([1.0, 2.0]).equal(tg.Tensor([1.0, 2.0])), tg.ones(2).equal(tg.ones(3))
        (True, False)
        """
        return bool(np.array_equal(self.numpy(), _values(other, "equal")))

    # -- new tensors like this one (PyTorch's new_*: this dtype unless one is given) ------------

    def new_zeros(self, *size, dtype=None, requires_grad=False):
        """Zeros of `size` (ints, or one tuple) with this tensor's dtype.

        >>> import numpy as np, tinygrad_ops as tg
        >>> tg.Tensor(np.ones(3)).new_zeros(2, 2).dtype
        dtype('float64')
        """
        return self._new_filled("new_zeros", varargs_shape(size), 0, dtype, requires_grad)

    def new_ones(self, *size, dtype=None, requires_grad=False):
        """Ones of `size` (ints, or one tuple) with this tensor's dtype.

        >>> import tinygrad_ops as tg
        >>> tg.Tensor([1.0]).new_ones((2,)).tolist()
        [1.0, 1.0]
        """
        return self._new_filled("new_ones", varargs_shape(size), 1, dtype, requires_grad)

    def new_full(self, size, fill_value, dtype=None, requires_grad=False):
        """`fill_value` everywhere in a tensor of `size` with this tensor's dtype.

        >>> import tinygrad_ops as tg
        >>> tg.Tensor([1.0]).new_full((2,), 7).tolist()
        [7.0, 7.0]
        """
        check_number("new_full", fill_value, "fill_value")
        return self._new_filled("new_full", size, fill_value, dtype, requires_grad)

    def new_empty(self, *size, dtype=None, requires_grad=False):
        """A tensor of `size` with this tensor's dtype, its values unspecified (zeros here).

        >>> import tinygrad_ops as tg
        >>> tg.Tensor([1.0]).new_empty(3).shape
        (3,)
        """
        return self._new_filled("new_empty", varargs_shape(size), 0, dtype, requires_grad)

    def new_tensor(self, data, dtype=None, requires_grad=False):
        """A copy of `data` as a tensor with this tensor's dtype (unless given).

        >>> import numpy as np, tinygrad_ops as tg
        >>> tg.Tensor(np.ones(1)).new_tensor([1, 2]).dtype
        dtype('float64')
        """
        return base.Tensor(data, requires_grad, self.dtype if dtype is None else dtype)

    def _new_filled(self, op_name, size, value, dtype, requires_grad):
        shape = checked_shape(size, op_name)
        tensor = base.new_tensor(np.full(shape, value, self.dtype if dtype is None else dtype))
        tensor.requires_grad = requires_grad  # (refused for an integer dtype, by name)
        return tensor

    def detach(self):
        """The same data, cut from the tape (shares memory and the version counter)."""
        tensor = self._make(self.data, False, None)
        tensor._version = self._version
        return tensor

    def astype(self, dtype):
        """This tensor converted to `dtype`: differentiable between float dtypes; an integer
        or bool result carries no gradient (as PyTorch's `x.long()`: requires_grad False)."""
        dtype = np.dtype(dtype)
        if dtype.kind == "f":
            return Cast.apply(self, dtype=dtype)
        with no_grad():  # (still one recorded op for tg.compile's capture)
            return Cast.apply(self, dtype=dtype)

    def type(self, dtype=None):
        """With a dtype (or PyTorch's type name, "torch.DoubleTensor"), this tensor converted
        to it, as `astype`; without, PyTorch's name of its type ("torch.FloatTensor" for
        float32), as torch.Tensor.type.

        >>> import tinygrad_ops as tg
        >>> tg.ones(2).type(), tg.ones(2).type("torch.LongTensor").dtype
        ('torch.FloatTensor', dtype('int64'))
        """
        if dtype is None:
            return f"torch.{TYPE_NAMES[self.dtype]}"
        if isinstance(dtype, str) and dtype.removeprefix("torch.") in TYPE_NAMES.values():
            dtype = next(key for key, name in TYPE_NAMES.items() if f"torch.{name}" == dtype)
        return self if np.dtype(dtype) == self.dtype else self.astype(dtype)

    def element_size(self):
        """The bytes one element takes (4 for float32), as torch.Tensor.element_size."""
        return self.dtype.itemsize

    def type_as(self, other):
        """This tensor converted to `other`'s dtype (as `astype(other.dtype)`)."""
        return self.astype(other.dtype)

    def float(self):
        return self.astype(np.float32)

    def double(self):
        return self.astype(np.float64)

    def half(self):
        return self.astype(np.float16)

    def long(self):
        return self.astype(np.int64)

    def int(self):
        return self.astype(np.int32)

    def bool(self):
        return self.astype(np.bool_)

    def to(self, *args, dtype=None, device=None, copy=False):
        """PyTorch's `x.to(dtype)` / `x.to("cpu")`: a dtype converts (as `astype`); the only
        device is the CPU (numpy), so any other is an error. `copy=True` always copies.

        >>> import numpy as np, tinygrad_ops as tg
        >>> tg.Tensor([1.5]).to(np.float64).dtype, tg.Tensor([1.5]).to("cpu").dtype
        (dtype('float64'), dtype('float32'))
        """
        for arg in args:
            if arg is None or isinstance(arg, str):
                device = arg
            elif dtype is None:
                dtype = arg
            else:
                raise TypeError(f"to: got two dtypes, {dtype!r} and {arg!r}")
        if device is not None and not str(device).startswith("cpu"):
            raise ValueError(
                f"to: this engine computes with numpy on the CPU; there is no device {device!r}"
            )
        if dtype is not None and np.dtype(dtype) != self.dtype:
            return self.astype(dtype)
        return self.clone() if copy else self

    def clone(self):
        """A copy of the values, on the tape (the gradient flows back to this tensor), as
        PyTorch's `clone`; `detach()` is the copy-free cut from the tape."""
        return Cast.apply(self, dtype=self.dtype)  # (astype copies, even to the same dtype)

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
            raise ArgumentError(
                f"the truth value of a tensor with {self.data.size} elements (shape "
                f"{self.shape}) is ambiguous; use .any() or .all() on .data"
            )
        base.values_read(self, "bool()")
        return bool(self.data)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __array__(self, dtype=None, copy=None):
        base.values_read(self, "np.asarray()")
        return self.data if dtype is None else self.data.astype(dtype)


def _values(other, op_name):
    if isinstance(other, base.Tensor):
        return other.numpy()
    raise TypeError(f"{op_name}: expects a Tensor to compare with, got {type(other).__name__}")
