"""`Linear`: y = x Wᵀ + b, with PyTorch's weight layout and default initialisation."""

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..tensor import DEFAULT_DTYPE
from .init import fan_in_bound, uniform
from .module import Module, Parameter


class Linear(Module):
    """y = x Wᵀ + b with W of shape (out_features, in_features), as PyTorch, so a PyTorch
    state dict loads as it is. W and b start as U(-1/√in, 1/√in) (PyTorch's default),
    drawn from `generator` or the generator `tg.manual_seed` reseeds.

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.Linear(3, 2)
    >>> layer.weight.shape, layer.bias.shape
    ((2, 3), (2,))
    >>> layer(tg.ones(4, 3)).shape
    (4, 2)
    """

    def __init__(self, in_features, out_features, bias=True, dtype=DEFAULT_DTYPE, generator=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bound = fan_in_bound(in_features)
        self.weight = Parameter(uniform((out_features, in_features), bound, dtype, generator))
        if bias:
            self.bias = Parameter(uniform((out_features,), bound, dtype, generator))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        if x.shape[-1:] != (self.in_features,):
            raise ValueError(
                f"Linear(in_features={self.in_features}): the input's last dimension must be "
                f"{self.in_features}, got an input of shape {x.shape}"
            )
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


__all__ = ["Linear"]
