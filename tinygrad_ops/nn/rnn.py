"""`RNNCell`: one step of an Elman recurrent network; `RNN`: the network over a sequence."""

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..control_flow import scan
from ..creation import zeros
from ..tensor import DEFAULT_DTYPE, stack
from .init import fan_in_bound, uniform
from .module import Module, Parameter


def check_layer_options(name, num_layers, dropout, bidirectional=False):
    """The stacked recurrent layers' options this engine does not have (dropout between
    layers, both directions) and a layer count of at least one, or a ValueError naming them."""
    if dropout:
        raise ValueError(f"{name}: dropout between layers is not implemented (use dropout=0)")
    if bidirectional:
        raise ValueError(f"{name}: bidirectional=True is not implemented")
    if num_layers < 1:
        raise ValueError(f"{name}: num_layers must be at least 1, got {num_layers}")


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


class RNN(Module):
    """An Elman RNN over a sequence, PyTorch's `nn.RNN`: for every layer k and step t,
    h_t = tanh(x_t W_ih_kᵀ + b_ih_k + h_{t-1} W_hh_kᵀ + b_hh_k) (or relu), the states of
    layer k the inputs of layer k + 1. Input (T, N, input_size) ((N, T, ...) with
    `batch_first`, or (T, input_size) unbatched); returns (output, h_n): the top layer's
    states (T, N, hidden_size) and every layer's last state (num_layers, N, hidden_size).
    Parameters as PyTorch names and draws them (weight_ih_l0, weight_hh_l0, bias_ih_l0,
    bias_hh_l0, ...). Each layer projects its whole input at once (x W_ihᵀ + b_ih + b_hh,
    one product) and runs the rest of its step as a `tg.scan`: its states are one
    declared chain, which the scan schedulers take;
    `dropout` between layers is not implemented (a ValueError, not a silent zero).

    >>> import tinygrad_ops as tg
    >>> rnn = tg.nn.RNN(3, 5, num_layers=2)
    >>> output, h_n = rnn(tg.zeros(7, 2, 3))
    >>> output.shape, h_n.shape
    ((7, 2, 5), (2, 2, 5))
    """

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        nonlinearity="tanh",
        bias=True,
        batch_first=False,
        dropout=0.0,
        dtype=DEFAULT_DTYPE,
        generator=None,
    ):
        super().__init__()
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', not {nonlinearity!r}")
        check_layer_options("RNN", num_layers, dropout)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.nonlinearity = nonlinearity
        self.bias = bias
        self.batch_first = batch_first
        bound = fan_in_bound(hidden_size)
        for layer in range(num_layers):
            size_in = input_size if layer == 0 else hidden_size
            # PyTorch draws in this order, layer by layer.
            shapes = [("weight_ih", (hidden_size, size_in)), ("weight_hh", (hidden_size,) * 2)]
            if bias:
                shapes += [("bias_ih", (hidden_size,)), ("bias_hh", (hidden_size,))]
            for name, shape in shapes:
                value = Parameter(uniform(shape, bound, dtype, generator))
                setattr(self, f"{name}_l{layer}", value)

    def forward(self, input, hx=None):
        batched = input.ndim == 3
        if input.ndim not in (2, 3) or input.shape[-1] != self.input_size:
            raise ValueError(
                f"RNN(input_size={self.input_size}): expected an input of shape (T, N, "
                f"{self.input_size}) or (T, {self.input_size}), got {input.shape}"
            )
        if batched and self.batch_first:
            input = input.swapaxes(0, 1)
        rows = input.shape[1:-1]
        if hx is None:
            hx = zeros(self.num_layers, *rows, self.hidden_size, dtype=self.weight_ih_l0.dtype)
        elif tuple(hx.shape) != (self.num_layers, *rows, self.hidden_size):
            raise ValueError(
                f"RNN: hx must have shape {(self.num_layers, *rows, self.hidden_size)}, "
                f"got {hx.shape}"
            )
        if not batched:  # a batch of one, as PyTorch runs it (the state a matrix)
            input, hx = input[:, None], hx[:, None]
        output = input
        last_states = []
        for layer in range(self.num_layers):
            projected, step = self._layer(layer, output)
            last, output = scan(step, hx[layer], projected)
            last_states.append(last)
        last_states = stack(last_states)
        if not batched:
            return output[:, 0], last_states[:, 0]
        if self.batch_first:
            output = output.swapaxes(0, 1)
        return output, last_states

    def _layer(self, layer, inputs):
        """Layer `layer` as a `tg.scan`: the part of its steps that does not read the
        state, x_t W_ihᵀ + b_ih + b_hh, for every step at once (one product over the
        whole sequence, as cuDNN does), and the step that reads it, h' = tanh(p_t +
        h W_hhᵀ): the chain `tg.scan` declares. (W_hhᵀ is taken once: `h @ W_hhᵀ` costs
        a step less than `F.linear(h, W_hh)`, measured 7% of a compiled forward.)"""
        weight_hh_t = getattr(self, f"weight_hh_l{layer}").T
        bias_hh = getattr(self, f"bias_hh_l{layer}", None)
        projected = F.linear(
            inputs, getattr(self, f"weight_ih_l{layer}"), getattr(self, f"bias_ih_l{layer}", None)
        )
        if bias_hh is not None:
            projected = projected + bias_hh
        activation = F.tanh if self.nonlinearity == "tanh" else F.relu

        def step(state, projected_input):
            state = activation(projected_input + state @ weight_hh_t)
            return state, state

        return projected, step

    def extra_repr(self):
        return (
            f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
            f"nonlinearity={self.nonlinearity!r}"
        )
