"""Products and differences composed of the primitives, as PyTorch's: `cross`, `kron`,
`cdist`, `addmm`, `diff`. Each is a few slices, products, sums or a norm, so its gradient
(and second derivative) is theirs.
"""

import numpy as np

from .base import is_tensor, new_tensor
from .checks import normalize_axis
from .elementwise import Fill
from .shape import Concatenate


def cross(input, other, dim=None):
    """out = a × b, the cross product of the 3-vectors along dim (broadcast), as
    torch.cross: (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0). Without dim, the first dim
    of size 3 (torch.cross's default; torch.linalg.cross takes -1).

    >>> import tinygrad_ops as tg
    >>> cross(tg.Tensor([1.0, 0.0, 0.0]), tg.Tensor([0.0, 1.0, 0.0])).tolist()
    [0.0, 0.0, 1.0]
    """
    a, b = _tensor(input, "cross", "input"), _tensor(other, "cross", "other")
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise RuntimeError(f"cross: shapes {a.shape} and {b.shape} do not broadcast") from None
    if dim is None:
        threes = [axis for axis, size in enumerate(shape) if size == 3]
        if not threes:
            raise RuntimeError(f"cross: no dimension of size 3 in input of shape {shape}")
        dim = threes[0]
    dim = normalize_axis(dim, len(shape), "cross", "dim")
    if shape[dim] != 3:
        raise RuntimeError(f"cross: dimension {dim} must have size 3, got shape {shape}")
    a, b = a.broadcast_to(shape), b.broadcast_to(shape)
    parts_a = [a.narrow(dim, index, 1) for index in range(3)]
    parts_b = [b.narrow(dim, index, 1) for index in range(3)]
    components = [
        parts_a[(index + 1) % 3] * parts_b[(index + 2) % 3]
        - parts_a[(index + 2) % 3] * parts_b[(index + 1) % 3]
        for index in range(3)
    ]
    return Concatenate.apply(*components, axis=dim)


def kron(input, other):
    """out = the Kronecker product: out[i·p + k, j·q + l] = a[i, j] b[k, l] (any number of
    dims, the tensor with fewer padded with leading dims of size one), as torch.kron.

    >>> import tinygrad_ops as tg
    >>> kron(tg.Tensor([[1.0, 2.0]]), tg.Tensor([[1.0], [10.0]])).tolist()
    [[1.0, 2.0], [10.0, 20.0]]
    """
    a, b = _tensor(input, "kron", "input"), _tensor(other, "kron", "other")
    dims = max(a.ndim, b.ndim)
    a_shape = (1,) * (dims - a.ndim) + a.shape
    b_shape = (1,) * (dims - b.ndim) + b.shape
    # a with a 1 after each dim, b with a 1 before each: their product holds a[i] b[k] at
    # (i, k), and merging each pair of dims gives the row i·p + k.
    spread_a = a.reshape(tuple(size for n in a_shape for size in (n, 1)))
    spread_b = b.reshape(tuple(size for n in b_shape for size in (1, n)))
    out = spread_a * spread_b
    return out.reshape(tuple(m * n for m, n in zip(a_shape, b_shape, strict=True)))


def cdist(x1, x2, p=2.0):
    """out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p, the p-norm distance of every
    row of x1 to every row of x2 (batch dims broadcast), as torch.cdist: the norm of the
    broadcast differences, so its gradient is VectorNorm's (0 where two rows coincide).

    >>> import tinygrad_ops as tg
    >>> cdist(tg.Tensor([[0.0, 0.0]]), tg.Tensor([[3.0, 4.0], [0.0, 1.0]])).tolist()
    [[5.0, 1.0]]
    """
    a, b = _tensor(x1, "cdist", "x1"), _tensor(x2, "cdist", "x2")
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-1]:
        raise RuntimeError(
            f"cdist: x1 and x2 must be (..., P, M) and (..., R, M) with the same M, got "
            f"{a.shape} and {b.shape}"
        )
    if p < 0:
        raise RuntimeError(f"cdist: p must be non-negative, got {p}")
    differences = a.unsqueeze(-2) - b.unsqueeze(-3)
    if p == 0:  # the number of differing coordinates: constant, its gradient 0 (as PyTorch)
        count = (differences != 0).astype(differences.dtype).sum(-1)
        return Fill.apply(differences, 0.0).sum(-1) + count
    return differences.norm(p=p, dim=-1)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """out = beta · input + alpha · (mat1 @ mat2), input broadcast to the product's shape,
    as torch.addmm (with beta = 0 the input's values, NaN included, are not used and its
    gradient is 0).

    >>> import tinygrad_ops as tg
    >>> addmm(tg.ones(2, 2), tg.eye(2), tg.eye(2), beta=2).tolist()
    [[3.0, 2.0], [2.0, 3.0]]
    """
    base = _tensor(input, "addmm", "input")
    first, second = _tensor(mat1, "addmm", "mat1"), _tensor(mat2, "addmm", "mat2")
    if first.ndim != 2 or second.ndim != 2 or first.shape[1] != second.shape[0]:
        raise RuntimeError(
            f"addmm: mat1 and mat2 must be matrices that multiply, got {first.shape} and "
            f"{second.shape}"
        )
    product = first @ second
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product + Fill.apply(base, 0.0)  # (zeros, and a zero gradient, as PyTorch)
    return product + (base if beta == 1 else base * beta)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """out = x[1:] - x[:-1] along dim, n times (booleans: x[1:] != x[:-1]), after
    `prepend` and `append` are joined on, as torch.diff.

    >>> import tinygrad_ops as tg
    >>> diff(tg.Tensor([1.0, 4.0, 9.0, 16.0]), n=2).tolist()
    [2.0, 2.0]
    """
    x = _tensor(input, "diff", "input")
    if x.ndim == 0:
        raise RuntimeError("diff: expected at least a 1-d tensor, got a 0-d one")
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise RuntimeError(f"diff: order n must be non-negative, got {n!r}")
    dim = normalize_axis(dim, x.ndim, "diff", "dim")
    pieces = [_tensor(value, "diff", name) for value, name in ((prepend, "prepend"),)
              if value is not None] + [x]  # fmt: skip
    pieces += [_tensor(append, "diff", "append")] if append is not None else []
    if len(pieces) > 1:
        x = Concatenate.apply(*pieces, axis=dim)
    for _ in range(n):
        if x.shape[dim] == 0:
            break
        later, earlier = x.narrow(dim, 1, x.shape[dim] - 1), x.narrow(dim, 0, x.shape[dim] - 1)
        x = later != earlier if x.dtype == np.bool_ else later - earlier
    return x


def _tensor(value, op_name, name):
    if is_tensor(value):
        return value
    if isinstance(value, (np.ndarray, list, tuple, int, float)):
        return new_tensor(np.asarray(value))
    raise TypeError(f"{op_name}: {name} must be a Tensor, got {type(value).__name__}")
