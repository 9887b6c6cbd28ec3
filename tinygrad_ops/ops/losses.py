"""The losses (cross_entropy, mse_loss): fused primitives whose backward is derived by hand.

One node each, forward and backward formulas in the docstring, derived in
`docs/derivations.md` (`ops/dual.py` says how a rule serves both a plain backward and
create_graph, and how float16 is computed).
"""

import numpy as np

from .activations import Softmax
from .base import Op
from .checks import check_float
from .dual import compute_dtype, like_inputs, upcast
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


class CrossEntropy(Op):
    """loss_i = log sum_c exp(z_ic) - z_i,t_i (log_softmax and the pick fused), reduced by
    mean/sum/none;  dz_ic = g_i (softmax(z_i)_c - [c == t_i]) (divided by N for the mean)"""

    __slots__ = ("reduction", "target", "count", "class_count", "positions")

    def forward(self, logits, target, reduction):
        check_float("cross_entropy", logits, "logits")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(
                f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
            )
        target = np.asarray(target)
        if target.dtype.kind not in "iu":
            raise TypeError(
                f"cross_entropy: target must hold integer class indices, got dtype "
                f"{target.dtype} (class probabilities are not supported)"
            )
        expected = logits.shape[:1] + logits.shape[2:] if logits.ndim > 1 else ()
        if logits.ndim < 1 or target.shape != expected:
            raise ValueError(
                f"cross_entropy: logits of shape {logits.shape} (N, C, ...) need a target of "
                f"shape {expected}, got {target.shape}"
            )
        class_count = logits.shape[1] if logits.ndim > 1 else logits.shape[0]
        if logits.ndim == 1:  # a single sample of C logits with a 0-d target
            logits = logits.reshape(1, class_count)
        flat_target = target.reshape(-1)
        # One reduction checks both bounds: viewed as unsigned, a negative index is huge.
        unsigned = flat_target.view(_UNSIGNED.get(flat_target.dtype, flat_target.dtype))
        if flat_target.size and np.maximum.reduce(unsigned) >= class_count:
            bad = flat_target[(flat_target < 0) | (flat_target >= class_count)][0]
            raise IndexError(
                f"cross_entropy: target {bad} is out of bounds for {class_count} classes "
                f"(valid targets are 0 to {class_count - 1})"
            )
        self.reduction = reduction
        self.target = flat_target
        self.class_count = class_count
        rows = as_rows(upcast(logits), 1)
        count = rows.shape[0]
        self.count = count
        # Each sample's target logit, found by its position in the flattened (N, C) rows
        # (one `take`, and the backward reuses the positions).
        # (Checked above to lie in [0, C), the target converts to intp safely; an uint64
        # target plus an intp offset would otherwise promote to float64.)
        positions = row_starts(count, class_count) + flat_target.astype(np.intp, copy=False)
        self.positions = positions
        maximum = row_max(rows)
        with RowBuffers(class_count):
            shifted = np.subtract(rows, maximum)
            picked = shifted.reshape(-1).take(positions)
            exponentials = exp_of_shifted(shifted, out=shifted)
            total = row_sum(exponentials).reshape(count)
            losses = np.log(total)
            losses -= picked
            if self.needs_input_grad[0]:
                # softmax = exponentials / total: the division is left to the backward,
                # where it joins the multiplication by the upstream gradient (one pass).
                self.save_for_backward(exponentials, total.reshape(count, 1))
        if reduction == "none":
            out = losses.reshape(target.shape)
        elif reduction == "sum":
            out = np.add.reduce(losses)
        else:
            out = np.add.reduce(losses) / count if count else np.full((), np.nan, losses.dtype)
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
            scale = upcast(grad_output) * (1.0 / max(count, 1))
        shape = logits.shape
        if self.graph_mode is not False:  # softmax recomputed from the logits: differentiable
            return like_inputs(self, (self.backward_composed(logits, scale), None))
        with RowBuffers(exponentials.shape[1]):
            grad = np.multiply(exponentials, scale / total)  # softmax times the scale
        grad.reshape(-1)[self.positions] -= scale.reshape(-1) if scale.ndim else scale
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
        grad = grad.reshape(moved_shape)
        if to_last is not None:
            grad = grad.transpose(tuple(np.argsort(to_last)))
        return grad


class MSELoss(Op):
    """loss = mean((a - b)²) (or sum, or none);  da = 2 g (a - b) (/ n for the mean), db = -da"""

    __slots__ = ("reduction", "count")

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
            raise ValueError(
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
