"""`scatter_reduce`: src's values reduced into a copy of the input at the positions an index
names along a dim, as `torch.scatter_reduce` (sum, prod, mean, amax, amin; with or without
the input's own value at each position).

The gradient of each contributor is g times a weight that the forward pass knows: 1 for a
sum, 1 / count for a mean, the product of the other contributors for a product, and
1 / (number of ties) for the contributors equal to the extreme of amax/amin (PyTorch
shares g evenly among ties), 0 for the rest. `docs/ops.md` lists the rule.
"""

import numpy as np

from . import indexing
from .base import Op, is_tensor, new_tensor
from .checks import normalize_axis
from .indexing import along, as_index, check_index, gather_dispatch, leading_block, pad_to, pick_dim

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


class ScatterReduce(Op):
    """out[p] = reduce(a[p] if include_self, src[i] for every i with index[i] = p along dim)
    (sum, prod, mean, amax, amin; a[p] where nothing is scattered);  da = g w_a,
    dsrc = g gathered at index times w_src, each contributor's weight being 1 (sum),
    1/count (mean), the product of the others (prod), 1/ties at the extreme (amax, amin)"""

    __slots__ = ("dim", "index", "source_shape", "reduce", "self_weight", "source_weight")

    def forward(self, a, src, dim, index, reduce, include_self):
        self.dim, self.index, self.source_shape, self.reduce = dim, index, src.shape, reduce
        values = leading_block(src, index.shape).ravel()
        targets = np.ravel_multi_index(np.broadcast_arrays(*along(index, dim)), a.shape).ravel()
        base = a.ravel()
        count = np.bincount(targets, minlength=a.size)
        # The input's own value takes part where include_self, and wherever nothing lands.
        own = np.ones(a.size, bool) if include_self else count == 0
        combined = _reduced(base, own, values, targets, reduce, count)
        if any(self.needs_input_grad):
            self.self_weight, source_weight = _weights(
                base, own, values, targets, reduce, count, combined
            )
            self.self_weight = self.self_weight.reshape(a.shape)
            self.source_weight = source_weight.reshape(index.shape)
        return combined.reshape(a.shape)

    def backward(self, grad_output):
        if self.reduce == "prod" and is_tensor(grad_output):
            raise NotImplementedError(
                "scatter_reduce(reduce='prod'): a differentiable gradient (create_graph, for a "
                "second derivative) is not implemented; the gradient itself is: call backward "
                "without create_graph"
            )
        grad_input = grad_source = None
        if self.needs_input_grad[0]:
            grad_input = grad_output * self.self_weight
        if self.needs_input_grad[1]:
            picked = gather_dispatch(grad_output, self.dim, self.index) * self.source_weight
            grad_source = pad_to(picked, self.source_shape)
        return grad_input, grad_source


def _reduced(base, own, values, targets, reduce, count):
    """The reduction at every position of the flattened input (numpy's unbuffered `.at`
    ufuncs combine repeated targets)."""
    dtype = base.dtype
    if reduce in ("sum", "mean"):
        total = np.where(own, base, 0).astype(dtype)
        np.add.at(total, targets, values)
        if reduce == "sum":
            return total
        divisor = np.maximum(count + own, 1).astype(dtype)
        return total // divisor if dtype.kind in "iub" else total / divisor
    if reduce == "prod":
        product = np.where(own, base, 1).astype(dtype)
        np.multiply.at(product, targets, values)
        return product
    ufunc = np.maximum if reduce == "amax" else np.minimum
    extreme = np.where(own, base, _identity(dtype, reduce)).astype(dtype)
    ufunc.at(extreme, targets, values)
    return extreme


def _identity(dtype, reduce):
    """The value that amax (amin) never picks: -inf (+inf), or the integer type's bound."""
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce != "amax"
    bounds = np.iinfo(dtype)
    return bounds.min if reduce == "amax" else bounds.max


def _weights(base, own, values, targets, reduce, count, combined):
    """(the input's weight at every position, each src value's weight): d out / d contributor."""
    dtype = base.dtype
    if reduce == "sum":
        return own.astype(dtype), np.ones(values.shape, dtype)
    if reduce == "mean":
        reciprocal = 1.0 / np.maximum(count + own, 1).astype(dtype)
        return own * reciprocal, reciprocal[targets]
    if reduce == "prod":
        return _others_product(base, own, values, targets)
    # PyTorch counts the input among the ties wherever it equals the result, even where
    # include_self=False leaves it out (and then gives it no gradient): so do we.
    equal = base == combined
    source_hit = values == combined[targets]
    ties = equal + np.bincount(targets, weights=source_hit, minlength=base.size)
    ties = np.maximum(ties, 1).astype(dtype)
    return (own & equal) / ties, source_hit / ties[targets]


def _others_product(base, own, values, targets):
    """For every contributor, the product of the others at its position, exact where some
    are 0: the product of the nonzero ones, divided by the contributor unless it is the 0
    (it is then the product of the rest when it is the only 0; any other 0 gives 0)."""
    zeros = (own & (base == 0)).astype(np.int64)
    np.add.at(zeros, targets, values == 0)
    nonzero = np.where(own & (base != 0), base, 1).astype(base.dtype)
    np.multiply.at(nonzero, targets, np.where(values != 0, values, 1))

    def others(value, zero_count, product):
        with np.errstate(divide="ignore", invalid="ignore"):
            when_nonzero = np.where(zero_count == 0, product / np.where(value == 0, 1, value), 0)
        return np.where(value == 0, np.where(zero_count == 1, product, 0), when_nonzero)

    own_weight = np.where(own, others(base, zeros, nonzero), 0).astype(base.dtype)
    return own_weight, others(values, zeros[targets], nonzero[targets]).astype(base.dtype)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """A copy of input with src reduced in at index along dim, as `torch.scatter_reduce`:
    `reduce` is "sum", "prod", "mean", "amax" or "amin"; with include_self=False the input's
    own value is left out wherever something is scattered.

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([1.0, 2.0, 3.0])
    >>> scatter_reduce(x, 0, tg.tensor([0, 0, 2]), tg.Tensor([4.0, 5.0, 6.0]), "amax").tolist()
    [5.0, 2.0, 6.0]
    >>> scatter_reduce(x, 0, tg.tensor([0, 0]), tg.Tensor([4.0, 5.0]), "mean").tolist()
    [3.3333332538604736, 2.0, 3.0]
    """
    if reduce not in REDUCTIONS:
        raise RuntimeError(
            f"scatter_reduce: reduce argument must be either sum, prod, mean, amax or amin, "
            f"got {reduce!r}"
        )
    x = input if is_tensor(input) else new_tensor(np.asarray(input))
    if not is_tensor(src):
        raise TypeError(f"scatter_reduce: src must be a Tensor, got {type(src).__name__}")
    index = as_index(index, "scatter_reduce")
    if src.dtype != x.dtype:
        raise RuntimeError(
            f"scatter_reduce: src ({src.dtype}) must have the input's dtype ({x.dtype})"
        )
    scalar = x.ndim == 0
    if scalar:
        x, index, src = x.reshape((1,)), index.reshape(1), src.reshape((1,))
    if src.ndim != index.ndim:
        raise RuntimeError(
            f"scatter_reduce: src must have as many dims as index ({index.ndim}), got {src.shape}"
        )
    dim = normalize_axis(pick_dim(dim, None, "scatter_reduce"), x.ndim, "scatter_reduce", "dim")
    check_index("scatter_reduce", x.data, dim, index, src.data)
    out = ScatterReduce.apply(
        x, src, dim=dim, index=index, reduce=reduce, include_self=bool(include_self)
    )
    return out.reshape(()) if scalar else out


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of input with out[index[i][j]][j] = src[i][j] (dim 0; src may be a number, or
    pass value=), as ops/indexing.py's scatter; with PyTorch's `reduce=` "add" or
    "multiply", src is added into (multiplied into) the input instead, as scatter_reduce's
    "sum" ("prod") with include_self, repeated positions all counting, and its gradients.

    >>> import tinygrad_ops as tg
    >>> tg.scatter(tg.ones(3), 0, tg.tensor([0, 0, 2]), value=2.0, reduce="multiply").tolist()
    [4.0, 1.0, 2.0]
    """
    if reduce is None:
        return indexing.scatter(input, dim, index, src, value=value)
    if reduce not in ("add", "multiply"):
        raise RuntimeError(
            f"scatter: reduce argument must be either add or multiply, got {reduce!r}"
        )
    if (src is None) == (value is None):
        raise TypeError("scatter: give exactly one of src and value")
    x = input if is_tensor(input) else new_tensor(np.asarray(input))
    if src is None or not (is_tensor(src) or isinstance(src, (np.ndarray, list))):
        number = value if src is None else src
        src = new_tensor(np.full(np.shape(as_index(index, "scatter")), number, dtype=x.dtype))
    elif not is_tensor(src):
        src = new_tensor(np.asarray(src))
    reduction = "sum" if reduce == "add" else "prod"
    return scatter_reduce(x, dim, index, src, reduction, include_self=True)
