"""`TransformerEncoderLayer` and `TransformerEncoder`, as torch.nn's: self-attention and a
two-layer feed-forward block, each with a residual connection and a LayerNorm (after it,
or before it with `norm_first=True`). Built of `MultiheadAttention`, `Linear`, `LayerNorm`
and `Dropout` under PyTorch's attribute names, so a PyTorch state dict loads as it is.
"""

import copy

import numpy as np

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..tensor import DEFAULT_DTYPE, Tensor
from .activation import Dropout
from .attention import MultiheadAttention
from .container import ModuleList
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(Module):
    """x + SA(x) then x + FF(x), each followed by a LayerNorm (post-norm, PyTorch's
    default), or each applied to LayerNorm(x) with `norm_first=True` (pre-norm, as GPT-2):
    SA is `MultiheadAttention(d_model, nhead)`, FF(x) = linear2(dropout(act(linear1(x)))).
    Inputs (S, N, E), or (N, S, E) with `batch_first=True`; `activation` "relu", "gelu" or
    a callable. `src_mask` and `src_key_padding_mask` as MultiheadAttention's attn_mask and
    key_padding_mask.

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    >>> layer(tg.randn(3, 5, 8, seed=0)).shape
    (3, 5, 8)
    """

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation="relu",
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        dtype=DEFAULT_DTYPE,
    ):
        super().__init__()
        if isinstance(activation, str) and activation not in ACTIVATIONS:
            raise RuntimeError(
                f"TransformerEncoderLayer: activation should be relu/gelu, not {activation}"
            )
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, dtype=dtype
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = ACTIVATIONS[activation] if isinstance(activation, str) else activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        out, _ = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )
        return self.dropout1(out)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer` applied in turn (`layers.0`, `layers.1`, ...),
    then `norm` if given, as torch.nn.TransformerEncoder.

    >>> import tinygrad_ops as tg
    >>> layer = tg.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    >>> encoder = tg.nn.TransformerEncoder(layer, num_layers=2)
    >>> encoder(tg.randn(3, 5, 8, seed=0)).shape, len(encoder.layers)
    ((3, 5, 8), 2)
    """

    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(
                x,
                src_mask=mask,
                src_key_padding_mask=src_key_padding_mask,
                is_causal=bool(is_causal),
            )
        return x if self.norm is None else self.norm(x)


def generate_square_subsequent_mask(size, dtype=DEFAULT_DTYPE):
    """The causal mask for `size` positions, as torch.nn.Transformer's: 0 on and below the
    diagonal, -inf above it (position i attends to positions j <= i).

    >>> generate_square_subsequent_mask(3).tolist()
    [[0.0, -inf, -inf], [0.0, 0.0, -inf], [0.0, 0.0, 0.0]]
    """
    above = np.triu(np.ones((size, size), dtype=bool), 1)
    return Tensor(np.where(above, -np.inf, 0.0).astype(dtype))


__all__ = ["TransformerEncoder", "TransformerEncoderLayer", "generate_square_subsequent_mask"]
