"""Random initialisation, as PyTorch does it, from one seedable generator.

Every layer draws its initial weights from `default_generator()` unless it is given its
own `generator=` (a `numpy.random.Generator`). `tg.manual_seed(n)` reseeds that shared
generator, so `tg.manual_seed(0); model = build()` gives the same model every time.
Its state can be read and restored (`get_rng_state`/`set_rng_state`), which is what a
checkpoint needs to resume a run exactly.
"""

import math

import numpy as np

_DEFAULT = {"generator": np.random.default_rng()}


def manual_seed(seed):
    """Reseed the generator that layers (and the training command) draw from.

    >>> import tinygrad_ops as tg
    >>> tg.manual_seed(0)
    >>> first = tg.nn.Linear(2, 2).weight.numpy().copy()
    >>> tg.manual_seed(0)
    >>> bool((tg.nn.Linear(2, 2).weight.numpy() == first).all())
    True
    """
    _DEFAULT["generator"] = np.random.default_rng(seed)


def default_generator():
    """The shared `numpy.random.Generator` that `manual_seed` reseeds."""
    return _DEFAULT["generator"]


def get_rng_state():
    """The shared generator's state, a plain dict of numbers (JSON-friendly).

    >>> import tinygrad_ops as tg
    >>> state = tg.nn.get_rng_state()
    >>> first = tg.nn.Linear(2, 2).weight.numpy().copy()
    >>> tg.nn.set_rng_state(state)
    >>> bool((tg.nn.Linear(2, 2).weight.numpy() == first).all())
    True
    """
    return _DEFAULT["generator"].bit_generator.state


def set_rng_state(state):
    """Restore a state returned by `get_rng_state` (what a resumed checkpoint does).

    >>> import tinygrad_ops as tg
    >>> state = tg.nn.get_rng_state()
    >>> tg.nn.set_rng_state(state)
    >>> tg.nn.get_rng_state() == state
    True
    """
    generator = np.random.default_rng()
    generator.bit_generator.state = state
    _DEFAULT["generator"] = generator


def uniform(shape, bound, dtype, generator=None):
    """Samples from U(-bound, bound) as an array of `dtype`.

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
