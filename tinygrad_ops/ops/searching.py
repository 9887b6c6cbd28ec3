"""`searchsorted` and `unique`, as PyTorch's: positions and distinct values read from the
numbers (outside the tape: neither has a gradient, as in PyTorch).
"""

import numpy as np

from .base import is_tensor, new_tensor, values_read


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    """The index at which each value would be inserted into sorted_sequence to keep it
    sorted (the first such place; the last with right=True or side="right"), as
    torch.searchsorted: a 1-d sequence serves every value, an N-d one is searched row by
    row (its leading dims match the values'). int64 (int32 with out_int32).

    >>> import tinygrad_ops as tg
    >>> tg.searchsorted(tg.tensor([1, 3, 5, 7]), tg.tensor([3, 6])).tolist()
    [1, 3]
    """
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise RuntimeError("searchsorted: side='left' and right=True contradict each other")
        right = side == "right"
    sequence = _array(sorted_sequence, "searchsorted", "sorted_sequence")
    scalar = not is_tensor(values) and np.ndim(values) == 0
    targets = np.asarray(values.data if is_tensor(values) else values)
    if sorter is not None:
        order = _array(sorter, "searchsorted", "sorter").astype(np.int64)
        if order.shape != sequence.shape:
            raise RuntimeError(
                f"searchsorted: sorter {order.shape} must have the shape of sorted_sequence "
                f"{sequence.shape}"
            )
        sequence = np.take_along_axis(sequence, order, -1)
    side_name = "right" if right else "left"
    if sequence.ndim == 1:
        found = np.searchsorted(sequence, targets, side=side_name)
    else:
        if scalar or targets.shape[:-1] != sequence.shape[:-1]:
            raise RuntimeError(
                f"searchsorted: the leading dims of sorted_sequence {sequence.shape} and "
                f"values {targets.shape} must match"
            )
        rows = sequence.reshape(-1, sequence.shape[-1])
        wanted = targets.reshape(-1, targets.shape[-1])
        found = np.stack(
            [np.searchsorted(row, want, side=side_name) for row, want in zip(rows, wanted)]
        ).reshape(targets.shape)
    return new_tensor(np.asarray(found, dtype=np.int32 if out_int32 else np.int64))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of input (sorted; or the distinct slices along `dim`), as
    torch.unique: with return_inverse also where each element went, with return_counts how
    often each occurs.

    >>> import tinygrad_ops as tg
    >>> values, counts = tg.unique(tg.tensor([3, 1, 3, 2]), return_counts=True)
    >>> values.tolist(), counts.tolist()
    ([1, 2, 3], [1, 1, 2])
    """
    data = _array(input, "unique", "input")
    if dim is not None:
        dim = int(dim) % max(data.ndim, 1)
    distinct, inverse, counts = np.unique(data, return_inverse=True, return_counts=True, axis=dim)
    if dim is None:
        inverse = inverse.reshape(data.shape)
    results = [new_tensor(distinct)]
    if return_inverse:
        results.append(new_tensor(inverse.astype(np.int64)))
    if return_counts:
        results.append(new_tensor(counts.astype(np.int64)))
    return results[0] if len(results) == 1 else tuple(results)


def _array(value, op_name, name):
    if is_tensor(value):
        values_read(value, op_name)
        return value.data
    if isinstance(value, (np.ndarray, list, tuple, int, float)):
        return np.asarray(value)
    raise TypeError(f"{op_name}: {name} must be a Tensor, got {type(value).__name__}")
