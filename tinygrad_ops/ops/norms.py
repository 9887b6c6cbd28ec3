"""The norms (layer_norm, rms_norm, batch_norm): fused primitives with hand-derived rules.

One node each, forward and backward formulas in the docstring, derived step by step in
`docs/derivations.md`; the fast rule and the composed rule (create_graph) side by side
(`ops/dual.py` says why there are two, and how float16 is computed).
"""

import numpy as np

from .base import Op, is_tensor
from .checks import ArgumentError, ShapeError, check_affine, check_float, check_normalized_shape
from .dual import like_inputs, upcast
from .jacobian import Dense
from .kernels import (
    RowBuffers,
    as_rows,
    column_dot,
    column_sum,
    from_rows,
    reshaped,
    row_dot,
    row_sum,
    trailing_rows,
)


def statistics_composed(x, axes, eps):
    """x-hat = (x - mean) / sqrt(var + eps) and 1/sqrt(var + eps), over `axes`, in operations
    that arrays and Tensors share (the create_graph path recomputes them from x with this)."""
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    inverse_std = ((centered * centered).mean(axis=axes, keepdims=True) + eps) ** -0.5
    return centered * inverse_std, inverse_std


def summed_over(value, axes):
    """`value` summed over `axes`, unchanged for none: a Tensor's sum over () would reduce
    every dim (PyTorch's dim=()), and a 1-d input to layer_norm has no batch axes."""
    return value.sum(axis=axes) if axes else value


def norm_input_grad_composed(grad_xhat, xhat, inverse_std, axes):
    """dx = (dx̂ - mean(dx̂) - x̂ · mean(dx̂ · x̂)) / std, means over the normalised `axes`."""
    mean_grad = grad_xhat.mean(axis=axes, keepdims=True)
    mean_projection = (grad_xhat * xhat).mean(axis=axes, keepdims=True)
    return (grad_xhat - mean_grad - xhat * mean_projection) * inverse_std


def norm_input_grad_rows(g, weight, xhat, inverse_std):
    """The same formula on (rows, n) arrays normalised along each row, with dx̂ = g w:
    dx = s - mean(s) - x̂ mean(s x̂), s = g w / std (the 1/std of each row folded in first).

    s is built as (1/std) wᵀ, an outer product written in one pass, times g in place: one
    pass cheaper than g w followed by a per-row scaling. Then two row reductions (BLAS)
    and three passes for the correction.
    """
    count = max(xhat.shape[1], 1)
    if weight is not None:
        scaled = np.multiply(inverse_std, upcast(weight).reshape(-1))
        scaled *= g
    else:
        scaled = np.multiply(g, inverse_std)
    mean_grad = row_sum(scaled) / count
    mean_projection = row_dot(scaled, xhat) / count
    correction = np.multiply(xhat, mean_projection)
    correction += mean_grad
    scaled -= correction
    return scaled


def _scaled_rows(xhat, weight, bias, dtype):
    """x̂ w + b over rows (weight and bias flat over a row; either may be None), as an array
    other than x̂: x̂ is saved for backward (float16's cast to `dtype` makes a copy anyway)."""
    if weight is not None:
        out = np.multiply(xhat, upcast(weight).reshape(-1))
        if bias is not None:
            out += upcast(bias).reshape(-1)
        return out
    if bias is not None:
        return np.add(xhat, upcast(bias).reshape(-1))
    return xhat.copy() if dtype == xhat.dtype else xhat


class LayerNorm(Op):
    """y = x̂ w + b, x̂ = (x - mean) / sqrt(var + eps) over the last k dims (biased var);
    dx = (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)) / sqrt(var + eps) with dx̂ = g w;
    dw = sum over the batch of g x̂;  db = sum over the batch of g"""

    __slots__ = ("normalized_shape", "eps")

    def jacobian_kind(self, index):
        """Row-wise (dense, one d x d matrix per row) through x, normalised over its last
        dim; a norm over several dims mixes them: walked."""
        return "dense" if index == 0 and len(self.normalized_shape) == 1 else None

    def jacobian(self, index):
        """J_x[j, i] = w_j (δ_ij - 1/n - x̂_j x̂_i / n) / sqrt(var + eps), per row."""
        _, weight, xhat, inverse_std = self.saved_tensors
        size = xhat.shape[-1]
        outer = np.multiply(xhat[..., :, None], xhat[..., None, :] / -size)
        outer += np.eye(size, dtype=outer.dtype) - 1 / size
        outer *= inverse_std[..., None]
        if weight is not None:
            outer *= upcast(weight).reshape(size, 1)
        return Dense(outer.reshape(tuple(self.output_shape) + (size,)))

    def forward(self, x, weight, bias, normalized_shape, eps):
        check_float("layer_norm", x)
        normalized_shape = check_normalized_shape("layer_norm", x, normalized_shape)
        check_affine("layer_norm", "weight", weight, normalized_shape, x)
        check_affine("layer_norm", "bias", bias, normalized_shape, x)
        self.normalized_shape = normalized_shape
        self.eps = eps
        rows = trailing_rows(upcast(x), len(normalized_shape))
        count = max(rows.shape[1], 1)  # the divisor (an empty normalized_shape gives empty rows)
        with RowBuffers(rows.shape[1]):
            # Two passes (mean, then the mean of squared deviations): exact for constant
            # rows, where E[x^2] - E[x]^2 would cancel catastrophically.
            centered = np.subtract(rows, row_sum(rows) / count)
            inverse_std = row_dot(centered, centered) / count
            inverse_std += eps
            np.sqrt(inverse_std, out=inverse_std)
            np.reciprocal(inverse_std, out=inverse_std)
            xhat = centered
            xhat *= inverse_std
            out = _scaled_rows(xhat, weight, bias, x.dtype)
        # x for the create_graph path (and its version check, as in PyTorch), weight for dx̂.
        self.save_for_backward(x, weight, xhat, inverse_std)
        return reshaped(out, x.shape).astype(x.dtype, copy=False)

    def backward(self, grad_output):
        if self.graph_mode is not False:
            return like_inputs(self, self.backward_composed(grad_output))
        _, weight, xhat, inverse_std = self.saved_tensors
        if xhat.ndim > 2:  # the rows of every step of a scanned chain, stacked
            xhat, inverse_std = xhat.reshape(-1, xhat.shape[-1]), inverse_std.reshape(-1, 1)
        needs_x, needs_weight, needs_bias = self.needs_input_grad
        g = upcast(grad_output).reshape(xhat.shape)
        shape = self.normalized_shape
        with RowBuffers(xhat.shape[1]):
            grad_weight = column_dot(g, xhat).reshape(shape) if needs_weight else None
            grad_bias = column_sum(g).reshape(shape) if needs_bias else None
            grad_x = None
            if needs_x:
                grad_x = norm_input_grad_rows(g, weight, xhat, inverse_std)
        return reshaped(grad_x, grad_output.shape) if needs_x else None, grad_weight, grad_bias

    def backward_composed(self, grad_output):
        x, weight, _, _ = self.saved_tensors
        bias = self.inputs[2]
        k = len(self.normalized_shape)
        axes = tuple(range(x.ndim - k, x.ndim))
        batch_axes = tuple(range(x.ndim - k))
        g = upcast(grad_output)
        xhat, inverse_std = statistics_composed(upcast(x), axes, self.eps)
        grad_xhat = g * upcast(weight) if weight is not None else g
        grad_x = norm_input_grad_composed(grad_xhat, xhat, inverse_std, axes)
        grad_weight = summed_over(g * xhat, batch_axes) if weight is not None else None
        grad_bias = summed_over(g, batch_axes) if bias is not None else None
        return grad_x, grad_weight, grad_bias


class RMSNorm(Op):
    """y = x̂ w, x̂ = x / sqrt(mean(x²) + eps) over the last k dims;
    dx = (dx̂ - x̂ mean(dx̂ x̂)) / sqrt(mean(x²) + eps) with dx̂ = g w;  dw = sum of g x̂"""

    __slots__ = ("normalized_shape", "eps")

    def forward(self, x, weight, normalized_shape, eps):
        check_float("rms_norm", x)
        normalized_shape = check_normalized_shape("rms_norm", x, normalized_shape)
        check_affine("rms_norm", "weight", weight, normalized_shape, x)
        self.normalized_shape = normalized_shape
        self.eps = eps
        rows = trailing_rows(upcast(x), len(normalized_shape))
        count = max(rows.shape[1], 1)  # the divisor (an empty normalized_shape gives empty rows)
        inverse_rms = row_dot(rows, rows) / count
        inverse_rms += eps
        np.sqrt(inverse_rms, out=inverse_rms)
        np.reciprocal(inverse_rms, out=inverse_rms)
        with RowBuffers(rows.shape[1]):
            xhat = np.multiply(rows, inverse_rms)
            out = _scaled_rows(xhat, weight, None, x.dtype)
        self.save_for_backward(x, weight, xhat, inverse_rms)
        return reshaped(out, x.shape).astype(x.dtype, copy=False)

    def backward(self, grad_output):
        x, weight, xhat, inverse_rms = self.saved_tensors
        if self.graph_mode is not False:
            return like_inputs(self, self.backward_composed(grad_output, x, weight))
        count = max(xhat.shape[1], 1)
        g = upcast(grad_output).reshape(xhat.shape)
        grad_weight = grad_x = None
        with RowBuffers(xhat.shape[1]):
            if self.needs_input_grad[1]:
                grad_weight = column_dot(g, xhat).reshape(self.normalized_shape)
            if self.needs_input_grad[0]:
                # s = g w / rms (as in layer_norm's rule); dx = s - x̂ mean(s x̂)
                if weight is not None:
                    scaled = np.multiply(inverse_rms, upcast(weight).reshape(-1))
                    scaled *= g
                else:
                    scaled = np.multiply(g, inverse_rms)
                correction = np.multiply(xhat, row_dot(scaled, xhat) / count)
                scaled -= correction
                grad_x = reshaped(scaled, grad_output.shape)
        return grad_x, grad_weight

    def backward_composed(self, grad_output, x, weight):
        k = len(self.normalized_shape)
        axes = tuple(range(x.ndim - k, x.ndim))
        g = upcast(grad_output)
        x = upcast(x)
        inverse_rms = ((x * x).mean(axis=axes, keepdims=True) + self.eps) ** -0.5
        xhat = x * inverse_rms
        grad_xhat = g * upcast(weight) if weight is not None else g
        projection = (grad_xhat * xhat).mean(axis=axes, keepdims=True)
        grad_x = (grad_xhat - xhat * projection) * inverse_rms
        grad_weight = None
        if weight is not None:
            grad_weight = summed_over(g * xhat, tuple(range(x.ndim - k)))
        return grad_x, grad_weight


class BatchNorm(Op):
    """Training: y = x̂ w + b, x̂ = (x - mean) / sqrt(var + eps), mean and biased var per
    channel (dim 1) over every other dim; dx = (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)) / std
    with dx̂ = g w. Eval: x̂ = (x - running_mean) / sqrt(running_var + eps), a constant
    affine map, so dx = g w / sqrt(running_var + eps). Both: dw = sum g x̂, db = sum g."""

    __slots__ = ("training", "eps")

    def forward(self, x, weight, bias, running_mean, running_var, training, momentum, eps):
        check_float("batch_norm", x)
        if x.ndim < 2:
            raise ShapeError(
                f"batch_norm: expected an input of shape (N, C) or (N, C, ...) with the "
                f"channels on dim 1, got shape {x.shape}"
            )
        channels = x.shape[1]
        check_affine("batch_norm", "weight", weight, (channels,), x)
        check_affine("batch_norm", "bias", bias, (channels,), x)
        for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
            if stat is not None and stat.shape != (channels,):
                raise ShapeError(
                    f"batch_norm: {name} has shape {stat.shape}, expected ({channels},) "
                    f"for an input of shape {x.shape}"
                )
        self.training = training
        self.eps = eps
        # Channels last, as a (rows, C) matrix: per-channel statistics are column reductions.
        columns = as_rows(upcast(x), 1)
        count = columns.shape[0]
        if training:
            if count == 0:
                raise ValueError(
                    f"batch_norm: cannot compute batch statistics of an empty batch (input "
                    f"shape {x.shape}) in training mode"
                )
            if count == 1:
                raise ValueError(
                    "batch_norm: expected more than 1 value per channel when training, got "
                    f"input of shape {x.shape}"
                )
            mean = column_sum(columns) / count
            with RowBuffers(columns.shape[1]):
                centered = np.subtract(columns, mean)
            variance = column_dot(centered, centered) / count
            if running_mean is not None:
                running_mean *= 1 - momentum
                running_mean += momentum * mean
            if running_var is not None:
                running_var *= 1 - momentum
                running_var += (momentum * count / (count - 1)) * variance
            inverse_std = np.reciprocal(np.sqrt(variance + eps))
        else:
            if running_mean is None or running_var is None:
                raise ArgumentError("batch_norm: eval mode needs running_mean and running_var")
            inverse_std = np.reciprocal(np.sqrt(upcast(running_var) + eps))
            with RowBuffers(columns.shape[1]):
                centered = np.subtract(columns, upcast(running_mean))
            running_mean = running_mean.copy()  # a constant of backward, whatever comes next
        # Every factor is per channel, so x̂ w = (x - mean) · (w / std): one pass, and x̂
        # itself is never stored (backward folds 1/std into its per-channel sums).
        self.save_for_backward(x, weight, centered, inverse_std, None if training else running_mean)
        scale = inverse_std * upcast(weight) if weight is not None else inverse_std
        with RowBuffers(columns.shape[1]):
            out = np.multiply(centered, scale)
            if bias is not None:
                out += upcast(bias)
        return from_rows(out, x.shape, 1).astype(x.dtype, copy=False)

    def backward(self, grad_output):
        if self.graph_mode is not False:
            return like_inputs(self, self.backward_composed(grad_output))
        _, weight, centered, inverse_std, _ = self.saved_tensors
        needs_x, needs_weight, needs_bias = self.needs_input_grad
        g = as_rows(upcast(grad_output), 1)
        count = centered.shape[0]
        grad_sum = column_sum(g) if needs_bias or (needs_x and self.training) else None
        # sum over the batch of g x̂ = (sum of g (x - mean)) / std
        projection = None
        if needs_weight or (needs_x and self.training):
            projection = column_dot(g, centered) * inverse_std
        grad_x = None
        if needs_x:
            scale = inverse_std * upcast(weight) if weight is not None else inverse_std
            with RowBuffers(g.shape[1]):
                grad_x = np.multiply(g, scale)
                if self.training:
                    # dx = (w/std) (g - mean(g) - x̂ mean(g x̂)), regrouped per channel:
                    # g·(w/std) - (x - mean)·(w/std² · mean(g x̂)) - (w/std)·mean(g)
                    correction = np.multiply(centered, scale * inverse_std * (projection / count))
                    correction += scale * (grad_sum / count)
                    grad_x -= correction
            grad_x = from_rows(grad_x, grad_output.shape, 1)
        grad_weight = projection if needs_weight else None
        return grad_x, grad_weight, grad_sum if needs_bias else None

    def backward_composed(self, grad_output):
        x, weight, _, inverse_std, running_mean = self.saved_tensors
        bias = self.inputs[2]
        axes = (0, *range(2, x.ndim))  # every dim but the channels'
        channel_shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        g = upcast(grad_output)
        x = upcast(x)
        if self.training:
            xhat, inverse_std = statistics_composed(x, axes, self.eps)
        else:
            inverse_std = inverse_std.reshape(channel_shape)
            xhat = (x - upcast(running_mean).reshape(channel_shape)) * inverse_std
        scale = upcast(weight).reshape(channel_shape) if weight is not None else None
        grad_xhat = g * scale if scale is not None else g
        if self.training:
            grad_x = norm_input_grad_composed(grad_xhat, xhat, inverse_std, axes)
        else:
            grad_x = grad_xhat * inverse_std
        grad_weight = (g * xhat).sum(axis=axes) if weight is not None else None
        grad_bias = g.sum(axis=axes) if bias is not None else None
        return grad_x, grad_weight, grad_bias


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each of `num_groups` groups of channels (dim 1) of each sample over its
    channels and every later dim, then scale and shift per channel: Wu & He 2018, as
    torch.nn.functional.group_norm. A layer norm of the (N, groups, rest) view, so its
    gradients are LayerNorm's.

    >>> import tinygrad_ops as tg
    >>> out = group_norm(tg.randn(2, 4, 3, seed=0), 2)
    >>> bool(abs(out.numpy().reshape(2, 2, 6).mean(axis=2)).max() < 1e-6)
    True
    """
    if not is_tensor(input):
        raise TypeError(f"group_norm: input must be a Tensor, got {type(input).__name__}")
    if input.ndim < 2:
        raise ShapeError(f"group_norm: expected an input of shape (N, C, ...), got {input.shape}")
    channels = input.shape[1]
    if not isinstance(num_groups, int) or num_groups < 1 or channels % num_groups:
        raise ArgumentError(
            f"group_norm: num_groups must be a positive int that divides the {channels} "
            f"channels, got {num_groups!r}"
        )
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and tuple(value.shape) != (channels,):
            raise ShapeError(
                f"group_norm: {name} has shape {tuple(value.shape)}, expected ({channels},)"
            )
    grouped = input.reshape(input.shape[0], num_groups, -1)
    out = LayerNorm.apply(
        grouped, None, None, normalized_shape=(grouped.shape[-1],), eps=float(eps)
    ).reshape(input.shape)
    per_channel = (channels,) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    return out
