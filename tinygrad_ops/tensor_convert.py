"""The Tensor methods that hand its values out or convert it: `numpy`, `item`, `tolist`,
`detach`, the dtype conversions, and the Python protocols (repr, len, iteration, bool,
float, int, `np.asarray`). `Tensor` inherits them (see `tensor.py`).

>>> import tinygrad_ops as tg
>>> x = tg.Tensor([1.0, 2.0])
>>> x.tolist(), len(x), x.double().dtype
([1.0, 2.0], 2, dtype('float64'))
"""

import numpy as np

from .mode import STATE
from .ops.elementwise import Cast


class ConversionMethods:
    """Mixed into `Tensor` (see the module docstring)."""

    __slots__ = ()

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

    def detach(self):
        """The same data, cut from the tape (shares memory and the version counter)."""
        tensor = self._make(self.data, False, None)
        tensor._version = self._version
        return tensor

    def astype(self, dtype):
        """This tensor converted to `dtype` (differentiable between float dtypes)."""
        return Cast.apply(self, dtype=np.dtype(dtype))

    def float(self):
        return self.astype(np.float32)

    def double(self):
        return self.astype(np.float64)

    def half(self):
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
