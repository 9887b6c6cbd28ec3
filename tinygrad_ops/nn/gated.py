"""The gated recurrent networks, as PyTorch defines them: `LSTMCell`/`LSTM` and
`GRUCell`/`GRU`, with PyTorch's gate order, parameter names and shapes (so that a state
dict carries over) and its default init, every weight U(-1/√hidden, 1/√hidden).

Each is composed of Linear, slices, sigmoid, tanh and products: backward is those ops'
rules. The networks project each layer's whole input at once (x W_ihᵀ + b_ih, one product
over the sequence, as cuDNN does) and run the part of the step that reads the state as a
`tg.scan`, which declares its chain of states to the scan schedulers: a GRU's state is
one tensor, a chain the scans take; an LSTM's is two (h and c each feed the other's next
step), so its backward is walked.

LSTM (gates i, f, g, o in that order: rows 0..H-1, H..2H-1, ... of W_ih and W_hh)
    i, f, o = σ(x W_iᵀ + b_i + h W_hᵀ + b_h) (their rows);  g = tanh(... its rows)
    c' = f c + i g;   h' = o tanh(c')
GRU (gates r, z, n)
    r, z = σ(x W_iᵀ + b_i + h W_hᵀ + b_h) (their rows)
    n = tanh(x W_inᵀ + b_in + r (h W_hnᵀ + b_hn));   h' = (1 - z) n + z h
(torch.nn.LSTM's and torch.nn.GRU's documentation gives the same equations.)
"""

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..control_flow import scan
from ..creation import zeros
from ..tensor import DEFAULT_DTYPE, stack
from .init import fan_in_bound, uniform
from .module import Module, Parameter
from .rnn import check_layer_options


def _make_weights(module, gates, input_size, hidden_size, bias, suffix, dtype, generator):
    """weight_ih, weight_hh (and bias_ih, bias_hh) with `gates` blocks of rows, drawn in
    PyTorch's order; `suffix` is "" for a cell, "_l0", "_l1", ... for a layer."""
    bound = fan_in_bound(hidden_size)
    rows = gates * hidden_size
    shapes = [("weight_ih", (rows, input_size)), ("weight_hh", (rows, hidden_size))]
    if bias:
        shapes += [("bias_ih", (rows,)), ("bias_hh", (rows,))]
    for name, shape in shapes:
        setattr(module, name + suffix, Parameter(uniform(shape, bound, dtype, generator)))
    if not bias:
        module.register_parameter("bias_ih" + suffix, None)
        module.register_parameter("bias_hh" + suffix, None)


def _blocks(value, count):
    """`value`'s last dim cut into `count` equal blocks (the gates): the pieces of
    `value.chunk(count, dim=-1)`, which the scans take as well, without chunk's argument
    checks (measured: a GRU's forward and backward over 64 steps at hidden 8 took 10%
    longer with chunk, 29.5-31 ms against 26-27 ms)."""
    size = value.shape[-1] // count
    return [value[..., block * size : (block + 1) * size] for block in range(count)]


def lstm_step(gates, c):
    """The rest of an LSTM step, given its gates x W_ihᵀ + b_ih + h W_hhᵀ + b_hh:
    (h', c') from c."""
    i, f, g, o = _blocks(gates, 4)
    c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
    return F.sigmoid(o) * F.tanh(c), c


def gru_step(projected, h, weight_hh, bias_hh):
    """One GRU step: h' from h, given the input's part of the gates, x W_ihᵀ + b_ih cut
    into its three blocks (`projected`: r, z, n)."""
    input_r, input_z, input_n = projected
    hidden_r, hidden_z, hidden_n = _blocks(F.linear(h, weight_hh, bias_hh), 3)
    r = F.sigmoid(input_r + hidden_r)
    z = F.sigmoid(input_z + hidden_z)
    n = F.tanh(input_n + r * hidden_n)
    return (1 - z) * n + z * h


class _GatedCell(Module):
    gates = 0

    def __init__(self, input_size, hidden_size, bias=True, dtype=DEFAULT_DTYPE, generator=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        _make_weights(self, self.gates, input_size, hidden_size, bias, "", dtype, generator)

    def _check(self, x):
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(
                f"{type(self).__name__}(input_size={self.input_size}): expected an input of "
                f"shape (N, {self.input_size}) or ({self.input_size},), got {x.shape}"
            )
        return zeros(*x.shape[:-1], self.hidden_size, dtype=self.weight_ih.dtype)

    def _projected(self, x):
        """The input's part of the gates, x W_ihᵀ + b_ih."""
        return F.linear(x, self.weight_ih, self.bias_ih)

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}"


class LSTMCell(_GatedCell):
    """One LSTM step, PyTorch's `nn.LSTMCell`: `cell(x, (h, c))` returns `(h', c')`
    (zeros for `hx=None`); weight_ih (4 hidden, input), weight_hh (4 hidden, hidden).

    >>> import tinygrad_ops as tg
    >>> cell = tg.nn.LSTMCell(3, 5)
    >>> h, c = cell(tg.zeros(2, 3))
    >>> h, c = cell(tg.zeros(2, 3), (h, c))
    >>> h.shape, c.shape
    ((2, 5), (2, 5))
    """

    gates = 4

    def forward(self, x, hx=None):
        start = self._check(x)
        h, c = (start, start) if hx is None else hx
        return lstm_step(self._projected(x) + F.linear(h, self.weight_hh, self.bias_hh), c)


class GRUCell(_GatedCell):
    """One GRU step, PyTorch's `nn.GRUCell`: `cell(x, h)` returns `h'` (zeros for
    `hx=None`); weight_ih (3 hidden, input), weight_hh (3 hidden, hidden).

    >>> import tinygrad_ops as tg
    >>> cell = tg.nn.GRUCell(3, 5)
    >>> cell(tg.zeros(2, 3), cell(tg.zeros(2, 3))).shape
    (2, 5)
    """

    gates = 3

    def forward(self, x, hx=None):
        start = self._check(x)
        h = start if hx is None else hx
        return gru_step(_blocks(self._projected(x), 3), h, self.weight_hh, self.bias_hh)


class _GatedNetwork(Module):
    """The layers of a gated network over a sequence: input (T, N, input_size) ((N, T, ...)
    with `batch_first`, or (T, input_size) unbatched), the states of layer k the inputs of
    layer k + 1; parameters weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, ..."""

    gates = 0

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0.0,
        bidirectional=False,
        dtype=DEFAULT_DTYPE,
        generator=None,
    ):
        super().__init__()
        check_layer_options(type(self).__name__, num_layers, dropout, bidirectional)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.batch_first = batch_first
        for layer in range(num_layers):
            size_in = input_size if layer == 0 else hidden_size
            _make_weights(
                self, self.gates, size_in, hidden_size, bias, f"_l{layer}", dtype, generator
            )

    def _sequence(self, input):
        """The input, steps first (T, N, input_size), and whether it was batched."""
        if input.ndim not in (2, 3) or input.shape[-1] != self.input_size:
            raise ValueError(
                f"{type(self).__name__}(input_size={self.input_size}): expected an input of "
                f"shape (T, N, {self.input_size}) or (T, {self.input_size}), got {input.shape}"
            )
        batched = input.ndim == 3
        if batched and self.batch_first:
            input = input.swapaxes(0, 1)
        return input, batched

    def _start(self, state, rows, what):
        """A given first state, checked, or zeros: (num_layers, N, hidden_size)."""
        shape = (self.num_layers, *rows, self.hidden_size)
        if state is None:
            return zeros(*shape, dtype=self.weight_ih_l0.dtype)
        if tuple(state.shape) != shape:
            raise ValueError(
                f"{type(self).__name__}: {what} must have shape {shape}, got {state.shape}"
            )
        return state

    def _output(self, output, batched):
        return output.swapaxes(0, 1) if batched and self.batch_first else output

    def _layer_weights(self, layer):
        return tuple(
            getattr(self, f"{name}_l{layer}", None)
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        )

    def _projected(self, layer, inputs):
        """Layer `layer`'s input part of the gates for every step at once, x W_ihᵀ + b_ih
        (one product over the whole sequence, as cuDNN does), and the layer's weights."""
        weight_ih, weight_hh, bias_ih, bias_hh = self._layer_weights(layer)
        return F.linear(inputs, weight_ih, bias_ih), weight_hh, bias_hh

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}"


class LSTM(_GatedNetwork):
    """A multi-layer LSTM over a sequence, PyTorch's `nn.LSTM`: returns
    `(output, (h_n, c_n))`, the top layer's states (T, N, hidden_size) and every layer's
    last (h, c) (num_layers, N, hidden_size); `hx=(h_0, c_0)` or zeros. `dropout`,
    `bidirectional` and `proj_size` are not implemented (a ValueError, never ignored).

    >>> import tinygrad_ops as tg
    >>> lstm = tg.nn.LSTM(3, 5, num_layers=2)
    >>> output, (h_n, c_n) = lstm(tg.zeros(7, 2, 3))
    >>> output.shape, h_n.shape, c_n.shape
    ((7, 2, 5), (2, 2, 5), (2, 2, 5))
    """

    gates = 4

    def __init__(self, *args, proj_size=0, **kwargs):
        if proj_size:
            raise ValueError("LSTM: proj_size is not implemented (use proj_size=0)")
        super().__init__(*args, **kwargs)

    def forward(self, input, hx=None):
        output, batched = self._sequence(input)
        rows = output.shape[1:-1]
        h_0, c_0 = (None, None) if hx is None else hx
        h_0, c_0 = self._start(h_0, rows, "h_0"), self._start(c_0, rows, "c_0")
        last_h, last_c = [], []
        for layer in range(self.num_layers):
            projected, weight_hh, bias_hh = self._projected(layer, output)
            if bias_hh is not None:  # (both biases added once, outside the steps)
                projected = projected + bias_hh

            def step(state, x, weight_hh_t=weight_hh.T):
                h, c = state
                h, c = lstm_step(x + h @ weight_hh_t, c)
                return (h, c), h

            # Two states, h and c: walked. (A joint state [h | c] is one chain the scans
            # take, but its slices and joins made the forward about twice as slow, measured
            # at hidden 8 and 512 steps, more than the scan saved in the backward.)
            (h, c), output = scan(step, (h_0[layer], c_0[layer]), projected)
            last_h.append(h)
            last_c.append(c)
        return self._output(output, batched), (stack(last_h), stack(last_c))


class GRU(_GatedNetwork):
    """A multi-layer GRU over a sequence, PyTorch's `nn.GRU`: returns `(output, h_n)`, the
    top layer's states (T, N, hidden_size) and every layer's last state (num_layers, N,
    hidden_size); `hx` = h_0 or zeros. `dropout` and `bidirectional` are not implemented.

    >>> import tinygrad_ops as tg
    >>> gru = tg.nn.GRU(3, 5, batch_first=True)
    >>> output, h_n = gru(tg.zeros(2, 7, 3))
    >>> output.shape, h_n.shape
    ((2, 7, 5), (1, 2, 5))
    """

    gates = 3

    def forward(self, input, hx=None):
        output, batched = self._sequence(input)
        h_0 = self._start(hx, output.shape[1:-1], "hx")
        last = []
        for layer in range(self.num_layers):
            projected, weight_hh, bias_hh = self._projected(layer, output)

            def step(h, x, weight_hh=weight_hh, bias_hh=bias_hh):
                h = gru_step(x, h, weight_hh, bias_hh)
                return h, h

            # The gates' blocks are cut once, not in every step: the steps read their rows.
            h, output = scan(step, h_0[layer], tuple(_blocks(projected, 3)))
            last.append(h)
        return self._output(output, batched), stack(last)
