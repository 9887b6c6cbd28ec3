"""The losses (cross_entropy, mse_loss): fused primitives whose backward is derived by hand.

One node each, forward and backward formulas in the docstring, derived in
`docs/derivations.md` (`ops/dual.py` says how a rule serves both a plain backward and
create_graph, and how float16 is computed).
"""

import math

import numpy as np

from .activations import Softmax
from .base import Op
from .checks import DtypeError, ShapeError, check_float, pure
from .dual import compute_dtype, like_inputs, upcast
from .jacobian import side_kind
from .kernels import (
    RowBuffers,
    as_rows,
    exp_of_shifted,
    from_rows,
    reshaped,
    row_max,
    row_starts,
    row_sum,
)

# Integer dtypes and their unsigned twins (a view, not a conversion, of the target).
_UNSIGNED = {np.dtype(f"int{bits}"): np.dtype(f"uint{bits}") for bits in (8, 16, 32, 64)}


@pure
def unsigned_twin(dtype):
    """The unsigned integer dtype of `dtype`'s size (`dtype` itself if it has none)."""
    return _UNSIGNED.get(dtype, dtype)


def softmax_losses(shifted, positions, kept):
    """Per-sample cross-entropy of (N, C) logit rows minus their row maxima (`shifted`,
    overwritten): log(sum(exp(shifted))) - shifted[target], 0 where `kept` is False.
    `positions` are the targets' indices in the flattened rows. Returns (exponentials,
    their row sums (N,), the losses); `CrossEntropy.compute` calls it (and so do the lines
    of compute that a compiled replay writes in)."""
    picked = shifted.reshape(-1).take(positions)
    exponentials = exp_of_shifted(shifted, out=shifted)
    total = row_sum(exponentials).reshape(len(shifted))
    losses = np.log(total)
    losses -= picked
    if kept is not None:
        losses[~kept] = 0.0
    return exponentials, total, losses


def drop_ignored(flat_target, class_count, ignore_index):
    """(kept mask, target with ignored entries replaced by 0); an out-of-range target that is
    not ignore_index is an IndexError."""
    ignored = flat_target == ignore_index
    outside = ~ignored & ((flat_target < 0) | (flat_target >= class_count))
    if outside.any():
        raise IndexError(
            f"cross_entropy: target {flat_target[outside][0]} is out of bounds for "
            f"{class_count} classes (valid targets are 0 to {class_count - 1}, or "
            f"ignore_index={ignore_index})"
        )
    return ~ignored, np.where(ignored, 0, flat_target)


@pure
def class_layout(shape):
    """(C, N) for logits of `shape` ((C,), (N, C) or (N, C, d...)): the class count and
    the count of rows of the (N·d..., C) matrix the loss works on.

    >>> class_layout((8, 10, 3, 2))
    (10, 48)
    """
    if len(shape) == 1:
        return shape[0], 1
    return shape[1], math.prod(shape[:1] + shape[2:])


def check_class_dim(logits):
    if logits.ndim == 0:
        raise ValueError(
            "cross_entropy: logits must be (C,), (N, C) or (N, C, d...), got a 0-d tensor "
            "(a single score is not a class distribution)"
        )


class CrossEntropy(Op):
    """loss_i = log sum_c exp(z_ic) - z_i,t_i (log_softmax and the pick fused), reduced by
    mean/sum/none;  dz_ic = g_i (softmax(z_i)_c - [c == t_i]) (divided by N for the mean)

    A target equal to a negative ignore_index (PyTorch's default is -100) counts for nothing:
    its loss and gradient are 0 and the mean is over the other samples. It costs nothing
    when no target is out of [0, C): the bounds check finds it."""

    __slots__ = ("reduction", "target", "count", "class_count", "positions", "kept", "divisor")

    def forward(self, logits, target, reduction, ignore_index=-100):
        self.check(logits, np.asarray(target), reduction)
        return self.compute(logits, target, reduction, ignore_index)

    @staticmethod
    def check(logits, target, reduction):
        """The checks that depend only on shapes, dtypes and options (a compiled program,
        whose guards hold those fixed, makes them once, at capture, and replays `compute`)."""
        check_float("cross_entropy", logits, "logits")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(
                f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
            )
        if target.dtype.kind not in "iu":
            raise DtypeError(
                f"cross_entropy: target must hold integer class indices, got dtype "
                f"{target.dtype} (class probabilities are not supported)"
            )
        check_class_dim(logits)
        expected = logits.shape[:1] + logits.shape[2:] if logits.ndim > 1 else ()
        if target.shape != expected:
            raise ValueError(
                f"cross_entropy: logits of shape {logits.shape} (N, C, ...) need a target of "
                f"shape {expected}, got {target.shape}"
            )

    def compute(self, logits, target, reduction, ignore_index=-100):
        """The loss of arguments that passed `check`; the target's bounds, which depend on
        its values, are checked here."""
        target = np.asarray(target)
        class_count, count = class_layout(logits.shape)
        if logits.ndim == 1:  # a single sample of C logits with a 0-d target
            logits = logits.reshape(1, class_count)
        flat_target = target.reshape(-1)
        # One look checks both bounds: viewed as unsigned, a negative index is huge. (argmax
        # and one read: a quarter of np.maximum.reduce's time on the targets of a batch,
        # which is mostly the reduction's set-up; as fast up to about 10^5 targets.)
        unsigned = flat_target.view(unsigned_twin(flat_target.dtype))
        kept = None
        if flat_target.size and unsigned[unsigned.argmax()] >= class_count:
            kept, flat_target = drop_ignored(flat_target, class_count, ignore_index)
        self.kept = kept
        self.reduction = reduction
        self.target = flat_target
        self.class_count = class_count
        rows = as_rows(upcast(logits), 1)
        self.count = count
        # Each sample's target logit, found by its position in the flattened (N, C) rows
        # (one `take`, and the backward reuses the positions).
        # (Checked above to lie in [0, C), the target converts to intp safely; an uint64
        # target plus an intp offset would otherwise promote to float64.)
        positions = row_starts(count, class_count) + flat_target.astype(np.intp, copy=False)
        self.positions = positions
        maximum = row_max(rows)
        with RowBuffers(class_count):
            exponentials, total, losses = softmax_losses(
                np.subtract(rows, maximum), positions, kept
            )
            if self.needs_input_grad[0]:
                # softmax = exponentials / total: the division is left to the backward,
                # where it joins the multiplication by the upstream gradient (one pass).
                self.save_for_backward(exponentials, total.reshape(count, 1))
        if reduction == "none":
            out = losses.reshape(target.shape)
        elif reduction == "sum":
            out = np.add.reduce(losses)
        else:
            divisor = count if kept is None else int(np.count_nonzero(kept))
            self.divisor = divisor
            out = np.add.reduce(losses) / divisor if divisor else np.full((), np.nan, losses.dtype)
        out = np.asarray(out)
        if out.dtype == logits.dtype:
            return out
        with np.errstate(over="ignore"):  # float16: a loss above 65504 is inf, as in PyTorch
            return out.astype(logits.dtype)

    def backward(self, grad_output):
        exponentials, total = self.saved_tensors
        logits = self.inputs[0]
        count = self.count
        if self.reduction == "none":
            scale = upcast(grad_output).reshape((count, 1))
        elif self.reduction == "sum":
            scale = upcast(grad_output)
        else:
            scale = upcast(grad_output) * (1.0 / max(self.divisor, 1))
        shape = logits.shape
        if self.graph_mode is not False:  # softmax recomputed from the logits: differentiable
            return like_inputs(self, (self.backward_composed(logits, scale), None))
        with RowBuffers(self.class_count):
            grad = np.multiply(exponentials, scale / total)  # softmax times the scale
        grad.reshape(-1)[self.positions] -= scale.reshape(-1) if scale.ndim else scale
        if self.kept is not None:
            grad[~self.kept] = 0.0  # an ignored sample's row: no gradient at all
        if len(shape) <= 2:
            return reshaped(grad, shape), None
        return from_rows(grad, shape, 1), None

    def backward_composed(self, logits, scale):
        """(softmax(z) - one_hot(t)) * scale, with z's class axis moved last and back."""
        shape = logits.shape
        count, class_count = self.count, self.class_count
        class_axis = 1 if len(shape) > 1 else 0
        probabilities = Softmax.apply(upcast(logits), axis=class_axis)
        # (N, C, d...) -> (N, d..., C): the order in which `target.reshape(-1)` lists samples.
        to_last = (0,) + tuple(range(2, len(shape))) + (1,) if len(shape) > 2 else None
        if to_last is not None:
            probabilities = probabilities.transpose(to_last)
        moved_shape = probabilities.shape
        one_hot = np.zeros((count, class_count), dtype=compute_dtype(logits.dtype))
        one_hot[np.arange(count), self.target] = 1.0
        grad = (probabilities.reshape((count, class_count)) - one_hot) * scale
        if self.kept is not None:
            grad = grad * self.kept.astype(one_hot.dtype).reshape(count, 1)
        grad = grad.reshape(moved_shape)
        if to_last is not None:
            grad = grad.transpose(tuple(np.argsort(to_last)))
        return grad


class MSELoss(Op):
    """loss = mean((a - b)²) (or sum, or none);  da = 2 g (a - b) (/ n for the mean), db = -da"""

    __slots__ = ("reduction", "count")
    jacobian_kind = side_kind  # a loss at every step of a chain: batched beside it

    def forward(self, a, b, reduction):
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(
                f"mse_loss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
            )
        for name, value in (("input", a), ("target", b)):
            if isinstance(value, np.ndarray):
                check_float("mse_loss", value, name)
        try:
            difference = np.subtract(a, b)
        except ValueError:
            raise ShapeError(
                f"mse_loss: input of shape {np.shape(a)} and target of shape {np.shape(b)} "
                "cannot be broadcast together"
            ) from None
        self.reduction = reduction
        self.count = difference.size
        self.save_for_backward(a, b, difference)
        if reduction == "none":
            return difference * difference
        flat = difference.reshape(-1)
        total = np.dot(flat, flat)
        if reduction == "sum":
            return np.asarray(total)
        return np.asarray(total / flat.size if flat.size else np.nan, dtype=difference.dtype)

    def backward(self, grad_output):
        a, b, difference = self.saved_tensors
        if self.graph_mode is not False:  # a - b from the input Tensors: differentiable
            difference = a - b
        scale = grad_output * 2.0
        if self.reduction == "mean":
            scale = scale * (1.0 / max(self.count, 1))
        grad = difference * scale
        return grad, -grad


# PyTorch's floor under p (1 - p) in binary_cross_entropy's gradient: 1e-12, held in float32.
_BCE_EPSILON = float(np.float32(1e-12))


class BinaryCrossEntropy(Op):
    """loss = -(t max(log p, -100) + (1 - t) max(log(1 - p), -100)), elementwise;
    dp = g (p - t) / max(p (1 - p), 1e-12), dt = g (log(1 - p) - log p)

    PyTorch's rules, which are not the derivative of the clamped form: at p = 0 or 1 the
    input's gradient is large rather than 0, and the target's is ±inf (the logs unclamped).
    float16 is computed in float32."""

    __slots__ = ()

    def forward(self, p, t):
        dtype = p.dtype
        p, t = upcast(p), upcast(t)
        if any(self.needs_input_grad):
            self.save_for_backward(p, t)
        with np.errstate(divide="ignore"):  # log(0) = -inf, clamped at -100 below
            log_p = np.maximum(np.log(p), -100.0)
            log_not_p = np.maximum(np.log1p(-p), -100.0)
        loss = (t - 1.0) * log_not_p
        loss -= t * log_p
        return loss.astype(dtype, copy=False)

    def backward(self, grad_output):
        p, t = self.saved_tensors
        needs_p, needs_t = self.needs_input_grad
        g = upcast(grad_output)
        if self.graph_mode is not False:  # the same formulas on Tensors: differentiable
            grad_p = g * (p - t) / (p * (1.0 - p)).clip(_BCE_EPSILON, None) if needs_p else None
            if needs_t:
                with np.errstate(divide="ignore", invalid="ignore"):
                    grad_t = g * ((-p).log1p() - p.log())
            else:
                grad_t = None
            return like_inputs(self, (grad_p, grad_t))
        grad_p = grad_t = None
        if needs_p:
            grad_p = g * (p - t) / np.maximum(p * (1.0 - p), _BCE_EPSILON)
        if needs_t:
            with np.errstate(divide="ignore", invalid="ignore"):  # log(0): ±inf, as PyTorch
                grad_t = g * (np.log1p(-p) - np.log(p))
        if grad_output.dtype == np.float16:  # a gradient above 65504 is inf, as PyTorch's
            with np.errstate(over="ignore"):
                return like_inputs(self, (grad_p, grad_t))
        return grad_p, grad_t
