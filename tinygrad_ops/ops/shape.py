"""Shape primitives: they move elements around, so their backward moves gradients back."""

import numpy as np

from .base import Op, is_tensor
from .checks import ArgumentError, ShapeError, normalize_axis, pure
from .dtypes import promote
from .elementwise import where
from .jacobian import Dense


class Reshape(Op):
    """out = a viewed with a new shape;  da = g reshaped to a's shape"""

    __slots__ = ("input_shape",)
    is_view = True

    def forward(self, a, shape):
        self.input_shape = a.shape
        try:
            return a.reshape(shape)
        except ValueError:
            raise ShapeError(
                f"reshape: cannot reshape a tensor of shape {a.shape} ({a.size} elements) "
                f"into shape {tuple(shape)}"
            ) from None

    def backward(self, grad_output):
        return (grad_output.reshape(self.input_shape),)


class Transpose(Op):
    """out = a with its axes permuted;  da = g with the inverse permutation"""

    __slots__ = ("inverse",)
    is_view = True

    def forward(self, a, axes):
        axes = tuple(normalize_axis(axis, a.ndim, "transpose") for axis in axes)
        if sorted(axes) != list(range(a.ndim)):
            raise ShapeError(
                f"transpose: axes {tuple(axes)} are not a permutation of the {a.ndim} axes "
                f"of a tensor of shape {a.shape}"
            )
        self.inverse = tuple(np.argsort(axes))
        return a.transpose(axes)

    def backward(self, grad_output):
        return (grad_output.transpose(self.inverse),)


class BroadcastTo(Op):
    """out = a broadcast to a shape;  da = g summed over the broadcast dims (by the engine)"""

    __slots__ = ()
    is_view = True

    def forward(self, a, shape):
        try:
            return np.broadcast_to(a, shape)
        except ValueError:
            raise ShapeError(
                f"broadcast_to: cannot broadcast shape {a.shape} to shape {tuple(shape)}"
            ) from None

    def backward(self, grad_output):
        return (grad_output,)


def expanded_shape(shape, axis):
    """`shape` with a new dim of size 1 at `axis` (one of len(shape) + 1 positions).

    >>> expanded_shape((2, 3), -1)
    (2, 3, 1)
    """
    position = normalize_axis(axis, len(shape) + 1, "expand_dims")
    return shape[:position] + (1,) + shape[position:]


def squeezed_shape(shape, axis=None):
    """`shape` without its size-1 dims (all of them, or those named by `axis`, an int or a
    tuple). A named dim whose size is not 1 stays, as in PyTorch.

    >>> squeezed_shape((2, 1, 3), None), squeezed_shape((2, 1, 3), 0), squeezed_shape((1,), -1)
    ((2, 3), (2, 1, 3), ())
    """
    if axis is None:
        return tuple(size for size in shape if size != 1)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    named = {normalize_axis(value, len(shape), "squeeze") for value in axes}
    return tuple(size for index, size in enumerate(shape) if size != 1 or index not in named)


@pure
def normalize_index(index, shape=None):
    """Turn Tensors, lists and tuples inside an index into numpy arrays (as numpy and PyTorch
    read `x[(0, 1), :]` and `x[[0, 1]]`); say if it is basic indexing.

    Basic indexing (ints, slices, None, Ellipsis) never selects an element twice, so its
    backward can assign; integer/boolean arrays may repeat elements and need a scatter-add.
    Given the indexed array's `shape`, an index that mixes arrays with ints or bools is
    rewritten to put the array dims where PyTorch puts them (`pytorch_placement`).
    """
    items = index if isinstance(index, tuple) else (index,)
    normalized = []
    basic = True
    for item in items:
        if is_tensor(item):
            item = item.data
        elif isinstance(item, (list, tuple)):  # a sequence inside an index: an index array
            item = np.asarray([value.data if is_tensor(value) else value for value in item])
        if isinstance(item, np.ndarray):
            basic = False
            if item.dtype.kind not in "iub":
                raise IndexError(
                    f"index arrays must be integer or boolean, got dtype {item.dtype}; "
                    "build them from ints or with dtype=np.int64"
                )
        elif not (
            item is None
            or item is Ellipsis
            or isinstance(item, (slice, int, np.integer, bool, np.bool_))
        ):
            raise IndexError(f"unsupported index {item!r} of type {type(item).__name__}")
        normalized.append(item)
    if not basic and shape is not None:
        placed = pytorch_placement(normalized, shape)
        if placed is not None:
            return placed, False
    result = tuple(normalized) if isinstance(index, tuple) else normalized[0]
    return result, basic


def _is_int(item):
    return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))


def _is_bool_scalar(item):
    return isinstance(item, (bool, np.bool_)) or (
        isinstance(item, np.ndarray) and item.ndim == 0 and item.dtype == bool
    )


def _dims_consumed(item):
    if item is None or _is_bool_scalar(item):
        return 0
    if isinstance(item, np.ndarray) and item.dtype == bool:
        return item.ndim
    return 1


def pytorch_placement(items, shape):
    """The index `items` (normalized) rewritten as integer arrays, one per dim of `shape`, that
    give PyTorch's result; None where numpy's reading already is PyTorch's.

    The two differ on where the dims of the index arrays go. numpy counts ints (and bools)
    as index arrays too, so in `x[0, :, idx]` the arrays are not adjacent and their dims go
    first: shape (len(idx), 3) for x of shape (2, 3, 4). PyTorch selects with the ints (and
    unsqueezes for the bools) first; the arrays left, if adjacent, keep their place: shape
    (3, len(idx)). The rewrite builds an index array for every dim (an arange for a slice),
    shaped to broadcast to PyTorch's result, so that one numpy index gives it.

    >>> x = np.arange(24).reshape(2, 3, 4)
    >>> x[pytorch_placement([0, slice(None), np.array([0, 2])], x.shape)].tolist()
    [[0, 2], [4, 6], [8, 10]]
    """
    arrays = [item for item in items if isinstance(item, np.ndarray) and not _is_bool_scalar(item)]
    if not arrays or not any(_is_int(item) or _is_bool_scalar(item) for item in items):
        return None
    ellipses = sum(item is Ellipsis for item in items)
    named = sum(_dims_consumed(item) for item in items if item is not Ellipsis)
    if ellipses > 1 or named > len(shape):
        return None  # numpy's own IndexError says what is wrong
    expanded = []
    for item in items:
        expanded.extend([slice(None)] * (len(shape) - named) if item is Ellipsis else [item])
    if not ellipses:
        expanded.extend([slice(None)] * (len(shape) - named))
    return _placed_arrays(expanded, shape)


def _placed_arrays(expanded, shape):
    """`pytorch_placement` once the Ellipsis is expanded: one entry per dim consumed."""
    per_dim = []  # per input dim: an int, or (kind, value, slot in `kept`)
    kept = []  # the items PyTorch keeps after selecting with the ints: each gives output dims
    axis = 0
    for item in expanded:
        if _is_int(item):
            per_dim.append(item)
            axis += 1
        elif item is None:
            kept.append(("new", None))
        elif _is_bool_scalar(item):
            # PyTorch: a new dim of size 1, indexed by [0] (True) or [] (False), an index array
            per_dim.append(("virtual", np.zeros(1 if bool(item) else 0, dtype=np.int64), len(kept)))
            kept.append(("array", None))
        elif isinstance(item, slice):
            per_dim.append(("slice", np.arange(shape[axis])[item], len(kept)))
            kept.append(("slice", None))
            axis += 1
        else:
            if item.dtype == bool:
                if item.shape != tuple(shape[axis : axis + item.ndim]):
                    raise IndexError(
                        f"the boolean index of shape {item.shape} does not match the indexed "
                        f"dims of shape {tuple(shape[axis : axis + item.ndim])}"
                    )
                columns = np.nonzero(item)
            else:
                columns = (item,)
            for column in columns:
                per_dim.append(("array", column, len(kept)))
            kept.append(("array", None))
            axis += len(columns)
    shapes = [entry[1].shape for entry in per_dim if type(entry) is tuple and entry[0] != "slice"]
    try:
        block = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(
            f"shape mismatch: the index arrays of shapes {shapes} cannot be broadcast together"
        ) from None
    slots = [slot for slot, (kind, _) in enumerate(kept) if kind == "array"]
    adjacent = slots == list(range(slots[0], slots[-1] + 1))
    # the output dims: adjacent arrays give one block in their place, others a block first
    starts, position = [], 0 if adjacent else len(block)
    for slot, (kind, _) in enumerate(kept):
        if kind != "array":
            starts.append(position)
            position += 1
        elif not adjacent:
            starts.append(0)
        else:
            starts.append(starts[-1] if slot != slots[0] else position)
            position += len(block) if slot == slots[0] else 0
    ndim = position
    return _broadcast_index(per_dim, kept, starts, block, ndim)


def _broadcast_index(per_dim, kept, starts, block, ndim):
    index, empty = [], False
    for entry in per_dim:
        if type(entry) is not tuple:
            index.append(entry)
            continue
        kind, values, slot = entry
        if kind == "virtual":  # a bool's new dim: no input dim, only its size in the block
            empty = empty or values.size == 0
            continue
        start = starts[slot]
        if kind == "slice":
            sizes = [1] * ndim
            sizes[start] = len(values)
        else:
            sizes = [1] * start + [1] * (len(block) - values.ndim) + list(values.shape)
            sizes += [1] * (ndim - len(sizes))
        index.append(values.reshape(sizes))
    if empty:  # a False index: the block's last dim is empty; one array carries that
        first = next(i for i, item in enumerate(index) if isinstance(item, np.ndarray))
        axis = starts[next(slot for slot, (kind, _) in enumerate(kept) if kind == "array")]
        index[first] = np.take(index[first], [], axis=axis + len(block) - 1)
    return tuple(index)


@pure
def _single_element_view(index):
    """The index of one element, written so that numpy gives a 0-d view, not a scalar copy
    (`x[0]` of a 1-d x is a view in PyTorch: `x[0].add_(1)` writes into x). A trailing
    Ellipsis does it; one that was there already stands for no dims."""
    items = index if isinstance(index, tuple) else (index,)
    return tuple(item for item in items if item is not Ellipsis) + (Ellipsis,)


class GetItem(Op):
    """out = a[index];  da = zeros with g added at index (repeated indices add up)"""

    __slots__ = ("index", "basic", "input_shape")
    is_view = True

    def forward(self, a, index):
        self.index, self.basic = normalize_index(index, a.shape)
        self.input_shape = a.shape
        try:
            out = a[self.index]
        except IndexError as error:
            raise IndexError(f"getitem: {error} (tensor shape {a.shape})") from None
        if self.basic and type(out) is not np.ndarray:  # one element: a 0-d view of it
            out = a[_single_element_view(self.index)]
        return out

    def backward(self, grad_output):
        return (scatter_add(grad_output, self.index, self.input_shape, self.basic),)

    def jacobian_kind(self, index):
        """'dense' for a slice of the last axis only (`x[..., a:b]`, `x[:, a:b]` of a 2-d x,
        `x.chunk(3, dim=-1)`: the gates of a GRU or an LSTM cut from one product), which
        keeps the rows apart; other indexing is walked, not scanned (docs/scan.md,
        "Adding an op to the chains")."""
        return "dense" if self.basic and last_axis_slice(self.index, self.input_shape) else None

    def jacobian(self, index):
        """J: the (d_out, d_in) matrix that picks the sliced columns, the same for every row
        (g_input = g_output J puts each gradient back in its column)."""
        width = self.input_shape[-1]
        columns = np.arange(width)[self.index[-1]]
        selection = np.zeros((len(columns), width), dtype=self.output_dtype)
        selection[np.arange(len(columns)), columns] = 1
        return Dense(selection)

    def batched_options(self, steps):
        """The options of a node that stands for `steps` steps stacked on a leading axis
        (the scan schedulers'): the input's shape gains that axis, and the slice is of the
        last axis whatever the count of axes before it (`x[:, a:b]` becomes `x[..., a:b]`)."""
        options = {"input_shape": (steps,) + tuple(self.input_shape)}
        column_slice = last_axis_slice(self.index, self.input_shape) if self.basic else None
        if column_slice is not None:
            options["index"] = (Ellipsis, column_slice)
        return options


def last_axis_slice(index, shape):
    """The slice of `index` when it slices the last axis of an array of `shape` and takes
    everything of the others (`x[..., a:b]`, `x[:, a:b]` of a 2-d x, `x[a:b]` of a 1-d
    x), else None.

    >>> last_axis_slice((slice(None), slice(2, 5)), (4, 8))
    slice(2, 5, None)
    >>> last_axis_slice((slice(1, None), slice(2, 5)), (4, 8)) is None  # takes some rows
    True
    """
    items = index if type(index) is tuple else (index,)
    if not items or type(items[-1]) is not slice or not shape:
        return None
    leading = items[:-1]
    if len(leading) == 1 and leading[0] is Ellipsis:
        return items[-1]
    if len(items) != len(shape):
        return None
    if all(type(item) is slice and item == slice(None) for item in leading):
        return items[-1]
    return None


class SetItem(Op):
    """out = a with out[index] = value (value broadcast to a[index]'s shape);
    da = g with 0 at index, dvalue = g[index] (summed back to value's shape by the walk)

    The op behind `x[index] = value` when it is recorded (x or value requires grad), run
    in place on x as PyTorch's. An index that repeats an element keeps the last value
    there (numpy's rule); every occurrence's value gets that element's gradient.
    """

    __slots__ = ("index", "written")

    def forward(self, a, value, index):
        self.index = normalize_index(index, a.shape)[0]
        out = a.copy()
        try:
            out[self.index] = value
        except (IndexError, ValueError) as error:
            raise type(error)(
                f"setitem: {error} (tensor shape {a.shape}, value shape {np.shape(value)})"
            ) from None
        if self.needs_input_grad[0]:
            self.written = np.zeros(a.shape, dtype=bool)
            self.written[self.index] = True
        return out

    def backward(self, grad_output):
        needs_a, needs_value = self.needs_input_grad
        grad_a = where(self.written, 0.0, grad_output) if needs_a else None
        return grad_a, (grad_output[self.index] if needs_value else None)


class ScatterAdd(Op):
    """out = zeros(shape) with a added at index;  da = g[index]  (the backward of getitem)"""

    __slots__ = ("index",)

    def forward(self, a, index, shape, basic):
        self.index = index
        return scatter_add_array(a, index, shape, basic)

    def backward(self, grad_output):
        return (grad_output[self.index],)


def scatter_add(grad, index, shape, basic):
    """A zero array of `shape` with `grad` added at `index` (repeated indices add up), for a
    backward rule: the numpy array, or the recorded `ScatterAdd` when `grad` is a Tensor
    (create_graph, ops/dual.py)."""
    if is_tensor(grad):
        return ScatterAdd.apply(grad, index=index, shape=shape, basic=basic)
    return scatter_add_array(grad, index, shape, basic)


def scatter_add_array(grad, index, shape, basic):
    out = np.zeros(shape, dtype=grad.dtype)
    if basic:
        out[index] = grad  # basic indexing never repeats an element
    else:
        np.add.at(out, index, grad)
    return out


class Diagonal(Op):
    """out[..., k] = a[..., i + k, j + k] over dims (dim1, dim2), which move to the end as one
    dim (PyTorch's layout), i, j = max(-offset, 0), max(offset, 0);  da = zeros with g on
    that diagonal

    A view, as PyTorch's: `x.diagonal().add_(eps)` and `.fill_()` write into x (with x's
    version counter; numpy's own `diagonal` is a read-only view, so the strides are set here).
    """

    __slots__ = ("index", "input_shape")
    is_view = True

    def forward(self, a, offset, dim1, dim2):
        rest = [d for d in range(a.ndim) if d not in (dim1, dim2)]
        moved = a.transpose((*rest, dim1, dim2))
        rows, columns = moved.shape[-2:]
        first_row, first_column = max(-offset, 0), max(offset, 0)
        length = max(0, min(rows - first_row, columns - first_column))
        self.input_shape = a.shape
        # the same elements as an index of `a`, for the backward: one array per dim
        ndim = len(rest) + 1
        index = [None] * a.ndim
        for position, dim in enumerate(rest):
            index[dim] = np.arange(a.shape[dim]).reshape(
                [-1 if i == position else 1 for i in range(ndim)]
            )
        steps = np.arange(length).reshape((1,) * len(rest) + (length,))
        index[dim1], index[dim2] = steps + first_row, steps + first_column
        self.index = tuple(index)
        corner = moved[..., min(first_row, rows) :, min(first_column, columns) :]
        return np.lib.stride_tricks.as_strided(
            corner,
            shape=moved.shape[:-2] + (length,),
            strides=moved.strides[:-2] + (moved.strides[-2] + moved.strides[-1],),
        )

    def backward(self, grad_output):
        # the diagonal's elements are distinct: assigned, not added (basic=True)
        return (scatter_add(grad_output, self.index, self.input_shape, True),)


class Stack(Op):
    """out = the inputs stacked along a new axis;  d(input i) = g taken at i on that axis"""

    __slots__ = ("axis",)
    promotion = staticmethod(promote)

    def forward(self, *arrays, axis=0):
        if not arrays:
            raise ArgumentError("stack: needs at least one tensor")
        shapes = {np.shape(array) for array in arrays}
        if len(shapes) > 1:
            raise ShapeError(f"stack: all tensors must have the same shape, got {sorted(shapes)}")
        # The new axis may be any of ndim + 1 positions.
        self.axis = normalize_axis(axis, np.ndim(arrays[0]) + 1, "stack")
        return self.compute(*arrays, axis=axis)

    def compute(self, *arrays, axis=0):
        """The stack of arrays that passed forward's checks (a compiled program, whose guards
        hold the shapes fixed, replays this alone: the check of a tg.scan's 512 outputs
        cost a replay of nn.RNN's step about 1 ms)."""
        return np.stack(arrays, axis=self.axis)

    def backward(self, grad_output):
        prefix = (slice(None),) * self.axis
        return tuple(grad_output[prefix + (index,)] for index in range(len(self.inputs)))


class Concatenate(Op):
    """out = the inputs joined along an axis;  d(input i) = g's slice that input filled"""

    __slots__ = ("axis", "bounds")
    promotion = staticmethod(promote)

    def forward(self, *arrays, axis=0):
        if not arrays:
            raise ArgumentError("concatenate: needs at least one tensor")
        shapes = [np.shape(array) for array in arrays]
        if any(len(shape) == 0 for shape in shapes):
            raise ShapeError(f"concatenate: 0-d tensors cannot be joined (shapes {shapes})")
        self.axis = normalize_axis(axis, len(shapes[0]), "concatenate")
        try:
            out = np.concatenate(arrays, axis=self.axis)
        except ValueError:
            raise ShapeError(
                f"concatenate: shapes {shapes} do not match except along axis {axis}"
            ) from None
        sizes = [np.shape(array)[self.axis] for array in arrays]
        self.bounds = np.cumsum([0, *sizes]).tolist()
        return out

    def backward(self, grad_output):
        prefix = (slice(None),) * self.axis
        return tuple(
            grad_output[prefix + (slice(start, stop),)]
            for start, stop in zip(self.bounds[:-1], self.bounds[1:])
        )

    def jacobian_kind(self, index):
        """'dense' when joined along the last axis (the rows kept apart: a joint state
        [h | c] made of two, docs/scan.md "Adding an op to the chains"), else None."""
        return "dense" if self.axis == len(self.inputs[0].shape) - 1 else None

    def jacobian(self, index):
        """J through input `index`: the (d_out, d_in) matrix that puts its columns where
        they landed, the same for every row (g_input = g_output J takes them back)."""
        start, stop = self.bounds[index], self.bounds[index + 1]
        placement = np.zeros((self.bounds[-1], stop - start), dtype=self.output_dtype)
        placement[np.arange(start, stop), np.arange(stop - start)] = 1
        return Dense(placement)

    def batched_options(self, steps):
        """The options of a node that stands for `steps` steps stacked on a leading axis
        (the scan schedulers'): the axis moves one on."""
        return {"axis": self.axis + 1}
