"""The Tensor methods that move, reshape and index: each one line over a shape op
(`ops/shape.py`) or a composed function (`ops/movement.py`, `ops/indexing.py`). `Tensor`
inherits them (see `tensor.py`).

>>> import tinygrad_ops as tg
>>> x = tg.Tensor([[1.0, 2.0], [3.0, 4.0]])
>>> x.T.shape, x.reshape(4).shape, x[0].tolist(), x.flip(0)[0].tolist()
((2, 2), (4,), [1.0, 2.0], [3.0, 4.0])
"""

import math

import numpy as np

from .autograd.inplace import apply_inplace
from .mode import STATE
from .ops import indexing, movement, scatter_reduce
from .ops.base import bump_version, is_tensor, values_written
from .ops.checks import ArgumentError, ShapeError, normalize_axis
from .ops.shape import (
    BroadcastTo,
    GetItem,
    Reshape,
    SetItem,
    Transpose,
    expanded_shape,
    normalize_index,
    squeezed_shape,
)


class ElementCount(int):
    """`Tensor.size`: numpy's number of elements, an int, that PyTorch's habits may also call:
    `x.size()` is the shape and `x.size(dim)` the length of one dim, as `torch.Tensor.size`.

    >>> import tinygrad_ops as tg
    >>> x = tg.zeros((2, 3))
    >>> x.size, x.size(), x.size(0), x.size(-1)
    (6, (2, 3), 2, 3)
    """

    def __new__(cls, shape):
        count = super().__new__(cls, math.prod(shape))
        count.shape = shape
        return count

    def __call__(self, dim=None):
        if dim is None:
            return self.shape
        if not self.shape:
            raise IndexError(f"size({dim!r}): a 0-d tensor has no dims")
        return self.shape[normalize_axis(dim, len(self.shape), "size", "dim")]


class ShapeMethods:
    """Mixed into `Tensor` (see the module docstring)."""

    __slots__ = ()

    @property
    def T(self):  # noqa: N802 (numpy's and PyTorch's name)
        """The transpose: all axes reversed."""
        return self.transpose()

    # -- shape ---------------------------------------------------------------------------------

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return Reshape.apply(self, shape=tuple(shape))

    def flatten(self, start_dim=0, end_dim=-1):
        """The dims from start_dim to end_dim (negatives from the end) as one, as PyTorch's;
        a 0-d tensor becomes (1,).

        >>> import tinygrad_ops as tg
        >>> tg.zeros(2, 3, 4).flatten(1).shape, tg.zeros(2, 3, 4).flatten(0, 1).shape
        ((2, 12), (6, 4))
        """
        start = normalize_axis(start_dim, self.ndim, "flatten", "start_dim")
        end = normalize_axis(end_dim, self.ndim, "flatten", "end_dim")
        if start > end:
            raise ArgumentError(
                f"flatten: start_dim {start_dim} comes after end_dim {end_dim} "
                f"(for a {self.ndim}-d tensor)"
            )
        merged = math.prod(self.shape[start : end + 1])  # (not -1: a size 0 elsewhere)
        return self.reshape(self.shape[:start] + (merged,) + self.shape[end + 1 :])

    def unflatten(self, dim, sizes):
        """Dim `dim` split into dims of `sizes` (one of them may be -1), as PyTorch's: the
        inverse of `flatten`.

        >>> import tinygrad_ops as tg
        >>> tg.zeros(2, 12).unflatten(1, (3, -1)).shape
        (2, 3, 4)
        """
        axis = normalize_axis(dim, self.ndim, "unflatten", "dim")
        sizes = tuple(sizes)
        known = math.prod(size for size in sizes if size != -1)
        inferred = sizes.count(-1) == 1 and known and self.shape[axis] % known == 0
        if not sizes or (math.prod(sizes) != self.shape[axis] and not inferred):
            raise ShapeError(
                f"unflatten: sizes {sizes} do not multiply to dim {dim}'s size {self.shape[axis]}"
            )
        return self.reshape(self.shape[:axis] + sizes + self.shape[axis + 1 :])

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

    def expand(self, *sizes):
        """`broadcast_to` with PyTorch's -1 for a size kept: `x.expand(-1, 4)`.

        >>> import tinygrad_ops as tg
        >>> tg.zeros(3, 1).expand(-1, 4).shape
        (3, 4)
        """
        sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
        offset = len(sizes) - self.ndim
        if offset < 0:
            raise ShapeError(f"expand: {len(sizes)} sizes for a {self.ndim}-d tensor {self.shape}")
        shape = tuple(
            self.shape[index - offset] if size == -1 and index >= offset else size
            for index, size in enumerate(sizes)
        )
        return self.broadcast_to(shape)

    def view(self, *shape):
        """`reshape` under PyTorch's other name (a copy where numpy cannot view)."""
        return self.reshape(*shape)

    def view_as(self, other):
        """This tensor in `other`'s shape (`reshape(other.shape)`)."""
        return self.reshape(other.shape)

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def expand_as(self, other):
        """This tensor broadcast to `other`'s shape (`expand(*other.shape)`)."""
        return self.expand(*other.shape)

    def expand_dims(self, axis):
        return self.reshape(expanded_shape(self.shape, axis))

    unsqueeze = expand_dims

    def squeeze(self, axis=None):
        """The tensor without size-1 dims (those named by `axis`; a named dim of another
        size stays, as in PyTorch)."""
        return self.reshape(squeezed_shape(self.shape, axis))

    def __getitem__(self, index):
        return GetItem.apply(self, index=index)

    # -- indexing along one dim, PyTorch's names (each one GetItem) ------------------------------

    def narrow(self, dim, start, length):
        """`length` elements along `dim` from `start` (negative: from the end), as PyTorch's.

        >>> import tinygrad_ops as tg
        >>> tg.arange(6).reshape(2, 3).narrow(1, 1, 2).tolist()
        [[1, 2], [4, 5]]
        """
        axis = normalize_axis(dim, self.ndim, "narrow", "dim")
        size = self.shape[axis]
        begin = start + size if start < 0 else start
        if not 0 <= begin <= size or length < 0 or begin + length > size:
            raise IndexError(
                f"narrow: start {start} and length {length} do not fit dim {dim} of size {size}"
            )
        return self[(slice(None),) * axis + (slice(begin, begin + length),)]

    def unbind(self, dim=0):
        """The slices along `dim`, as a tuple (`dim` removed from each), as PyTorch's."""
        if not self.ndim:
            raise IndexError("unbind: a 0-d tensor has no dim to split along")
        axis = normalize_axis(dim, self.ndim, "unbind", "dim")
        return tuple(self[(slice(None),) * axis + (index,)] for index in range(self.shape[axis]))

    def index_select(self, dim, index):
        """The entries at `index` (a 1-d integer tensor) along `dim`, as PyTorch's (a
        negative index is out of range there too)."""
        axis = normalize_axis(dim, self.ndim, "index_select", "dim")
        data = index.data if is_tensor(index) else np.asarray(index)
        if data.ndim > 1 or data.dtype.kind not in "iu":
            raise TypeError(
                f"index_select: index must be a 0-d or 1-d integer tensor, got {data.dtype} "
                f"of shape {data.shape}"
            )
        indices = indexing.as_index(data, "index_select").reshape(-1)  # (values read: noted)
        size = self.shape[axis] if self.ndim else 1
        if indices.size and (indices.min() < 0 or indices.max() >= size):
            raise IndexError(f"index_select: an index is out of range for dim {dim} of size {size}")
        return self[(slice(None),) * axis + (indices,)]

    def __setitem__(self, index, value):
        """`x[index] = value`, in place, as PyTorch: recorded (a `SetItem` on the tape)
        when x or value requires grad, so that the gradient reaches both; a leaf that
        requires grad refuses it, as any in-place op (assign under tg.no_grad())."""
        values_written(self, None, "an assignment into a tensor (x[...] = value)")
        if not is_tensor(value) and not isinstance(value, (bool, int, float)):
            value = np.asarray(value)
        if STATE.grad_enabled and (
            self._requires_grad or (is_tensor(value) and value._requires_grad)
        ):
            apply_inplace(self, SetItem, value, index=index)
            return
        self.data[normalize_index(index, self.shape)[0]] = value.data if is_tensor(value) else value
        bump_version(self)

    def matmul(self, other):
        return self @ other

    def mm(self, other):
        """The product of two matrices (2-D only, as PyTorch's `mm`; `@` broadcasts)."""
        _check_product("mm", "both arguments must be matrices (2-D)", self, other, _matrices)
        return self @ other

    def bmm(self, other):
        """Batched matrix products of two 3-D tensors with one batch size, as PyTorch's."""
        requirement = "both arguments must be 3-D (batch, n, m) with one batch size"
        _check_product("bmm", requirement, self, other, _batches)
        return self @ other

    def dot(self, other):
        """The dot product of two 1-D tensors of one length, as PyTorch's (not numpy's)."""
        _check_product(
            "dot", "both arguments must be 1-D of one length", self, other, _same_vectors
        )
        return self @ other

    def outer(self, other):
        """The outer product of two 1-D tensors: out[i, j] = a[i] b[j]."""
        _check_product("outer", "both arguments must be 1-D", self, other, _vectors)
        return self.reshape(-1, 1) * other.reshape(1, -1)

    def t(self):
        """The transpose of a matrix (a 0-d or 1-d tensor as it is), as PyTorch's `t()`."""
        if self.ndim > 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 dimensions, but this one has {self.ndim} "
                "(use transpose(dim0, dim1) or mT)"
            )
        return self.transpose(0, 1) if self.ndim == 2 else self

    def dim(self) -> int:
        """The number of dimensions (PyTorch's name for `ndim`)."""
        return self.ndim

    def numel(self) -> int:
        """The number of elements (PyTorch's name for `size` as a count)."""
        return int(self.data.size)

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

    def diag(self, diagonal=0):
        return movement.diag(self, diagonal)

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

    def scatter(self, dim, index, src=None, *, value=None, reduce=None):
        return scatter_reduce.scatter(self, dim, index, src, value=value, reduce=reduce)

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


def _check_product(op_name, requirement, first, second, accepts):
    """Raise naming both shapes unless `accepts(first's shape, second's shape)`."""
    second_shape = getattr(second, "shape", None)
    if second_shape is None or not accepts(first.shape, tuple(second_shape)):
        raise RuntimeError(
            f"{op_name}: {requirement}, got shapes {first.shape} and "
            f"{type(second).__name__ if second_shape is None else tuple(second_shape)}"
        )


def _matrices(first, second):
    return len(first) == 2 and len(second) == 2


def _batches(first, second):
    return len(first) == 3 and len(second) == 3 and first[0] == second[0]


def _same_vectors(first, second):
    return len(first) == 1 and first == second


def _vectors(first, second):
    return len(first) == 1 and len(second) == 1
