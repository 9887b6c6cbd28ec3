"""The one shared random generator, as PyTorch's default generator: `manual_seed(n)` reseeds
it, so `tg.manual_seed(0)` then randn, rand, dropout, `uniform_`/`normal_` and layers'
initial weights repeat exactly. A module of its own, below the tensors: the creation
functions and the in-place fills both draw from it.
"""

import numpy as np

_DEFAULT = {"generator": np.random.default_rng()}


def manual_seed(seed):
    """Reseed the generator that tg.randn/tg.rand, F.dropout, layers' initial weights (and
    the training command) draw from, as torch.manual_seed.

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
