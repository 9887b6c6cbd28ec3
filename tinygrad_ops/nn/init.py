"""Random initialisation, as PyTorch does it, from one seedable generator.

Every layer draws its initial weights from `default_generator()` unless it is given its
own `generator=` (a `numpy.random.Generator`). `tg.manual_seed(n)` reseeds that shared
generator, so `tg.manual_seed(0); model = build()` gives the same model every time.
Its state can be read and restored (`get_rng_state`/`set_rng_state`), which is what a
checkpoint needs to resume a run exactly.
"""

import math

# The shared generator lives with the tensor creators (tg.randn draws from it too); the
# layers' initialisers below draw from it, and these names are re-exported here.
from ..creation import default_generator, get_rng_state, manual_seed, set_rng_state  # noqa: F401


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
