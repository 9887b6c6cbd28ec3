"""More shape ops, as PyTorch's: pad, split, chunk, flip, roll, tril, triu, repeat,
repeat_interleave, diagonal, unfold, meshgrid, movedim.

Each is composed of primitives (slicing and integer-array indexing `GetItem`, `Pad`,
`Reshape`, `Transpose`, `BroadcastTo`, `Where`, `SlidingWindows`), so its backward is
theirs: whatever an op reads from x, its gradient adds back there (a slice or an index
array, repeats adding up; a broadcast sums back). The first line of each docstring gives
the forward rule and the backward that follows from it.
"""

import itertools

import numpy as np

from .base import is_tensor, new_tensor, values_read
from .checks import ArgumentError, ShapeError, UnsupportedError, normalize_axis
from .indexing import scatter
from .shape import Diagonal
from .windows import Pad, SlidingWindows

PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _tensor(value, op_name):
    if is_tensor(value):
        return value
    if isinstance(value, (np.ndarray, list, tuple, int, float)):
        return new_tensor(np.asarray(value))
    raise TypeError(f"{op_name}: input must be a Tensor, got {type(value).__name__}")


def _axis(dim, ndim, op_name, what="dim"):
    return normalize_axis(dim, ndim, op_name, what)


def _along(dim, index):
    """An index that applies `index` to dim `dim` and takes everything before it."""
    return (slice(None),) * dim + (index,)


def _padded_positions(size, before, after, mode):
    """Which element of a dim of `size` each padded position reads (reflect, replicate,
    circular). reflect mirrors without repeating the edge: [c b | a b c d | c b]. A negative
    width crops."""
    positions = np.arange(-before, size + after)
    if mode == "replicate":
        return np.clip(positions, 0, size - 1)
    if mode == "circular":  # PyTorch crops the negative widths first, then wraps around
        start, stop = max(-before, 0), size - max(-after, 0)
        return start + np.arange(-max(before, 0), stop - start + max(after, 0)) % (stop - start)
    period = 2 * (size - 1)
    positions = np.abs(positions) % period if period else np.zeros_like(positions)
    return np.where(positions >= size, period - positions, positions)


def _check_pad(x, pad, mode):
    if mode not in PAD_MODES:
        raise UnsupportedError(f"pad: mode must be one of {', '.join(PAD_MODES)}, got {mode!r}")
    pad = tuple(pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim or not all(isinstance(p, int) for p in pad):
        raise ArgumentError(
            f"pad: pad must be pairs of ints (left, right) from the last dim backwards, at most "
            f"one pair per dim of the {x.ndim}-d input, got {pad!r}"
        )
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]
    widths = [(0, 0)] * (x.ndim - len(pairs)) + pairs[::-1]  # first dim first
    for size, (before, after) in zip(x.shape, widths):
        if mode != "constant" and size + before + after < 0:
            raise ArgumentError(f"pad: the negative widths {pad!r} crop more than the dim ({size})")
        if mode == "reflect" and max(before, after) >= max(size, 1) and (before or after):
            raise ArgumentError(
                f"pad: reflect padding ({before}, {after}) must be smaller than the dim ({size})"
            )
        if mode in ("replicate", "circular") and size == 0 and (before or after):
            raise ArgumentError(f"pad: {mode} padding of an empty dim has nothing to repeat")
        kept = size + min(before, 0) + min(after, 0)  # circular wraps what the crop kept
        if mode == "circular" and max(before, after) > kept:
            raise ArgumentError(
                f"pad: circular padding ({before}, {after}) exceeds the (cropped) dim ({kept})"
            )
    return widths


def pad(input, pad, mode="constant", value=0.0):
    """PyTorch's F.pad: pad = (left, right) for the last dim, then the one before, ...;
    constant fills `value` (negative widths crop), reflect/replicate/circular read x again;
    dx = g's middle (constant) or g added back where each padded element was read.

    >>> import tinygrad_ops as tg
    >>> pad(tg.Tensor([1.0, 2.0, 3.0]), (2, 1), mode="reflect").numpy()
    array([3., 2., 1., 2., 3., 2.], dtype=float32)
    """
    x = _tensor(input, "pad")
    widths = _check_pad(x, pad, mode)
    if mode == "constant":
        crop = tuple(slice(-min(b, 0), size + min(a, 0)) for size, (b, a) in zip(x.shape, widths))
        if any(min(before, after) < 0 for before, after in widths):
            x = x[crop]
        widths = tuple((max(before, 0), max(after, 0)) for before, after in widths)
        if not any(before or after for before, after in widths):
            return x
        return Pad.apply(x, widths=widths, value=value)
    for dim, (before, after) in enumerate(widths):
        if before or after:
            x = x[_along(dim, _padded_positions(x.shape[dim], before, after, mode))]
    return x


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of split_size along dim (the last may be smaller), or of the given sizes;
    each piece is a slice, so its gradient fills that slice of dx.

    >>> import tinygrad_ops as tg
    >>> [piece.shape for piece in split(tg.zeros(5, 2), 2)]
    [(2, 2), (2, 2), (1, 2)]
    """
    x = _tensor(tensor, "split")
    dim = _axis(dim, x.ndim, "split")
    size = x.shape[dim]
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step < 1 and size:
            raise ArgumentError(f"split: split_size must be positive, got {step}")
        sizes = [min(step, size - start) for start in range(0, size, step)] if size else [0]
    else:
        sizes = [int(part) for part in split_size_or_sections]
        if sum(sizes) != size or min(sizes, default=0) < 0:
            raise ArgumentError(
                f"split: sections {sizes} must be non-negative and add up to the dim's size {size}"
            )
    bounds = np.cumsum([0, *sizes]).tolist()
    return tuple(x[_along(dim, slice(a, b))] for a, b in itertools.pairwise(bounds))


def chunk(input, chunks, dim=0):
    """split into pieces of ceil(size / chunks) (PyTorch's rule: maybe fewer than chunks).

    >>> import tinygrad_ops as tg
    >>> [piece.shape for piece in chunk(tg.zeros(5), 3)]
    [(2,), (2,), (1,)]
    """
    x = _tensor(input, "chunk")
    if not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise ArgumentError(f"chunk: chunks must be a positive int, got {chunks!r}")
    size = x.shape[_axis(dim, x.ndim, "chunk")]
    return split(x, max(1, -(-size // chunks)), dim)


def _dims(dims, ndim, op_name):
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    normalized = tuple(_axis(dim, ndim, op_name) for dim in dims)
    if len(set(normalized)) != len(normalized):
        raise ArgumentError(f"{op_name}: dims {dims} repeat a dim")
    return normalized


def flip(input, dims):
    """out = x reversed along dims;  dx = g reversed along the same dims.

    >>> import tinygrad_ops as tg
    >>> flip(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]), 1).numpy()
    array([[2., 1.],
           [4., 3.]], dtype=float32)
    """
    x = _tensor(input, "flip")
    dims = _dims(dims, x.ndim, "flip")
    return x[tuple(slice(None, None, -1) if d in dims else slice(None) for d in range(x.ndim))]


def roll(input, shifts, dims=None):
    """out[(i + shift) mod n] = x[i] along each dim (flattened when dims is None);
    dx = g rolled back by -shift.

    >>> import tinygrad_ops as tg
    >>> roll(tg.Tensor([1.0, 2.0, 3.0]), 1).numpy()
    array([3., 1., 2.], dtype=float32)
    """
    x = _tensor(input, "roll")
    if dims is None:
        if isinstance(shifts, (tuple, list)) and len(shifts) == 1:  # roll((1,)), as PyTorch
            shifts = shifts[0]
        if not isinstance(shifts, (int, np.integer)):
            raise ArgumentError(f"roll: without dims, shifts must be one int, got {shifts!r}")
        return roll(x.reshape(-1), shifts, 0).reshape(x.shape)
    shifts = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if len(shifts) != len(dims):
        raise ArgumentError(f"roll: shifts {shifts} and dims {dims} must have the same length")
    for shift, dim in zip(shifts, dims):
        dim = _axis(dim, x.ndim, "roll")
        size = x.shape[dim]
        if size and shift % size:
            x = x[_along(dim, (np.arange(size) - shift) % size)]
    return x


def _triangle(x, diagonal, keep_lower, op_name):
    from .elementwise import Where

    x = _tensor(x, op_name)
    if x.ndim < 2:
        raise ShapeError(f"{op_name}: the input must have at least 2 dims, got shape {x.shape}")
    rows, columns = x.shape[-2:]
    offsets = np.arange(columns)[None, :] - np.arange(rows)[:, None]
    keep = offsets <= diagonal if keep_lower else offsets >= diagonal
    return Where.apply(keep, x, np.zeros((), dtype=x.dtype))


def tril(input, diagonal=0):
    """out = x on and below the diagonal (column - row <= diagonal), else 0;  dx = g there.

    >>> import tinygrad_ops as tg
    >>> tril(tg.ones(2, 2)).numpy()
    array([[1., 0.],
           [1., 1.]], dtype=float32)
    """
    return _triangle(input, diagonal, True, "tril")


def triu(input, diagonal=0):
    """out = x on and above the diagonal (column - row >= diagonal), else 0;  dx = g there.

    >>> import tinygrad_ops as tg
    >>> triu(tg.ones(2, 2), 1).numpy()
    array([[0., 1.],
           [0., 0.]], dtype=float32)
    """
    return _triangle(input, diagonal, False, "triu")


def repeat(input, *sizes):
    """PyTorch's Tensor.repeat (numpy's tile): x tiled sizes[i] times along dim i (sizes may
    add leading dims);  dx = g summed over the copies (a broadcast, undone).

    >>> import tinygrad_ops as tg
    >>> repeat(tg.Tensor([1.0, 2.0]), 2, 2).numpy()
    array([[1., 2., 1., 2.],
           [1., 2., 1., 2.]], dtype=float32)
    """
    x = _tensor(input, "repeat")
    sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    if len(sizes) < x.ndim or not all(isinstance(s, (int, np.integer)) and s >= 0 for s in sizes):
        raise ArgumentError(
            f"repeat: give one non-negative int per dim (at least {x.ndim}), got {sizes!r}"
        )
    shape = (1,) * (len(sizes) - x.ndim) + x.shape
    # (a, b) -> (1, a, 1, b) -> (r1, a, r2, b) -> (r1 a, r2 b): the copies are the new dims.
    spread = tuple(size for dim in shape for size in (1, dim))
    tiled = tuple(size for pair in zip(sizes, shape) for size in pair)
    out_shape = tuple(count * dim for count, dim in zip(sizes, shape))
    return x.reshape(spread).broadcast_to(tiled).reshape(out_shape)


def repeat_interleave(input, repeats, dim=None):
    """Each element repeated `repeats` times in place along dim (flattened when dim is None);
    repeats an int or one count per element;  dx = g summed over each element's copies.

    >>> import tinygrad_ops as tg
    >>> repeat_interleave(tg.Tensor([1.0, 2.0]), 2).numpy()
    array([1., 1., 2., 2.], dtype=float32)
    """
    x = _tensor(input, "repeat_interleave")
    if dim is None:
        x, dim = x.reshape(-1), 0
    dim = _axis(dim, x.ndim, "repeat_interleave")
    counts = repeats.data if is_tensor(repeats) else np.asarray(repeats)
    values_read(counts, "repeat_interleave: the repeats")
    size = x.shape[dim] if x.ndim else 1
    if counts.dtype.kind not in "iuf" or np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ArgumentError(
            f"repeat_interleave: repeats must be non-negative integers, got {repeats}"
        )
    if counts.ndim > 1 or (counts.ndim == 1 and counts.size not in (1, size)):
        raise ShapeError(
            f"repeat_interleave: repeats must be an int or one count per element ({size}), "
            f"got shape {counts.shape}"
        )
    return x[_along(dim, np.repeat(np.arange(size), np.broadcast_to(counts.astype(int), size)))]


def diagonal(input, offset=0, dim1=0, dim2=1):
    """out[..., k] = x[..., i, i + offset] over dims (dim1, dim2), which move to the end as
    one dim (PyTorch's layout);  dx = zeros with g on that diagonal. A view of x, as
    PyTorch's (`x.diagonal().fill_(0)` writes into x): the op `Diagonal` in ops/shape.py.

    >>> import tinygrad_ops as tg
    >>> diagonal(tg.Tensor([[1.0, 2.0], [3.0, 4.0]])).numpy()
    array([1., 4.], dtype=float32)
    """
    x = _tensor(input, "diagonal")
    first, second = _axis(dim1, x.ndim, "diagonal", "dim1"), _axis(dim2, x.ndim, "diagonal", "dim2")
    if first == second:
        raise ArgumentError(f"diagonal: dim1 and dim2 must differ, got {dim1} and {dim2}")
    return Diagonal.apply(x, offset=int(offset), dim1=first, dim2=second)


def diag(input, diagonal=0):
    """PyTorch's diag: of a matrix, its diagonal number `diagonal` (above the main one when
    positive), as `diagonal(x, diagonal)`; of a vector, the square matrix that holds it on
    that diagonal, zeros elsewhere;  dx = g's diagonal (of a vector), g on the diagonal and
    zeros elsewhere (of a matrix).

    >>> import tinygrad_ops as tg
    >>> diag(tg.Tensor([1.0, 2.0])).numpy()
    array([[1., 0.],
           [0., 2.]], dtype=float32)
    >>> diag(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]), 1).numpy()
    array([2.], dtype=float32)
    """
    x = _tensor(input, "diag")
    if not isinstance(diagonal, (int, np.integer)) or isinstance(diagonal, (bool, np.bool_)):
        raise TypeError(f"diag: diagonal must be an int, got {type(diagonal).__name__}")
    if x.ndim == 2:
        return x.diagonal(int(diagonal))
    if x.ndim != 1:
        raise ShapeError(f"diag: expects a 1-d or 2-d tensor, got shape {x.shape}")
    # The vector written into a flat zero matrix at the diagonal's positions (a scatter: an
    # x * eye product would spread a NaN or an inf of x over its row, and make -0.0s).
    length, offset = x.shape[0], int(diagonal)
    size = length + abs(offset)
    positions = np.arange(length)
    flat = (positions + max(-offset, 0)) * size + positions + max(offset, 0)
    zeros = new_tensor(np.zeros(size * size, dtype=x.dtype))
    return scatter(zeros, 0, new_tensor(flat), x).reshape(size, size)


def unfold(input, dimension, size, step):
    """PyTorch's Tensor.unfold: every window of `size` elements, `step` apart, along
    dimension, which becomes the window count, with a new last dim of size;
    dx = each window's g added back where it was read (SlidingWindows' rule).

    >>> import tinygrad_ops as tg
    >>> unfold(tg.Tensor([1.0, 2.0, 3.0, 4.0]), 0, 2, 2).numpy()
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    x = _tensor(input, "unfold")
    if x.ndim == 0:  # PyTorch: one window of `size` (0 or 1) elements, shape (size,)
        return unfold(x.reshape((1,)), 0, size, step).reshape((size,))
    dimension = _axis(dimension, x.ndim, "unfold", "dimension")
    if not (isinstance(size, (int, np.integer)) and 0 <= size <= x.shape[dimension]):
        raise ArgumentError(
            f"unfold: size must be an int from 0 to the dim's size {x.shape[dimension]}, "
            f"got {size!r}"
        )
    if not isinstance(step, (int, np.integer)) or step < 1:
        raise ArgumentError(f"unfold: step must be a positive int, got {step!r}")
    last = movedim(x, dimension, -1)
    windows = SlidingWindows.apply(last, kernel=(size,), stride=(step,), dilation=(1,))
    return movedim(windows, -2, dimension)


def meshgrid(*tensors, indexing="ij"):
    """Grids of 1-d tensors: out_k[i0, i1, ...] = t_k[i_k] (indexing "ij"; "xy" swaps the
    first two axes, as numpy);  dt_k = g_k summed over every other axis.

    >>> import tinygrad_ops as tg
    >>> [grid.shape for grid in meshgrid(tg.zeros(2), tg.zeros(3))]
    [(2, 3), (2, 3)]
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    tensors = [_tensor(tensor, "meshgrid") for tensor in tensors]
    if any(tensor.ndim > 1 for tensor in tensors):
        raise ShapeError("meshgrid: every input must be 0-d or 1-d")
    tensors = [tensor.reshape(-1) for tensor in tensors]
    swap = indexing == "xy" and len(tensors) >= 2
    order = [1, 0, *range(2, len(tensors))] if swap else list(range(len(tensors)))
    shape = tuple(tensors[k].shape[0] for k in order)
    grids = []
    for k, tensor in enumerate(tensors):
        position = order.index(k)
        axes_shape = [1] * len(tensors)
        axes_shape[position] = tensor.shape[0]
        grids.append(tensor.reshape(tuple(axes_shape)).broadcast_to(shape))
    return tuple(grids)


def movedim(input, source, destination):
    """out = x with dims `source` moved to positions `destination` (the others keep their
    order);  dx = g with the inverse permutation.

    >>> import tinygrad_ops as tg
    >>> movedim(tg.zeros(2, 3, 4), 0, -1).shape
    (3, 4, 2)
    """
    x = _tensor(input, "movedim")
    sources = _dims(source, x.ndim, "movedim")
    destinations = _dims(destination, x.ndim, "movedim")
    if len(sources) != len(destinations):
        raise ArgumentError(
            f"movedim: source {source} and destination {destination} must have the same length"
        )
    rest = iter(d for d in range(x.ndim) if d not in sources)
    placed = dict(zip(destinations, sources))
    order = tuple(placed[d] if d in placed else next(rest) for d in range(x.ndim))
    return x.transpose(order) if order != tuple(range(x.ndim)) else x


moveaxis = movedim  # numpy's name, which PyTorch also accepts
