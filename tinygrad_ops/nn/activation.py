"""Activation layers: thin Modules around the functions in `tinygrad_ops.functional`, so
they can sit in a `Sequential`."""

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from .init import default_generator
from .module import Module


class ReLU(Module):
    """max(x, 0) elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.ReLU()(tg.Tensor([-1.0, 2.0])).numpy()
    array([0., 2.], dtype=float32)
    """

    def forward(self, x):
        return F.relu(x)


class Tanh(Module):
    """tanh(x) elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.Tanh()(tg.Tensor([0.0])).numpy()
    array([0.], dtype=float32)
    """

    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)) elementwise.

    >>> import tinygrad_ops as tg
    >>> tg.nn.Sigmoid()(tg.Tensor([0.0])).numpy()
    array([0.5], dtype=float32)
    """

    def forward(self, x):
        return F.sigmoid(x)


class GELU(Module):
    """x Φ(x) with the exact normal CDF Φ (PyTorch's default, approximate='none').

    >>> import tinygrad_ops as tg
    >>> tg.nn.GELU()(tg.Tensor([0.0])).numpy()
    array([0.], dtype=float32)
    """

    def forward(self, x):
        return F.gelu(x)


class Dropout(Module):
    """In training, zero each element with probability p and scale the rest by 1/(1-p), so
    the expected value is unchanged; in eval mode, the identity. The mask is drawn from
    `generator`, else from the generator `tg.manual_seed` reseeds.

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.Dropout(0.5).eval()
    >>> layer(tg.ones(3)).numpy()
    array([1., 1., 1.], dtype=float32)
    """

    def __init__(self, p=0.5, generator=None):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be between 0 and 1, got {p}")
        self.p = p
        self.generator = generator

    def forward(self, x):
        generator = default_generator() if self.generator is None else self.generator
        return F.dropout(x, self.p, self.training, generator=generator)

    def extra_repr(self):
        return f"p={self.p}"


class Flatten(Module):
    """Reshape (N, d1, d2, ...) to (N, d1 * d2 * ...).

    >>> import tinygrad_ops as tg
    >>> tg.nn.Flatten()(tg.zeros(2, 8, 8)).shape
    (2, 64)
    """

    def forward(self, x):
        return x.reshape(x.shape[0], -1)
