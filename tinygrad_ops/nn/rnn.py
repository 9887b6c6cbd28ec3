"""`RNNCell`: one step of an Elman recurrent network."""

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..creation import zeros
from ..tensor import DEFAULT_DTYPE
from .init import fan_in_bound, uniform
from .module import Module, Parameter


class RNNCell(Module):
    """h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu), with PyTorch's parameter
    names and shapes (W_ih: (hidden, input), W_hh: (hidden, hidden)); every weight
    starts as U(-1/√hidden, 1/√hidden), PyTorch's default. `hx=None` starts from zeros.

    >>> import tinygrad_ops as tg
    >>> cell = tg.nn.RNNCell(3, 5)
    >>> h = cell(tg.zeros(2, 3))
    >>> h = cell(tg.zeros(2, 3), h)
    >>> h.shape
    (2, 5)
    """

    def __init__(
        self,
        input_size,
        hidden_size,
        bias=True,
        nonlinearity="tanh",
        dtype=DEFAULT_DTYPE,
        generator=None,
    ):
        super().__init__()
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"RNNCell: nonlinearity must be 'tanh' or 'relu', not {nonlinearity!r}"
            )
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.nonlinearity = nonlinearity
        bound = fan_in_bound(hidden_size)
        # PyTorch draws in this order (weight_ih, weight_hh, bias_ih, bias_hh).
        self.weight_ih = Parameter(uniform((hidden_size, input_size), bound, dtype, generator))
        self.weight_hh = Parameter(uniform((hidden_size, hidden_size), bound, dtype, generator))
        if bias:
            self.bias_ih = Parameter(uniform((hidden_size,), bound, dtype, generator))
            self.bias_hh = Parameter(uniform((hidden_size,), bound, dtype, generator))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def forward(self, x, hx=None):
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(
                f"RNNCell(input_size={self.input_size}): expected an input of shape (N, "
                f"{self.input_size}) or ({self.input_size},), got {x.shape}"
            )
        if hx is None:
            hx = zeros(*x.shape[:-1], self.hidden_size, dtype=self.weight_ih.dtype)
        pre_activation = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(
            hx, self.weight_hh, self.bias_hh
        )
        if self.nonlinearity == "tanh":
            return F.tanh(pre_activation)
        return F.relu(pre_activation)

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}, nonlinearity={self.nonlinearity!r}"
