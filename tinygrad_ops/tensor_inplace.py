"""The Tensor operations that change the tensor itself: `x += y` and the methods named
with a trailing underscore (`add_`, `zero_`, ...). Each applies an op and writes its result
into the tensor's own array, bumping its version counter (the rule is `autograd/inplace`).
`Tensor` inherits them (see `tensor.py`).

>>> import tinygrad_ops as tg
>>> x = tg.Tensor([1.0, 2.0])
>>> x += 1
>>> x.mul_(2).tolist()
[4.0, 6.0]
"""

import numpy as np

from .autograd.inplace import apply_inplace
from .mode import STATE
from .ops.base import as_operand, bump_version, is_tensor, values_written
from .ops.checks import check_number
from .ops.elementwise import Add, Clip, Div, Fill, Mul, Relu, Sub
from .random_state import default_generator
from .tensor_math import check_bounds


class InplaceMethods:
    """Mixed into `Tensor` (see the module docstring)."""

    __slots__ = ()

    def _inplace(self, op_class, *operands, **options):
        """Apply an op and write its result into this tensor's array (see autograd/inplace)."""
        return apply_inplace(self, op_class, *(as_operand(value) for value in operands), **options)

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
        other = as_operand(other)
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

    def clip_(self, low=None, high=None):
        return self._inplace(Clip, low=low, high=check_bounds("clip_", low, high))

    def clamp_(self, min=None, max=None):
        """`clip_` with PyTorch's argument names: `x.clamp_(min=0)`."""
        return self._inplace(Clip, low=min, high=check_bounds("clamp_", min, max))

    def zero_(self):
        """a = 0 in place, NaNs and infs included (no gradient flows to the old values)."""
        return self.fill_(0)

    def fill_(self, value):
        """a = value in place, NaNs and infs included (no gradient flows to the old values)."""
        check_number("fill_", value)
        return self._inplace(Fill, value)

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        """a = samples of U(a, b) in place (PyTorch's `from` and `to`), drawn from `generator`
        or the shared one `tg.manual_seed` reseeds; no gradient flows to the old values."""
        draws = (generator or default_generator()).uniform(a, b, size=self.shape)
        return self._inplace(Fill, draws.astype(self.dtype))

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """a = samples of N(mean, std²) in place, drawn as uniform_'s; no gradient flows to
        the old values."""
        draws = (generator or default_generator()).normal(mean, std, size=self.shape)
        return self._inplace(Fill, draws.astype(self.dtype))

    def copy_(self, source):
        """Overwrite the data with `source` (not recorded: use under tg.no_grad())."""
        if STATE.grad_enabled and self._requires_grad:
            raise RuntimeError("copy_ into a tensor that requires grad: use tg.no_grad()")
        source = source.data if is_tensor(source) else np.asarray(source)
        np.copyto(self.data, source, casting="same_kind")
        bump_version(self)
        values_written(self, source)
        return self
