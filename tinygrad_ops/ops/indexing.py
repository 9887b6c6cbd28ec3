"""Indexing along a dim, as PyTorch's: gather and scatter (each other's adjoint), one_hot,
masked_fill, sort, argsort, topk and nonzero.

`Gather` reads `a` at `index` along one dim; its backward adds g back at those places
(`ScatterAddAlong`), whose backward in turn gathers: both are differentiable to any order.
sort and topk pick their order with numpy and then gather the values, so the gradient flows
through the values to the places they came from; the indices carry no gradient.

Index tensors. PyTorch wants int64 indices. Here `tg.Tensor([0, 1])` is float32 (Python
numbers become the default float), so a float tensor that holds whole numbers is accepted
as an index too; anything else is a TypeError that says what to pass.
"""

from typing import NamedTuple

import numpy as np

from .base import Op, is_tensor, new_tensor, values_read
from .checks import ArgumentError, DtypeError, ShapeError, normalize_axis
from .windows import pad_array_or_tensor


class ValuesIndices(NamedTuple):
    """What sort and topk return, and max/min/cummax/cummin along a dim (PyTorch's
    `torch.return_types`): values and indices."""

    values: object
    indices: object


def as_index(value, op_name, name="index"):
    """`value` (a Tensor, array or list) as an int64 array of indices.

    >>> as_index([0.0, 2.0], "gather")
    array([0, 2])
    """
    data = value.data if is_tensor(value) else np.asarray(value)
    values_read(data, f"{op_name}: its {name} values")
    if data.dtype.kind in "iu":
        return data.astype(np.int64, copy=False)
    if data.dtype.kind == "f" and np.all(np.isfinite(data)) and np.all(data == np.round(data)):
        return data.astype(np.int64)
    raise DtypeError(
        f"{op_name}: {name} must hold integers, got dtype {data.dtype}"
        + (" with non-integer values" if data.dtype.kind == "f" else "")
        + "; pass an integer tensor, e.g. tg.Tensor(indices, dtype=np.int64)"
    )


def pick_dim(dim, axis, op_name, default=None):
    """PyTorch's `dim`, or numpy's `axis` as an alias (not both)."""
    if dim is not None and axis is not None:
        raise TypeError(f"{op_name}: give dim or axis, not both")
    chosen = dim if dim is not None else axis
    if chosen is None and default is None:
        raise TypeError(f"{op_name}: missing the dim argument")
    return default if chosen is None else chosen


def along(index, dim):
    """The full numpy index that reads index[..., i, ...] along `dim` and the position itself
    along every other dim (what take_along_axis does, usable with np.add.at)."""
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def check_index(op_name, array, dim, index, other=None):
    """Shapes and bounds as PyTorch checks them for gather/scatter."""
    if index.ndim != array.ndim:
        raise ShapeError(
            f"{op_name}: index must have as many dims as the input ({array.ndim}), "
            f"got index of shape {index.shape} for input of shape {array.shape}"
        )
    for axis, (size, limit) in enumerate(zip(index.shape, array.shape)):
        if axis != dim and size > limit:
            raise ShapeError(
                f"{op_name}: index of shape {index.shape} is larger than the input "
                f"{array.shape} in dim {axis} (only dim {dim} may differ)"
            )
        if other is not None and size > np.shape(other)[axis]:
            raise ShapeError(
                f"{op_name}: index of shape {index.shape} is larger than src "
                f"{np.shape(other)} in dim {axis}"
            )
    bound = array.shape[dim] if array.ndim else 1
    if index.size and (index.min() < 0 or index.max() >= bound):
        bad = index[(index < 0) | (index >= bound)].flat[0]
        raise IndexError(f"{op_name}: index {bad} is out of bounds for dim {dim} with size {bound}")


def leading_block(array, shape, keep_dim=None):
    """array[:shape[0], :shape[1], ...] (all of dim `keep_dim`): the part an index of `shape`
    reads (PyTorch lets the input and src be larger than the index in every dim but the
    indexed one)."""
    return array[
        tuple(
            slice(None) if axis == keep_dim else slice(0, size) for axis, size in enumerate(shape)
        )
    ]


def pad_to(values, shape):
    """values padded with zeros at the end of every dim up to `shape` (leading_block's adjoint)."""
    return pad_array_or_tensor(
        values, [(0, full - part) for part, full in zip(values.shape, shape)]
    )


class Gather(Op):
    """out[i, j] = a[index[i, j], j] (dim 0; the same along any dim);
    da = zeros with g added at index (repeated indices add up; ScatterAddAlong)"""

    __slots__ = ("dim", "index", "input_shape")

    def forward(self, a, dim, index):
        self.dim, self.index, self.input_shape = dim, index, a.shape
        return leading_block(a, index.shape, dim)[along(index, dim)]

    def backward(self, grad_output):
        zeros = np.zeros(self.input_shape, dtype=grad_output.dtype)
        if is_tensor(grad_output):
            return (ScatterAddAlong.apply(zeros, grad_output, dim=self.dim, index=self.index),)
        np.add.at(zeros, along(self.index, self.dim), grad_output)
        return (zeros,)


class ScatterAddAlong(Op):
    """out = a, plus src[i, j] added at a[index[i, j], j] (dim 0);
    da = g, dsrc = g gathered at index (Gather, zero where src is larger than index)"""

    __slots__ = ("dim", "index", "source_shape")

    def forward(self, a, src, dim, index):
        self.dim, self.index, self.source_shape = dim, index, np.shape(src)
        out = np.array(a, dtype=np.result_type(a, src), copy=True)
        np.add.at(out, along(index, dim), leading_block(src, index.shape))
        return out

    def backward(self, grad_output):
        grad_source = None
        if self.needs_input_grad[1]:
            picked = gather_dispatch(grad_output, self.dim, self.index)
            grad_source = pad_to(picked, self.source_shape)
        return grad_output, grad_source


class ScatterAlong(Op):
    """out = a with a[index[i, j], j] = src[i, j] (dim 0; src may be a number);
    da = g with zeros where src was written, dsrc = g gathered at index (as PyTorch)"""

    __slots__ = ("dim", "index", "source_shape", "written")

    def forward(self, a, src, dim, index):
        self.dim, self.index, self.source_shape = dim, index, np.shape(src)
        out = np.array(a, copy=True)
        values = leading_block(src, index.shape) if np.ndim(src) else src
        out[along(index, dim)] = values
        if self.needs_input_grad[0]:
            self.written = np.ones(np.shape(a), dtype=bool)
            self.written[along(index, dim)] = False
        return out

    def backward(self, grad_output):
        grad_input = grad_source = None
        if self.needs_input_grad[0]:
            grad_input = grad_output * self.written.astype(grad_output.dtype)
        if self.needs_input_grad[1]:
            picked = gather_dispatch(grad_output, self.dim, self.index)
            grad_source = pad_to(picked, self.source_shape)
        return grad_input, grad_source


def gather_dispatch(values, dim, index):
    """Gather on an array (numpy) or a Tensor (the recorded op)."""
    if is_tensor(values):
        return Gather.apply(values, dim=dim, index=index)
    return leading_block(values, index.shape, dim)[along(index, dim)]


# ----------------------------------------------------------------------------------------------
# The public functions (also Tensor methods): arguments checked here, one op each


def _tensor(value, op_name, name="input"):
    if is_tensor(value):
        return value
    if isinstance(value, (np.ndarray, list, tuple, int, float)):
        return new_tensor(np.asarray(value))
    raise TypeError(f"{op_name}: {name} must be a Tensor, got {type(value).__name__}")


def _as_1d(x, index, op_name):
    """0-d input and index as 1-d (PyTorch allows them; numpy's fancy indexing needs a dim)."""
    if x.ndim == 0:
        if index.ndim != 0:
            raise ShapeError(f"{op_name}: a 0-d input needs a 0-d index, got {index.shape}")
        return x.reshape((1,)), index.reshape(1), True
    return x, index, False


def gather(input, dim, index, *, axis=None):
    """out[i][j] = input[index[i][j]][j] for dim 0 (and likewise along any dim); the gradient
    adds g back where each element was read.

    >>> import tinygrad_ops as tg
    >>> gather(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]), 1, tg.Tensor([[0, 0], [1, 0]])).numpy()
    array([[1., 1.],
           [4., 3.]], dtype=float32)
    """
    x = _tensor(input, "gather")
    index = as_index(index, "gather")
    x, index, scalar = _as_1d(x, index, "gather")
    dim = normalize_axis(pick_dim(dim, axis, "gather"), x.ndim, "gather", "dim")
    check_index("gather", x.data, dim, index)
    out = Gather.apply(x, dim=dim, index=index)
    return out.reshape(()) if scalar else out


def _scatter(op_class, op_name, input, dim, index, src, axis):
    """The checks scatter and scatter_add share: src a tensor of index's ndim (or a number)."""
    x = _tensor(input, op_name)
    index = as_index(index, op_name)
    if is_tensor(src) or isinstance(src, (np.ndarray, list)):
        src = _tensor(src, op_name, "src")
        if src.dtype != x.dtype:
            raise DtypeError(
                f"{op_name}: src ({src.dtype}) must have the input's dtype ({x.dtype})"
            )
        if src.ndim != index.ndim:
            raise ShapeError(
                f"{op_name}: src must have as many dims as index ({index.ndim}), got {src.shape}"
            )
    else:
        src = np.asarray(src, dtype=x.dtype)  # a number, written as the input's dtype
    scalar = x.ndim == 0
    if scalar:
        if index.ndim != 0:
            raise ShapeError(f"{op_name}: a 0-d input needs a 0-d index, got {index.shape}")
        x, index = x.reshape((1,)), index.reshape(1)
        src = src.reshape((1,)) if is_tensor(src) else src
    dim = normalize_axis(pick_dim(dim, axis, op_name), x.ndim, op_name, "dim")
    check_index(op_name, x.data, dim, index, src.data if is_tensor(src) else None)
    out = op_class.apply(x, src, dim=dim, index=index)
    return out.reshape(()) if scalar else out


def scatter(input, dim, index, src=None, *, value=None, axis=None):
    """A copy of input with out[index[i][j]][j] = src[i][j] (dim 0; src may be a number, or
    pass value=). The gradient of input is g where nothing was written; of src, g gathered.

    >>> import tinygrad_ops as tg
    >>> scatter(tg.zeros(2, 3), 1, tg.Tensor([[2], [0]]), 5.0).numpy()
    array([[0., 0., 5.],
           [5., 0., 0.]], dtype=float32)
    """
    if (src is None) == (value is None):
        raise TypeError("scatter: give exactly one of src and value")
    return _scatter(ScatterAlong, "scatter", input, dim, index, value if src is None else src, axis)


def scatter_add(input, dim, index, src, *, axis=None):
    """A copy of input with src[i][j] added at out[index[i][j]][j] (dim 0; repeats add up).
    The gradient of input is g; of src, g gathered at index.

    >>> import tinygrad_ops as tg
    >>> scatter_add(tg.zeros(3), 0, tg.Tensor([0, 2, 0]), tg.ones(3)).numpy()
    array([2., 0., 1.], dtype=float32)
    """
    if not (is_tensor(src) or isinstance(src, (np.ndarray, list))):
        raise TypeError(f"scatter_add: src must be a tensor, got {type(src).__name__}")
    return _scatter(ScatterAddAlong, "scatter_add", input, dim, index, src, axis)


def one_hot(tensor, num_classes=-1):
    """int64 tensor with a trailing dim of num_classes: 1 at each index, 0 elsewhere (no
    gradient). num_classes=-1 takes the largest index + 1.

    >>> import tinygrad_ops as tg
    >>> one_hot(tg.Tensor([0, 2]), 3).numpy()
    array([[1, 0, 0],
           [0, 0, 1]])
    """
    index = as_index(tensor, "one_hot", "tensor")
    if index.size and index.min() < 0:
        raise ArgumentError(f"one_hot: class indices must be non-negative, got {index.min()}")
    if num_classes == -1:
        if not index.size:
            raise ArgumentError("one_hot: cannot infer num_classes from an empty tensor; pass it")
        num_classes = int(index.max()) + 1
    if not isinstance(num_classes, (int, np.integer)) or num_classes < 1:
        raise ArgumentError(
            f"one_hot: num_classes must be a positive int or -1, got {num_classes!r}"
        )
    if index.size and index.max() >= num_classes:
        raise ArgumentError(
            f"one_hot: class index {index.max()} is not below num_classes={num_classes}"
        )
    return new_tensor((index[..., None] == np.arange(num_classes)).astype(np.int64))


def masked_fill(input, mask, value):
    """input with value wherever the boolean mask (broadcast to input's shape) is True;
    the gradient of input is g where the mask is False (and of a 0-d Tensor value, the sum
    of g where it is True). Composed: where(mask, value, input).

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([1.0, -2.0, 3.0])
    >>> masked_fill(x, x < 0, 0.0).numpy()
    array([1., 0., 3.], dtype=float32)
    """
    from .elementwise import Where

    x = _tensor(input, "masked_fill")
    mask_data = mask.data if is_tensor(mask) else np.asarray(mask)
    if mask_data.dtype != np.bool_:
        raise DtypeError(
            f"masked_fill: mask must be a boolean tensor (e.g. x < 0), got dtype {mask_data.dtype}"
        )
    try:
        shape = np.broadcast_shapes(mask_data.shape, x.shape)
    except ValueError:
        shape = None
    if shape != x.shape:
        raise ShapeError(
            f"masked_fill: mask of shape {mask_data.shape} does not broadcast to the input's "
            f"shape {x.shape}"
        )
    if is_tensor(value):
        if value.ndim != 0:
            raise ArgumentError(
                f"masked_fill: value must be a number or a 0-d tensor, got {value.shape}"
            )
        fill = value.astype(x.dtype) if value.dtype != x.dtype else value
    else:
        fill = np.asarray(value, dtype=x.dtype)  # the input's dtype, as PyTorch casts it
    return Where.apply(mask_data, fill, x)


def _stable_order(data, dim, descending):
    """Indices that sort `data` along `dim`, equal elements in their original order; NaN
    counts as the largest value (PyTorch's order)."""
    if not descending:
        return np.argsort(data, axis=dim, kind="stable")
    # Descending and still stable: sort the reversed data ascending, then reverse the order.
    flipped = np.flip(data, axis=dim)
    order = np.flip(np.argsort(flipped, axis=dim, kind="stable"), axis=dim)
    return data.shape[dim] - 1 - order


def sort(input, dim=None, descending=False, stable=False, *, axis=None):
    """(values, indices) of input sorted along dim; the gradient flows through the values
    back to where each came from (a gather). Ties keep their order (stable) either way.

    >>> import tinygrad_ops as tg
    >>> values, indices = sort(tg.Tensor([3.0, 1.0, 2.0]))
    >>> values.numpy(), indices.numpy()
    (array([1., 2., 3.], dtype=float32), array([1, 2, 0]))
    """
    x = _tensor(input, "sort")
    if x.ndim == 0:  # one element: itself, at index 0
        values, indices = sort(x.reshape((1,)), descending=descending)
        return ValuesIndices(values.reshape(()), new_tensor(indices.data.reshape(())))
    dim = normalize_axis(pick_dim(dim, axis, "sort", default=-1), x.ndim, "sort", "dim")
    values_read(x, "sort: the order of the values")
    order = _stable_order(x.data, dim, descending)
    return ValuesIndices(Gather.apply(x, dim=dim, index=order), new_tensor(order))


def argsort(input, dim=None, descending=False, stable=False, *, axis=None):
    """The indices that sort input along dim (sort's second result).

    >>> import tinygrad_ops as tg
    >>> argsort(tg.Tensor([3.0, 1.0, 2.0]), descending=True).numpy()
    array([0, 2, 1])
    """
    return sort(input, dim, descending, stable, axis=axis).indices


def topk(input, k, dim=None, largest=True, sorted=True, *, axis=None):
    """(values, indices) of the k largest (or smallest) elements along dim, largest first
    (smallest first with largest=False); the gradient flows through the values.

    >>> import tinygrad_ops as tg
    >>> topk(tg.Tensor([1.0, 5.0, 3.0, 4.0]), 2).values.numpy()
    array([5., 4.], dtype=float32)
    """
    x = _tensor(input, "topk")
    if x.ndim == 0:
        values, indices = topk(x.reshape((1,)), k, largest=largest)
        return ValuesIndices(values.reshape(()), new_tensor(indices.data.reshape(())))
    dim = normalize_axis(pick_dim(dim, axis, "topk", default=-1), x.ndim, "topk", "dim")
    size = x.shape[dim]
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= k <= size:
        raise ArgumentError(f"topk: k must be an int from 0 to {size} (the dim's size), got {k!r}")
    values_read(x, "topk: the order of the values")
    order = _stable_order(x.data, dim, descending=largest)
    order = np.take(order, np.arange(k), axis=dim)
    return ValuesIndices(Gather.apply(x, dim=dim, index=order), new_tensor(order))


def nonzero(input, as_tuple=False):
    """The indices of the nonzero elements, int64 of shape (count, ndim), row-major order (no
    gradient); with as_tuple=True one 1-d index tensor per dim (as numpy's nonzero).

    >>> import tinygrad_ops as tg
    >>> nonzero(tg.Tensor([[0.0, 1.0], [2.0, 0.0]])).numpy()
    array([[0, 1],
           [1, 0]])
    """
    data = _tensor(input, "nonzero").data
    values_read(data, "nonzero: where the values are nonzero")
    if as_tuple:
        return tuple(
            new_tensor(index.astype(np.int64)) for index in np.nonzero(np.atleast_1d(data))
        )
    return new_tensor(np.argwhere(data).astype(np.int64))
