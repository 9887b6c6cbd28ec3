"""The functional API (`from tinygrad_ops import functional as F`): activations, softmax, the
norms, the linear layer and the losses, with PyTorch's names and semantics.

Each function checks its arguments and applies one fused primitive from `ops/`
(`activations`, `norms`, `losses`, `linalg`: one tape node, a backward rule derived by hand
in `docs/derivations.md`), except relu, sigmoid and tanh, which are core primitives already.

>>> import tinygrad_ops as tg
>>> from tinygrad_ops import functional as F
>>> F.softmax(tg.Tensor([[1.0, 1.0]])).numpy()
array([[0.5, 0.5]], dtype=float32)
"""

import math

import numpy as np

from .creation import default_generator
from .mode import no_grad
from .ops import (
    BatchNorm,
    CrossEntropy,
    Dropout,
    Gelu,
    LayerNorm,
    LeakyRelu,
    Linear,
    MSELoss,
    RMSNorm,
)
from .ops.base import bump_version
from .ops.checks import ArgumentError, ShapeError, check_float
from .ops.composed_losses import check_reduction, cross_entropy_general, warn_if_sizes_differ
from .ops.dual import compute_dtype
from .ops.indexing import as_index
from .ops.losses import check_class_dim
from .ops.norms import group_norm  # (composed of LayerNorm: see ops/norms.py)
from .ops.pointwise import GeluTanh
from .tensor import Tensor
from .tensor_functions import where

__all__ = [
    "batch_norm",
    "cross_entropy",
    "dropout",
    "gelu",
    "group_norm",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "mse_loss",
    "relu",
    "rms_norm",
    "sigmoid",
    "softmax",
    "tanh",
]


def _tensor(value, name, op_name):
    """A Tensor for `value` (Tensors as they are; arrays and lists wrapped, as constants)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (np.ndarray, list, tuple, int, float)):
        return Tensor(value)
    raise TypeError(f"{op_name}: {name} must be a Tensor, got {type(value).__name__}")


def _optional_tensor(value, name, op_name):
    return None if value is None else _tensor(value, name, op_name)


def _shape_tuple(normalized_shape, op_name):
    """`normalized_shape` (an int or a sequence of ints) as a tuple; a bool is refused."""
    sizes = normalized_shape if isinstance(normalized_shape, (tuple, list)) else (normalized_shape,)
    for size in sizes:
        if not isinstance(size, (int, np.integer)) or isinstance(size, (bool, np.bool_)):
            raise TypeError(
                f"{op_name}: normalized_shape must be an int or a tuple of ints, got "
                f"{normalized_shape!r}"
            )
    return tuple(int(size) for size in sizes)


# ----------------------------------------------------------------------------------------------
# Activations


def relu(x, inplace=False):
    """max(x, 0); with `inplace=True`, written into x (`x.relu_()`, version counter bumped).

    >>> import tinygrad_ops as tg
    >>> relu(tg.Tensor([-1.0, 2.0])).numpy()
    array([0., 2.], dtype=float32)
    """
    x = _tensor(x, "x", "relu")
    return x.relu_() if inplace else x.relu()


def leaky_relu(x, negative_slope=0.01):
    """x where x > 0, else negative_slope * x.

    >>> import tinygrad_ops as tg
    >>> leaky_relu(tg.Tensor([-2.0, 3.0]), 0.5).numpy()
    array([-1.,  3.], dtype=float32)
    """
    return LeakyRelu.apply(_tensor(x, "x", "leaky_relu"), negative_slope=float(negative_slope))


def gelu(x, approximate="none"):
    """x Φ(x), Φ the standard normal CDF: exact (with erf), or approximate="tanh" (PyTorch's
    0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))).

    >>> import tinygrad_ops as tg
    >>> gelu(tg.Tensor([0.0, 1.0], dtype=np.float64)).numpy().round(6)
    array([0.      , 0.841345])
    >>> gelu(tg.Tensor([1.0], dtype=np.float64), approximate="tanh").numpy().round(6)
    array([0.841192])
    """
    x = _tensor(x, "x", "gelu")
    if approximate == "tanh":
        return GeluTanh.apply(x)
    if approximate != "none":
        raise ArgumentError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(x)


def sigmoid(x):
    """1 / (1 + exp(-x)), stable for large |x| (exp is only taken of -|x|).

    >>> import tinygrad_ops as tg
    >>> sigmoid(tg.Tensor([-1000.0, 0.0, 1000.0])).numpy()
    array([0. , 0.5, 1. ], dtype=float32)
    """
    return _tensor(x, "x", "sigmoid").sigmoid()


def tanh(x):
    """The hyperbolic tangent.

    >>> import tinygrad_ops as tg
    >>> tanh(tg.Tensor([0.0, 1000.0])).numpy()
    array([0., 1.], dtype=float32)
    """
    return _tensor(x, "x", "tanh").tanh()


# ----------------------------------------------------------------------------------------------
# softmax


def softmax(x, axis=-1, *, dim=None):
    """exp(x) / sum(exp(x)) along `axis`, computed as exp(x - max) for stability.

    -inf entries (masks) get probability 0 and gradient 0; a slice of only -inf gives NaN,
    as in PyTorch. float16 is computed in float32 and returned as float16.

    >>> import tinygrad_ops as tg
    >>> softmax(tg.Tensor([[0.0, 1e30, -np.inf]])).numpy()
    array([[0., 1., 0.]], dtype=float32)
    """
    return _tensor(x, "x", "softmax").softmax(axis if dim is None else dim)


def log_softmax(x, axis=-1, *, dim=None):
    """x - logsumexp(x) along `axis` (stable: the max is subtracted first).

    >>> import tinygrad_ops as tg
    >>> log_softmax(tg.Tensor([0.0, 0.0])).numpy().round(4)
    array([-0.6931, -0.6931], dtype=float32)
    """
    return _tensor(x, "x", "log_softmax").log_softmax(axis if dim is None else dim)


# ----------------------------------------------------------------------------------------------
# Norms


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the last len(normalized_shape) dims (biased variance), then x̂ w + b.

    >>> import tinygrad_ops as tg
    >>> layer_norm(tg.Tensor([[1.0, 3.0]]), (2,)).numpy().round(3)
    array([[-1.,  1.]], dtype=float32)
    """
    return LayerNorm.apply(
        _tensor(x, "x", "layer_norm"),
        _optional_tensor(weight, "weight", "layer_norm"),
        _optional_tensor(bias, "bias", "layer_norm"),
        normalized_shape=_shape_tuple(normalized_shape, "layer_norm"),
        eps=float(eps),
    )


def rms_norm(x, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x²) + eps) over the last len(normalized_shape) dims, times weight.

    `eps=None` uses the machine epsilon of the dtype it computes in, as PyTorch does
    (float32's for a float16 input, which is computed in float32).

    >>> import tinygrad_ops as tg
    >>> rms_norm(tg.Tensor([[3.0, 4.0]]), (2,), eps=0.0).numpy().round(4)
    array([[0.8485, 1.1314]], dtype=float32)
    """
    x = _tensor(x, "x", "rms_norm")
    if eps is None:
        eps = float(np.finfo(compute_dtype(x.dtype)).eps) if x.dtype.kind == "f" else 0.0
    return RMSNorm.apply(
        x,
        _optional_tensor(weight, "weight", "rms_norm"),
        normalized_shape=_shape_tuple(normalized_shape, "rms_norm"),
        eps=float(eps),
    )


def batch_norm(
    x,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-5,
):
    """Normalise each channel (dim 1) of an (N, C) or (N, C, ...) input over every other
    dim, then x̂ w + b (nn.BatchNorm1d and nn.BatchNorm2d call it).

    Training: the batch mean and biased variance normalise; running_mean and running_var
    (Tensors, or None) are updated in place: r = (1 - momentum) r + momentum s, with the
    unbiased variance for running_var (their version counters are bumped). Eval: the
    running statistics normalise.

    >>> import tinygrad_ops as tg
    >>> mean, var = tg.zeros(1), tg.ones(1)
    >>> batch_norm(tg.Tensor([[1.0], [3.0]]), mean, var, training=True).numpy().round(3)
    array([[-1.],
           [ 1.]], dtype=float32)
    >>> mean.numpy(), var.numpy()
    (array([0.2], dtype=float32), array([1.1], dtype=float32))
    """
    x = _tensor(x, "x", "batch_norm")
    stats = []
    for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
        if stat is not None and not isinstance(stat, Tensor):
            raise TypeError(
                f"batch_norm: {name} must be a Tensor (updated in place) or None, "
                f"got {type(stat).__name__}"
            )
        if stat is not None and stat.dtype.kind != "f":
            raise TypeError(f"batch_norm: {name} must be floating point, got {stat.dtype}")
        stats.append(stat)
    if momentum is None:
        raise ValueError(
            "batch_norm: momentum=None (PyTorch's cumulative average) is not supported; "
            "pass a number in [0, 1]"
        )
    if not 0.0 <= momentum <= 1.0:
        raise ValueError(f"batch_norm: momentum must be in [0, 1], got {momentum}")
    update = training and any(stat is not None for stat in stats)
    out = BatchNorm.apply(
        x,
        _optional_tensor(weight, "weight", "batch_norm"),
        _optional_tensor(bias, "bias", "batch_norm"),
        running_mean=None if stats[0] is None else stats[0].data,
        running_var=None if stats[1] is None else stats[1].data,
        training=bool(training),
        momentum=float(momentum),
        eps=float(eps),
    )
    if update:
        for stat in stats:
            if stat is not None:
                bump_version(stat)
    return out


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Normalise each channel of each sample of an (N, C, ...) input over its spatial dims,
    then x̂ w + b per channel, as torch.nn.functional.instance_norm (Ulyanov et al. 2016):
    group_norm with one group per channel, so its gradients are LayerNorm's. Given running
    statistics, they are updated under no_grad with the mean over the batch of each
    instance's mean and unbiased variance; with use_input_stats=False they normalise instead
    (batch_norm in eval).

    >>> import tinygrad_ops as tg
    >>> out = instance_norm(tg.randn(2, 3, 5, seed=0))
    >>> bool(abs(out.numpy().mean(axis=2)).max() < 1e-6)
    True
    """
    x = _tensor(input, "input", "instance_norm")
    if x.ndim < 3:
        raise ValueError(f"instance_norm: expected an (N, C, ...) input, got shape {x.shape}")
    if not use_input_stats:
        return batch_norm(x, running_mean, running_var, weight, bias, False, momentum, eps)
    if use_input_stats and math.prod(x.shape[2:]) <= 1:
        raise ValueError(
            f"instance_norm: expected more than 1 spatial element when training, got input "
            f"of shape {x.shape}"
        )
    out = group_norm(x, x.shape[1], weight, bias, eps)
    with no_grad():  # ops, not writes into .data, so that tg.compile replays them
        per_instance = x.detach().reshape(x.shape[0], x.shape[1], -1)
        for stat, value in (
            (running_mean, per_instance.mean(2).mean(0)),
            (running_var, per_instance.var(2, correction=1).mean(0)),
        ):
            if stat is not None:
                stat.copy_(stat * (1.0 - momentum) + value.astype(stat.dtype) * momentum)
    return out


__all__ += ["instance_norm"]


# ----------------------------------------------------------------------------------------------
# Linear layer, losses, dropout


def linear(x, weight, bias=None):
    """x Wᵀ + b, with weight of shape (out_features, in_features) as in PyTorch (one node).

    >>> import tinygrad_ops as tg
    >>> linear(tg.Tensor([[1.0, 2.0]]), tg.Tensor([[1.0, 1.0]]), tg.Tensor([0.5])).numpy()
    array([[3.5]], dtype=float32)
    """
    return Linear.apply(
        _tensor(x, "x", "linear"),
        _tensor(weight, "weight", "linear"),
        _optional_tensor(bias, "bias", "linear"),
    )


def cross_entropy(
    logits, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0
):
    """-log softmax(logits)[target], as PyTorch's: class-index targets (fused in one node when
    there is no weight, ignored target or smoothing) or class probabilities.

    logits (N, C) with target (N,), or (N, C, d...) with target (N, d...), or (C,) with a
    0-d target; integer targets (a float tensor of whole numbers is taken as one, since
    `tg.Tensor([0, 1])` is float32). A float target of the logits' shape holds class
    probabilities. weight (C,) weighs each class; targets equal to ignore_index count for
    nothing; label_smoothing mixes the target with the uniform distribution. `reduction`
    is "mean", "sum" or "none". A target outside [0, C) is an IndexError.

    >>> import tinygrad_ops as tg
    >>> logits = tg.Tensor([[0.0, 0.0], [0.0, 0.0]])
    >>> round(cross_entropy(logits, tg.Tensor([0, 1])).item(), 4)
    0.6931
    """
    logits = _tensor(logits, "logits", "cross_entropy")
    data = target.data if isinstance(target, Tensor) else target
    # The fused op (checked first, cheapest first: it is every training step's loss): integer
    # targets, no weight, no smoothing, a negative ignore_index (found by its bounds check).
    if (
        weight is None
        and not label_smoothing
        and ignore_index < 0
        and type(data) is np.ndarray
        and data.dtype.kind in "iu"
    ):
        return CrossEntropy.apply(logits, data, reduction=reduction, ignore_index=ignore_index)
    return _cross_entropy_general(logits, target, weight, ignore_index, reduction, label_smoothing)


def _cross_entropy_general(logits, target, weight, ignore_index, reduction, label_smoothing):
    """cross_entropy's other cases: argument checks, then the fused op or the composed form."""
    if isinstance(weight, str):  # cross_entropy(logits, target, "sum"): this API's older order
        weight, reduction = None, weight
    check_class_dim(logits)
    probabilities = isinstance(target, Tensor) and target.dtype.kind == "f"
    if not (probabilities and target.shape == logits.shape):  # else: the Tensor, differentiable
        target = np.asarray(target.data if isinstance(target, Tensor) else target)
    if target.dtype.kind == "f" and target.shape != logits.shape:
        target = as_index(target, "cross_entropy", "target (class indices; for class "
                          "probabilities give the logits' shape)")  # fmt: skip
    classes = logits.shape[1] if logits.ndim > 1 else logits.size
    fused = weight is None and not label_smoothing and target.dtype.kind in "iu"
    if fused and not 0 <= ignore_index < classes:
        return CrossEntropy.apply(logits, target, reduction=reduction, ignore_index=ignore_index)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(
            f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}"
        )
    check_float("cross_entropy", logits.data, "logits")
    weight = _optional_tensor(weight, "weight", "cross_entropy")
    if weight is not None and weight.shape != (classes,):
        raise ShapeError(f"cross_entropy: weight must have shape ({classes},), got {weight.shape}")
    check_reduction(reduction, "cross_entropy")
    return cross_entropy_general(logits, target, weight, ignore_index, reduction, label_smoothing)


def mse_loss(input, target, reduction="mean"):
    """mean((input - target)²) (or "sum", or "none" for the elementwise squares).

    >>> import tinygrad_ops as tg
    >>> mse_loss(tg.Tensor([1.0, 3.0]), tg.Tensor([0.0, 0.0])).item()
    5.0
    """
    input, target = _tensor(input, "input", "mse_loss"), _tensor(target, "target", "mse_loss")
    warn_if_sizes_differ("mse_loss", input, target)
    return MSELoss.apply(input, target, reduction=reduction)


def dropout(x, p=0.5, training=True, generator=None, seed=None):
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (training);
    the identity in eval. Draws from `generator` (a numpy Generator), else from a new one
    seeded with `seed`, else from the shared generator that `tg.manual_seed` reseeds.

    >>> import tinygrad_ops as tg
    >>> out = dropout(tg.ones(6), p=0.5, seed=0)
    >>> sorted(set(out.numpy().tolist()))
    [0.0, 2.0]
    """
    x = _tensor(x, "x", "dropout")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if generator is None:
        generator = np.random.default_rng(seed) if seed is not None else default_generator()
    return Dropout.apply(x, p=float(p), generator=generator)


# ----------------------------------------------------------------------------------------------
# Convolution and pooling (tinygrad_ops/ops/conv.py and ops/pool.py; the "opsnew" section)

from .ops.conv import conv1d, conv2d  # noqa: E402 (a section of its own, kept apart)
from .ops.conv_transpose import conv_transpose2d  # noqa: E402
from .ops.pool import (  # noqa: E402
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from .ops.unpool import max_unpool2d  # noqa: E402

__all__ += [
    "adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "conv1d", "conv2d", "conv_transpose2d",
    "max_pool1d", "max_pool2d", "max_unpool2d",
]  # fmt: skip

# Indexing and padding (tinygrad_ops/ops/indexing.py, ops/movement.py; the "opsnew" section)

from .ops.indexing import one_hot  # noqa: E402 (a section of its own, kept apart)
from .ops.movement import pad  # noqa: E402

__all__ += ["embedding", "one_hot", "pad"]


def embedding(input, weight, padding_idx=None):
    """out[...] = weight[input[...]]: the rows of `weight` (num_embeddings, dim) that the
    integer `input` names;  dweight = each output row's g added into its row (none into
    row `padding_idx`, as PyTorch's).

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import functional as F
    >>> F.embedding(tg.tensor([2, 0]), tg.Tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])).tolist()
    [[4.0, 5.0], [0.0, 1.0]]
    """
    indices = input.data if isinstance(input, Tensor) else np.asarray(input)
    if indices.dtype.kind not in "iu":
        raise TypeError(
            f"embedding: the indices must be an integer tensor, got dtype {indices.dtype}"
        )
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-d (rows, dim), got shape {weight.shape}")
    count = weight.shape[0]
    if indices.size and (indices.min() < 0 or indices.max() >= count):
        bad = indices.min() if indices.min() < 0 else indices.max()
        raise IndexError(f"embedding: index {bad} is out of range for {count} embeddings")
    rows = weight[as_index(indices, "embedding")]
    if padding_idx is None:
        return rows
    pads = (indices == _padding_row(padding_idx, count))[..., None]
    return where(pads, rows.detach(), rows)  # the same values; no gradient to that row


def _padding_row(padding_idx, count):
    if not -count <= padding_idx < count:
        raise ValueError(f"embedding: padding_idx {padding_idx} is out of range for {count}")
    return padding_idx % count


# Losses composed of primitives (tinygrad_ops/ops/composed_losses.py; the "opsnew" section)

from .ops.composed_losses import (  # noqa: E402
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    huber_loss,
    kl_div,
    l1_loss,
    nll_loss,
    smooth_l1_loss,
)

__all__ += [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "nll_loss",
    "smooth_l1_loss",
]

# Unit vectors and their angles (tinygrad_ops/ops/similarity.py)

from .ops.similarity import cosine_similarity, normalize  # noqa: E402 (a section of its own)

__all__ += ["cosine_similarity", "normalize"]

# Elementwise activations (tinygrad_ops/ops/pointwise.py)

from .ops.pointwise import (  # noqa: E402 (a section of its own, kept apart)
    celu,
    elu,
    hardsigmoid,
    hardswish,
    hardtanh,
    logsigmoid,
    mish,
    relu6,
    selu,
    silu,
    softplus,
    softsign,
    swish,
)

__all__ += [
    "celu", "elu", "hardsigmoid", "hardswish", "hardtanh", "logsigmoid", "mish", "relu6",
    "selu", "silu", "softplus", "softsign", "swish",
]  # fmt: skip

# Attention (tinygrad_ops/ops/attention.py)

from .ops import attention as _attention  # noqa: E402 (a section of its own)

__all__ += ["scaled_dot_product_attention"]


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """out = softmax(q kᵀ · scale + mask) v, as torch.nn.functional's; the dropout mask (with
    `dropout_p` > 0) drawn from the shared generator that `tg.manual_seed` reseeds. The
    masks, `is_causal`, `scale` and `enable_gqa` as `ops.attention`'s function states them.

    >>> import tinygrad_ops as tg
    >>> q = tg.Tensor([[[1.0, 0.0], [0.0, 1.0]]])
    >>> scaled_dot_product_attention(q, q, q, is_causal=True).numpy().round(2)
    array([[[1.  , 0.  ],
            [0.33, 0.67]]], dtype=float32)
    """
    generator = default_generator() if dropout_p > 0.0 else None
    return _attention.scaled_dot_product_attention(
        query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, generator
    )


# Resizing (tinygrad_ops/ops/interpolate.py)

from .ops.interpolate import interpolate  # noqa: E402 (a section of its own)

__all__ += ["interpolate"]
