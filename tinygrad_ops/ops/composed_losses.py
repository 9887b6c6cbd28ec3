"""The losses composed of primitives, as PyTorch composes them (their backward is the
primitives' rules): nll_loss, cross_entropy's general path (weight, ignore_index,
label_smoothing, probability targets), binary_cross_entropy (over its fused elementwise
op) and with logits, l1, huber, smooth_l1, kl_div.
"""

import warnings

import numpy as np

from .base import values_read
from .binary import Xlogy
from .checks import ArgumentError, check_float
from .elementwise import Where
from .losses import BinaryCrossEntropy

REDUCTIONS = ("mean", "sum", "none")


def check_reduction(reduction, op_name, extra=()):
    if reduction not in REDUCTIONS + tuple(extra):
        choices = ", ".join(repr(name) for name in REDUCTIONS + tuple(extra))
        raise ValueError(f"{op_name}: reduction must be one of {choices}, got {reduction!r}")


def reduce_loss(loss, reduction, op_name):
    """The elementwise losses averaged ("mean"; NaN when there are none, as PyTorch),
    summed ("sum") or kept ("none")."""
    check_reduction(reduction, op_name)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if loss.size else loss.sum() * np.nan


def class_rows(values, op_name):
    """(N, C, d...) or (C,) -> (M, C) rows, one per sample (the class dim moved last)."""
    if values.ndim == 1:
        return values.reshape((1, values.shape[0]))
    if values.ndim < 1:
        raise ValueError(f"{op_name}: the input must be (C,), (N, C) or (N, C, d...), got ()")
    moved = values.transpose((0, *range(2, values.ndim), 1)) if values.ndim > 2 else values
    return moved.reshape((-1, values.shape[1]))


def nll_rows(log_probabilities, target, weight, ignore_index, op_name):
    """(per-sample -w[t] log p[t] as an (M,) Tensor, per-sample weight w[t] (0 if ignored));
    `weight` is an array of C class weights or None (PyTorch gives it no gradient)."""
    from .indexing import gather

    rows = class_rows(log_probabilities, op_name)
    classes = rows.shape[1]
    flat = target.reshape(-1)
    expected = log_probabilities.shape[:1] + log_probabilities.shape[2:]
    if log_probabilities.ndim == 1:
        expected = ()
    if target.shape != expected:
        raise ValueError(
            f"{op_name}: input of shape {log_probabilities.shape} (N, C, ...) needs a target of "
            f"shape {expected}, got {target.shape}"
        )
    values_read(target, f"{op_name}: the class targets (ignore_index, the picks)")
    kept = flat != ignore_index
    bad = kept & ((flat < 0) | (flat >= classes))
    if bad.any():
        raise IndexError(
            f"{op_name}: target {flat[bad][0]} is out of bounds for {classes} classes "
            f"(valid targets are 0 to {classes - 1}, or ignore_index={ignore_index})"
        )
    safe = np.where(kept, flat, 0)
    picked = gather(rows, 1, safe.reshape(-1, 1)).reshape(-1)
    sample_weight = kept.astype(rows.dtype)
    if weight is not None:
        sample_weight = sample_weight * weight[safe]  # weight: an array, a constant
    # ignored samples are selected out, not multiplied by 0: with every target ignored the
    # mean's upstream gradient is inf, and PyTorch's gradient is 0 there, not NaN
    return Where.apply(kept, -picked * sample_weight, 0.0), sample_weight


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """loss_i = -w[t_i] input[i, t_i] for log-probabilities input (N, C, d...) and class
    targets; "mean" divides by the sum of w[t_i] over targets not equal to ignore_index;
    d input[i, t_i] = -w[t_i] g (/ that sum), 0 elsewhere.

    >>> import numpy as np, tinygrad_ops as tg
    >>> nll_loss(tg.Tensor([[-1.0, -2.0], [-0.5, -3.0]]), np.array([1, 0])).item()
    1.25
    """
    from .base import is_tensor
    from .indexing import as_index

    check_reduction(reduction, "nll_loss")
    target = as_index(target, "nll_loss", "target")
    if weight is not None:
        weight = weight.data if is_tensor(weight) else np.asarray(weight)
    losses, sample_weight = nll_rows(input, target, weight, ignore_index, "nll_loss")
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return losses.sum()
    total = sample_weight.sum()
    if total == 0:  # every target ignored: the mean is NaN, its gradient 0, as PyTorch's
        return losses.sum() * float("nan")
    return losses.sum() / total


def cross_entropy_general(logits, target, weight, ignore_index, reduction, label_smoothing):
    """cross_entropy with weight, ignore_index, label_smoothing or probability targets, as
    PyTorch composes it: nll_loss(log_softmax) and a smoothing term."""
    from .activations import LogSoftmax

    log_probabilities = LogSoftmax.apply(logits, axis=1 if logits.ndim > 1 else 0)
    classes = logits.shape[1] if logits.ndim > 1 else logits.shape[0]
    if target.dtype.kind == "f":  # class probabilities, the shape of the logits
        if label_smoothing:
            target = target * (1.0 - label_smoothing) + label_smoothing / classes
        weighted = log_probabilities * target
        if weight is not None:
            weighted = weighted * weight.reshape((classes,) + (1,) * max(logits.ndim - 2, 0))
        losses = -weighted.sum(axis=1 if logits.ndim > 1 else 0)
        return reduce_loss(losses, reduction, "cross_entropy")
    weight = None if weight is None else weight.data  # a constant, as in nll_loss (and PyTorch)
    losses, sample_weight = nll_rows(
        log_probabilities, target, weight, ignore_index, "cross_entropy"
    )
    if label_smoothing:
        rows = class_rows(log_probabilities, "cross_entropy")
        if weight is not None:
            rows = rows * weight
        smooth = Where.apply(sample_weight != 0, -rows.sum(axis=1), 0.0)  # (as nll_rows)
        losses = losses * (1.0 - label_smoothing) + smooth * (label_smoothing / classes)
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return losses.sum()
    total = sample_weight.sum()
    if total == 0:  # every target ignored: the mean is NaN, its gradient 0, as PyTorch's
        return losses.sum() * float("nan")
    return losses.sum() / total


def broadcastable(*shapes):
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        return False
    return True


def warn_if_sizes_differ(op_name, input, target, stacklevel=3):
    """PyTorch's warning for a target whose shape is not the input's (a prediction of shape
    (N, 1) against targets of shape (N,) broadcasts to an (N, N) loss: silently wrong).
    Shapes that do not broadcast are left to the op's error."""
    if input.shape != target.shape and broadcastable(input.shape, target.shape):
        warnings.warn(
            f"{op_name}: using a target of shape {target.shape} that is different to the "
            f"input's shape {input.shape}. This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same shape (as PyTorch warns).",
            UserWarning,
            stacklevel=stacklevel,
        )


def _pair(input, target, op_name, shapes="same"):
    """input and target as Tensors of one float dtype; `shapes`: "same" (an error where they
    differ), "warn" (PyTorch's warning, then broadcast) or "broadcast"."""
    from .base import is_tensor, new_tensor

    values = []
    for name, value in (("input", input), ("target", target)):
        if not is_tensor(value):
            value = new_tensor(np.asarray(value, dtype=getattr(input, "dtype", None)))
        check_float(op_name, value.data, name)
        values.append(value)
    input, target = values
    if shapes == "same" and input.shape != target.shape:
        raise ValueError(
            f"{op_name}: target of shape {target.shape} must have the input's shape {input.shape}"
        )
    if not broadcastable(input.shape, target.shape):
        raise ValueError(
            f"{op_name}: input of shape {input.shape} and target of shape {target.shape} "
            "cannot be broadcast together"
        )
    if shapes == "warn":
        warn_if_sizes_differ(op_name, input, target, stacklevel=4)
    if target.dtype != input.dtype:
        target = target.astype(input.dtype)
    return input, target


def _where(condition, a, b):
    from .elementwise import Where

    return Where.apply(condition.data if hasattr(condition, "data") else condition, a, b)


def softplus_of_negative(x):
    """log(1 + exp(-x)), stable: log(1 + exp(-|x|)) + max(-x, 0), with |x| written as a
    where, so that the derivative at 0 is exactly -1/2 (abs's subgradient would give 0)."""
    values_read(x, "binary_cross_entropy_with_logits: the signs of the logits")
    magnitude = _where(x.data >= 0, x, -x)
    return (1.0 + (-magnitude).exp()).log() + (-x).relu()


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """loss = -w (t log p + (1 - t) log(1 - p)), each log clamped at -100;
    dp = w (p - t) / max(p (1 - p), 1e-12), dt = w (log(1 - p) - log p): PyTorch's rules
    (the fused op BinaryCrossEntropy), the weight a factor after it.

    >>> import tinygrad_ops as tg
    >>> round(binary_cross_entropy(tg.Tensor([0.5]), tg.Tensor([1.0])).item(), 4)
    0.6931
    """
    p, t = _pair(input, target, "binary_cross_entropy")
    if p.size and (np.nanmin(p.data) < 0 or np.nanmax(p.data) > 1):
        raise ArgumentError(
            "binary_cross_entropy: every input must be a probability in [0, 1] "
            "(for logits use binary_cross_entropy_with_logits)"
        )
    loss = BinaryCrossEntropy.apply(p, t)
    if weight is not None:
        loss = loss * weight
    return reduce_loss(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """loss = w ((1 - t) x + (1 + (pw - 1) t) softplus(-x)), which is
    -w (pw t log σ(x) + (1 - t) log(1 - σ(x))) without overflow; dx = w ((1 + (pw - 1) t) σ(x)
    - pw t), from the composed form (weight and pos_weight get gradients too).

    >>> import tinygrad_ops as tg
    >>> round(binary_cross_entropy_with_logits(tg.Tensor([0.0]), tg.Tensor([1.0])).item(), 4)
    0.6931
    """
    x, t = _pair(input, target, "binary_cross_entropy_with_logits")
    scale = 1.0 if pos_weight is None else 1.0 + (pos_weight - 1.0) * t
    loss = (1.0 - t) * x + scale * softplus_of_negative(x)
    if weight is not None:
        loss = loss * weight
    return reduce_loss(loss, reduction, "binary_cross_entropy_with_logits")


def l1_loss(input, target, reduction="mean"):
    """loss = |input - target|;  d input = g sign(input - target) (0 where equal), d target = -that.

    >>> import tinygrad_ops as tg
    >>> l1_loss(tg.Tensor([1.0, -2.0]), tg.Tensor([0.0, 0.0])).item()
    1.5
    """
    x, t = _pair(input, target, "l1_loss", shapes="warn")
    return reduce_loss((x - t).abs(), reduction, "l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0):
    """loss = d²/2 where |d| < delta, else delta (|d| - delta/2), d = input - target;
    d input = g d (clipped to ±delta), d target = -that.

    >>> import tinygrad_ops as tg
    >>> huber_loss(tg.Tensor([0.5, 3.0]), tg.Tensor([0.0, 0.0]), reduction="none").numpy()
    array([0.125, 2.5  ], dtype=float32)
    """
    if not delta > 0:
        raise ArgumentError(f"huber_loss: delta must be positive, got {delta}")
    x, t = _pair(input, target, "huber_loss", shapes="warn")
    difference = x - t
    size = difference.abs()
    values_read(size, "huber_loss: where |input - target| < delta")
    loss = _where(size.data < delta, 0.5 * difference * difference, delta * (size - 0.5 * delta))
    return reduce_loss(loss, reduction, "huber_loss")


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """loss = d²/(2 beta) where |d| < beta, else |d| - beta/2 (huber_loss / beta; l1 for
    beta = 0);  d input = g d / beta (clipped to ±1), d target = -that.

    >>> import tinygrad_ops as tg
    >>> smooth_l1_loss(tg.Tensor([0.5, 3.0]), tg.Tensor([0.0, 0.0]), reduction="none").numpy()
    array([0.125, 2.5  ], dtype=float32)
    """
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    if beta == 0:
        return l1_loss(input, target, reduction)
    x, t = _pair(input, target, "smooth_l1_loss", shapes="warn")
    difference = x - t
    size = difference.abs()
    values_read(size, "smooth_l1_loss: where |input - target| < beta")
    loss = _where(size.data < beta, (0.5 / beta) * difference * difference, size - 0.5 * beta)
    return reduce_loss(loss, reduction, "smooth_l1_loss")


def kl_div(input, target, reduction="mean", log_target=False):
    """loss = t (log t - input) (0 where t = 0), input holding log-probabilities; with
    log_target, exp(t) (t - input). "batchmean" divides the sum by the batch size (the
    true KL divergence; "mean" divides by the element count, as PyTorch);
    d input = -t g, d t = (log t + 1 - input) g (NaN at t = 0, as PyTorch: xlogy(t, t)'s).

    >>> import tinygrad_ops as tg
    >>> kl_div(tg.Tensor([[-1.0, -1.0]]), tg.Tensor([[0.5, 0.5]]), reduction="sum").item()
    0.3068528175354004
    """
    check_reduction(reduction, "kl_div", extra=("batchmean",))
    if reduction == "mean":
        warnings.warn(
            "kl_div: reduction='mean' divides the total loss by both the batch size and the "
            "support size; 'batchmean' divides only by the batch size, and aligns with the KL "
            "divergence's definition (as PyTorch warns)",
            UserWarning,
            stacklevel=2,
        )
    x, t = _pair(input, target, "kl_div", shapes="broadcast")
    if log_target:
        loss = t.exp() * (t - x)
    else:  # t log t is 0 at t = 0 (xlogy), as PyTorch's: its gradient there is NaN too
        loss = Xlogy.apply(t, t) - t * x
    if reduction == "batchmean":
        return loss.sum() / (loss.shape[0] if loss.ndim else 1)
    return reduce_loss(loss, reduction, "kl_div")
