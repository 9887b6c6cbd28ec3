"""Normalisation layers: LayerNorm, RMSNorm (per sample) and BatchNorm1d (per feature,
over the batch, with running statistics kept as buffers)."""

import numpy as np

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..mode import no_grad
from ..tensor import DEFAULT_DTYPE, Tensor
from .module import Module, Parameter


def _as_shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


def _per_channel_affine(module, channels, affine, dtype):
    """BatchNorm's and GroupNorm's `weight` (ones) and `bias` (zeros) per channel, as
    Parameters when `affine`, else registered as None (as PyTorch's state dicts)."""
    if affine:
        module.weight = Parameter(np.ones(channels, dtype=dtype))
        module.bias = Parameter(np.zeros(channels, dtype=dtype))
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _running_statistics(module, channels, track, dtype):
    """BatchNorm's and InstanceNorm's buffers: `running_mean` (zeros), `running_var` (ones)
    and `num_batches_tracked` when `track` (track_running_stats), else registered as None
    (as PyTorch's state dicts)."""
    if track:
        module.register_buffer("running_mean", Tensor(np.zeros(channels, dtype=dtype)))
        module.register_buffer("running_var", Tensor(np.ones(channels, dtype=dtype)))
        module.register_buffer("num_batches_tracked", Tensor(np.array(0, dtype=np.int64)))
    else:
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            module.register_buffer(name, None)


class _TrailingNorm(Module):
    """What LayerNorm and RMSNorm share: the trailing shape they normalise over, eps, and a
    weight of ones (a Parameter when elementwise_affine, else None)."""

    def __init__(self, normalized_shape, eps, elementwise_affine, dtype):
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class LayerNorm(_TrailingNorm):
    """Normalise over the last len(normalized_shape) dims to zero mean and unit variance,
    then scale by `weight` (ones) and shift by `bias` (zeros): Ba, Kiros & Hinton 2016.

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.LayerNorm(4)
    >>> out = layer(tg.randn(2, 4, seed=0))
    >>> [round(float(v), 4) for v in out.numpy().mean(axis=1)]
    [0.0, 0.0]
    """

    def __init__(
        self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, dtype=DEFAULT_DTYPE
    ):
        super().__init__(normalized_shape, eps, elementwise_affine, dtype)
        if elementwise_affine and bias:
            self.bias = Parameter(np.zeros(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(_TrailingNorm):
    """Divide by the root mean square over the last dims, then scale by `weight` (ones):
    Zhang & Sennrich 2019. `eps=None` uses the dtype's machine epsilon, as PyTorch.

    >>> import tinygrad_ops as tg
    >>> out = tg.nn.RMSNorm(2)(tg.Tensor([[3.0, 4.0]]))
    >>> [round(float(v), 3) for v in out.numpy()[0]]
    [0.849, 1.131]
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, dtype=DEFAULT_DTYPE):
        super().__init__(normalized_shape, eps, elementwise_affine, dtype)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)


class BatchNorm1d(Module):
    """Normalise each feature over the batch (Ioffe & Szegedy 2015); input (N, C) or
    (N, C, L). In training mode the batch statistics are used and the running ones
    updated (running = (1 - momentum) running + momentum batch, with the unbiased batch
    variance); in eval mode the running statistics are used. `momentum=None` uses the
    cumulative average 1/num_batches_tracked, as PyTorch.

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.BatchNorm1d(3)
    >>> _ = layer(tg.randn(8, 3, seed=0))
    >>> [name for name, _ in layer.state_dict().items()]
    ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    """

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        dtype=DEFAULT_DTYPE,
    ):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _per_channel_affine(self, num_features, affine, dtype)
        _running_statistics(self, num_features, track_running_stats, dtype)

    input_ndims = (2, 3)  # (N, C) or (N, C, L); BatchNorm2d takes (N, C, H, W)

    def forward(self, x):
        if x.ndim not in self.input_ndims or x.shape[1] != self.num_features:
            raise ValueError(
                f"{type(self).__name__}({self.num_features}): expected an input of shape "
                f"{self.expected_shapes()}, got {x.shape}"
            )
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():  # an op, not `.data += 1`, so that tg.compile replays it
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item())
        # Batch statistics in training, or always when no running statistics are kept.
        use_batch_statistics = self.training or not self.track_running_stats
        return F.batch_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            training=use_batch_statistics,
            momentum=momentum,
            eps=self.eps,
        )

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, track_running_stats={self.track_running_stats}"
        )

    def expected_shapes(self):
        channels = self.num_features
        return f"(N, {channels}) or (N, {channels}, L)"


class BatchNorm2d(BatchNorm1d):
    """BatchNorm1d for images: each channel normalised over the batch and both spatial
    dims of an (N, C, H, W) input, as torch.nn.BatchNorm2d (same state dict).

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.BatchNorm2d(3)
    >>> out = layer(tg.randn(4, 3, 5, 5, seed=0))
    >>> out.shape, bool(abs(out.numpy().mean(axis=(0, 2, 3))).max() < 1e-6)
    ((4, 3, 5, 5), True)
    """

    input_ndims = (4,)

    def expected_shapes(self):
        return f"(N, {self.num_features}, H, W)"


class GroupNorm(Module):
    """Normalise groups of channels of each sample (Wu & He 2018), then scale and shift
    per channel (`weight` ones, `bias` zeros), as torch.nn.GroupNorm: input (N, C, ...).

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.GroupNorm(2, 4)
    >>> layer(tg.randn(3, 4, 5, seed=0)).shape, [name for name in layer.state_dict()]
    ((3, 4, 5), ['weight', 'bias'])
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, dtype=DEFAULT_DTYPE):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(
                f"GroupNorm: num_groups {num_groups} must divide num_channels {num_channels}"
            )
        self.num_groups, self.num_channels, self.eps, self.affine = (
            num_groups,
            num_channels,
            eps,
            affine,
        )
        _per_channel_affine(self, num_channels, affine, dtype)

    def forward(self, x):
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(
                f"GroupNorm({self.num_groups}, {self.num_channels}): expected an input of "
                f"shape (N, {self.num_channels}, ...), got {x.shape}"
            )
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class _InstanceNorm(Module):
    """What InstanceNorm1d and InstanceNorm2d share (`spatial` dims after N and C)."""

    spatial = 1

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=False,
        track_running_stats=False,
        dtype=DEFAULT_DTYPE,
    ):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _per_channel_affine(self, num_features, affine, dtype)
        _running_statistics(self, num_features, track_running_stats, dtype)

    def forward(self, x):
        name = type(self).__name__
        unbatched = x.ndim == self.spatial + 1
        if x.ndim not in (self.spatial + 1, self.spatial + 2):
            raise ValueError(
                f"{name}: expected a {self.spatial + 2}-d (N, C, ...) or {self.spatial + 1}-d "
                f"(C, ...) input, got shape {x.shape}"
            )
        batched = x.unsqueeze(0) if unbatched else x
        if (self.affine or self.track_running_stats) and batched.shape[1] != self.num_features:
            raise ValueError(
                f"{name}({self.num_features}): expected the input's size at dim 1 (channels) "
                f"to be {self.num_features}, got shape {x.shape}"
            )
        # (num_batches_tracked stays 0: PyTorch's instance norms keep it but never count)
        out = F.instance_norm(
            batched,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_input_stats=self.training or not self.track_running_stats,
            momentum=0.0 if self.momentum is None else self.momentum,
            eps=self.eps,
        )
        return out[0] if unbatched else out

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, track_running_stats={self.track_running_stats}"
        )


class InstanceNorm1d(_InstanceNorm):
    """Normalise each channel of each sample over its length (Ulyanov et al. 2016), as
    torch.nn.InstanceNorm1d: input (N, C, L) or (C, L); no affine and no running statistics
    unless asked for (PyTorch's defaults).

    >>> import tinygrad_ops as tg
    >>> out = tg.nn.InstanceNorm1d(3)(tg.randn(2, 3, 5, seed=0))
    >>> bool(abs(out.numpy().mean(axis=2)).max() < 1e-6)
    True
    """

    spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Normalise each channel of each image over its height and width, as
    torch.nn.InstanceNorm2d: input (N, C, H, W) or (C, H, W).

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.InstanceNorm2d(3, affine=True, track_running_stats=True)
    >>> [name for name in layer.state_dict()]
    ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    """

    spatial = 2
