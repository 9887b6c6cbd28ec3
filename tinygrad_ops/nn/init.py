"""Random initialisation, as PyTorch does it, from one seedable generator.

Every layer draws its initial weights from `default_generator()` unless it is given its
own `generator=` (a `numpy.random.Generator`). `tg.manual_seed(n)` reseeds that shared
generator, so `tg.manual_seed(0); model = build()` gives the same model every time.
Its state can be read and restored (`get_rng_state`/`set_rng_state`), which is what a
checkpoint needs to resume a run exactly.

The in-place initialisers of `torch.nn.init` (`xavier_uniform_`, `kaiming_normal_`,
`zeros_`, ...) draw from the same generator: `tg.nn.init.xavier_uniform_(layer.weight)`.
"""

import math

# The shared generator lives with the tensor creators (tg.randn draws from it too); the
# layers' initialisers below draw from it, and these names are re-exported here.
from ..creation import default_generator, get_rng_state, manual_seed, set_rng_state  # noqa: F401
from ..mode import no_grad


def uniform(shape, bound, dtype, generator=None):
    """Samples from U(-bound, bound) as an array of `dtype`.

    >>> import numpy as np
    >>> uniform((2, 3), 0.5, np.float32, np.random.default_rng(0)).shape
    (2, 3)
    """
    generator = default_generator() if generator is None else generator
    return generator.uniform(-bound, bound, size=shape).astype(dtype)


def fan_in_bound(fan_in):
    """The bound 1/sqrt(fan_in) of PyTorch's default Linear init.

    PyTorch initialises Linear weights with kaiming_uniform(a=sqrt(5)): bound =
    gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + a²)) = sqrt(1/3), which is exactly
    1 / sqrt(fan_in); the bias uses the same bound (torch.nn.Linear.reset_parameters).

    >>> fan_in_bound(4)
    0.5
    """
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0


# -- torch.nn.init's in-place initialisers (the formulas of PyTorch's documentation) ------


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity, as `torch.nn.init.calculate_gain`:
    1 for linear, conv and sigmoid, 5/3 for tanh, sqrt(2) for relu,
    sqrt(2 / (1 + slope²)) for leaky_relu (slope `param`, default 0.01), 3/4 for selu.

    >>> round(calculate_gain("tanh"), 4), round(calculate_gain("relu"), 4)
    (1.6667, 1.4142)
    """
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")  # fmt: skip
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"calculate_gain: negative_slope {slope!r} is not a number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(tensor, op_name):
    """(fan_in, fan_out) of a weight: (out, in, *kernel) counts in * kernel and out * kernel."""
    if tensor.ndim < 2:
        raise ValueError(
            f"{op_name}: fan in and fan out cannot be computed for a tensor with fewer than 2 "
            f"dims (shape {tensor.shape})"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _write(tensor, values):
    """Overwrite `tensor`'s values in place, off the tape (torch.nn.init runs under no_grad)."""
    with no_grad():
        tensor[...] = values
    return tensor


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill `tensor` with samples of U(a, b), in place; return it."""
    generator = default_generator() if generator is None else generator
    return _write(tensor, generator.uniform(a, b, size=tensor.shape))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill `tensor` with samples of N(mean, std²), in place; return it."""
    generator = default_generator() if generator is None else generator
    return _write(tensor, generator.normal(mean, std, size=tensor.shape))


def constant_(tensor, val):
    """Fill `tensor` with `val`, in place; return it."""
    return _write(tensor, val)


def zeros_(tensor):
    """Fill `tensor` with zeros, in place; return it (a bias, as `nn.init.zeros_(layer.bias)`)."""
    return constant_(tensor, 0.0)


def ones_(tensor):
    """Fill `tensor` with ones, in place; return it."""
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot & Bengio (2010): U(-a, a) with a = gain sqrt(6 / (fan_in + fan_out)), in place.

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.Linear(300, 100)
    >>> _ = tg.nn.init.xavier_uniform_(layer.weight)
    >>> bool(abs(layer.weight.numpy()).max() <= (6 / 400) ** 0.5)
    True
    """
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot & Bengio (2010): N(0, std²) with std = gain sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity, op_name):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{op_name}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor, op_name)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He et al. (2015): U(-b, b) with b = gain sqrt(3 / fan), fan by `mode`, in place."""
    std = _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_")
    return uniform_(tensor, -math.sqrt(3.0) * std, math.sqrt(3.0) * std, generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He et al. (2015): N(0, std²) with std = gain / sqrt(fan), fan by `mode`, in place."""
    std = _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_")
    return normal_(tensor, 0.0, std, generator)
