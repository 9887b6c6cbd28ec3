"""`MultiheadAttention`, as torch.nn.MultiheadAttention: the same parameters under the same
names (`in_proj_weight`, `in_proj_bias`, `out_proj.weight`, `out_proj.bias`), so a PyTorch
state dict loads as it is, and the same masks and returned weights. Composed of
`F.linear` and `F.scaled_dot_product_attention` (or, when the weights are asked for, the
softmax of the scores written out), so its gradients are the primitives'.
"""

import math

import numpy as np

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..ops.base import is_tensor, values_read
from ..tensor import DEFAULT_DTYPE, Tensor
from ..tensor_functions import cat
from .init import xavier_normal_, xavier_uniform_, zeros_
from .linear import Linear
from .module import Module, Parameter


class MultiheadAttention(Module):
    """Attention over `num_heads` heads of size embed_dim / num_heads (Vaswani et al. 2017):
    out = concat_h(softmax(q_h k_hᵀ / √d + mask) v_h) W_oᵀ + b_o, with q, k, v the input
    projections. Inputs (L, N, E), or (N, L, E) with `batch_first=True`, or unbatched (L, E).
    Returns (output, weights): the weights (N, L, S) averaged over the heads, (N, H, L, S)
    with `average_attn_weights=False`, None with `need_weights=False`.

    Masks as PyTorch's: a boolean `key_padding_mask` (N, S) or `attn_mask` (L, S) or
    (N·H, L, S) is True where attending is *not* allowed; a float one is added to the scores.
    `is_causal=True` says that attn_mask is the causal mask: without a key_padding_mask and
    with `need_weights=False` that mask is then built, not read (as PyTorch; tg.compile can
    capture it).

    >>> import tinygrad_ops as tg
    >>> attention = tg.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = tg.randn(3, 5, 8, seed=0)
    >>> out, weights = attention(x, x, x)
    >>> out.shape, weights.shape
    ((3, 5, 8), (3, 5, 5))
    >>> list(attention.state_dict())
    ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']
    """

    def __init__(
        self,
        embed_dim,
        num_heads,
        dropout=0.0,
        bias=True,
        add_bias_kv=False,
        add_zero_attn=False,
        kdim=None,
        vdim=None,
        batch_first=False,
        dtype=DEFAULT_DTYPE,
    ):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"MultiheadAttention: embed_dim and num_heads must be positive, got "
                f"{embed_dim} and {num_heads}"
            )
        if embed_dim % num_heads:
            raise AssertionError(  # (the class PyTorch raises)
                f"MultiheadAttention: embed_dim {embed_dim} must be divisible by num_heads "
                f"{num_heads}"
            )
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first, self.add_zero_attn = batch_first, add_zero_attn

        def weight(rows, columns):
            return xavier_uniform_(Parameter(np.zeros((rows, columns), dtype=dtype)))

        # Parameters registered in PyTorch's order, so the state dicts list the same keys.
        if self._qkv_same_embed_dim:
            self.in_proj_weight = weight(3 * embed_dim, embed_dim)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = weight(embed_dim, embed_dim)
            self.k_proj_weight = weight(embed_dim, self.kdim)
            self.v_proj_weight = weight(embed_dim, self.vdim)
        if bias:
            self.in_proj_bias = Parameter(np.zeros(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        if bias:
            zeros_(self.out_proj.bias)  # (PyTorch zeroes it too)
        if add_bias_kv:
            for name in ("bias_k", "bias_v"):
                setattr(self, name, xavier_normal_(Parameter(np.zeros((1, 1, embed_dim), dtype))))
        else:
            self.register_parameter("bias_k", None)
            self.register_parameter("bias_v", None)

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights=True,
        attn_mask=None,
        average_attn_weights=True,
        is_causal=False,
    ):
        batched = self._check_inputs(query, key, value)
        if not batched:  # (L, E) -> (1, L, E)
            query, key, value = (x.unsqueeze(0) for x in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = _as_tensor(key_padding_mask).unsqueeze(0)
        elif not self.batch_first:  # (L, N, E) -> (N, L, E)
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "MultiheadAttention: is_causal is a hint that attn_mask is the causal mask; "
                "pass that mask as attn_mask as well (as PyTorch requires)"
            )
        # As PyTorch: without padding or weights the hint is taken at its word, and
        # scaled_dot_product_attention builds the causal mask (attn_mask is not read).
        causal = is_causal and key_padding_mask is None and not need_weights
        if causal:
            attn_mask = None
        batch, length, _ = query.shape
        q, k, v = self._project(query, key, value)
        mask = self._merged_mask(attn_mask, key_padding_mask, batch, length, k.shape[1], q.dtype)
        k, v, mask = self._extend_keys(k, v, mask)
        q, k, v = (self._split_heads(x) for x in (q, k, v))
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            out, weights = _attention_with_weights(q, k, v, mask, dropout_p)
            if average_attn_weights:
                weights = weights.mean(1)
        else:
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal
            )
            weights = None
        out = self.out_proj(out.transpose(1, 2).reshape(batch, length, self.embed_dim))
        if not batched:
            return out[0], None if weights is None else weights[0]
        return (out if self.batch_first else out.transpose(0, 1)), weights

    def _check_inputs(self, query, key, value):
        """Whether the inputs are batched; raises on shapes PyTorch refuses."""
        for tensor, name in ((query, "query"), (key, "key"), (value, "value")):
            if not is_tensor(tensor):
                raise TypeError(
                    f"MultiheadAttention: {name} must be a Tensor, got {type(tensor).__name__}"
                )
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise RuntimeError(
                f"MultiheadAttention: query, key and value must all be 3-d (batched) or 2-d "
                f"(unbatched), got shapes {query.shape}, {key.shape}, {value.shape}"
            )
        expected = (self.embed_dim, self.kdim, self.vdim)
        got = (query.shape[-1], key.shape[-1], value.shape[-1])
        if got != expected or key.shape[:-1] != value.shape[:-1]:
            raise RuntimeError(
                f"MultiheadAttention(embed_dim={self.embed_dim}, kdim={self.kdim}, "
                f"vdim={self.vdim}): the inputs' last dims must be {expected} and key and "
                f"value must agree in the others, got {query.shape}, {key.shape}, {value.shape}"
            )
        batch_dim = 0 if self.batch_first else 1
        if query.ndim == 3 and query.shape[batch_dim] != key.shape[batch_dim]:
            raise RuntimeError(
                f"MultiheadAttention: query and key have batch sizes {query.shape[batch_dim]} "
                f"and {key.shape[batch_dim]}"
            )
        return query.ndim == 3

    def _project(self, query, key, value):
        """q, k, v = x W_iᵀ + b_i, the three input projections (one matmul when the three
        inputs are one tensor and the weights are packed, as in self-attention)."""
        biases = (None, None, None)
        if self.in_proj_bias is not None:
            biases = self.in_proj_bias.chunk(3)
        if self._qkv_same_embed_dim:
            if query is key and key is value:
                return F.linear(query, self.in_proj_weight, self.in_proj_bias).chunk(3, -1)
            weights = self.in_proj_weight.chunk(3)
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        inputs = (query, key, value)
        return tuple(F.linear(x, w, b) for x, w, b in zip(inputs, weights, biases, strict=True))

    def _merged_mask(self, attn_mask, key_padding_mask, batch, length, source, dtype):
        """attn_mask and key_padding_mask as one float mask added to the scores, shaped to
        broadcast against (N, H, L, S) (boolean True -> -inf, as PyTorch's canonical mask)."""
        merged = None
        if attn_mask is not None:
            merged = _additive(attn_mask, dtype, "attn_mask")
            if merged.ndim == 2 and merged.shape == (length, source):
                pass
            elif merged.ndim == 3 and merged.shape == (batch * self.num_heads, length, source):
                merged = merged.reshape(batch, self.num_heads, length, source)
            else:
                raise RuntimeError(
                    f"MultiheadAttention: attn_mask must have shape ({length}, {source}) or "
                    f"({batch * self.num_heads}, {length}, {source}), got {merged.shape}"
                )
        if key_padding_mask is not None:
            padding = _additive(key_padding_mask, dtype, "key_padding_mask")
            if padding.shape != (batch, source):
                raise RuntimeError(
                    f"MultiheadAttention: key_padding_mask must have shape ({batch}, {source}), "
                    f"got {padding.shape}"
                )
            padding = padding.reshape(batch, 1, 1, source)
            merged = padding if merged is None else merged + padding
        return merged

    def _extend_keys(self, k, v, mask):
        """Append bias_k / bias_v (add_bias_kv) and a zero key and value (add_zero_attn) to
        every sequence of keys, with a 0 column in the mask for each."""
        extra = []
        if self.bias_k is not None:
            batch = k.shape[0]
            k = cat([k, self.bias_k.expand(batch, 1, self.embed_dim)], 1)
            v = cat([v, self.bias_v.expand(batch, 1, self.embed_dim)], 1)
            extra.append(1)
        if self.add_zero_attn:
            zeros = Tensor(np.zeros((k.shape[0], 1, self.embed_dim), dtype=k.dtype))
            k, v = cat([k, zeros], 1), cat([v, zeros], 1)
            extra.append(1)
        if mask is not None and extra:
            width = sum(extra)
            padding = Tensor(np.zeros(mask.shape[:-1] + (width,), dtype=mask.dtype))
            mask = cat([mask, padding], -1)
        return k, v, mask

    def _split_heads(self, x):
        """(N, L, H·D) -> (N, H, L, D)."""
        batch, length, _ = x.shape
        return x.reshape(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def extra_repr(self):
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}, "
            f"batch_first={self.batch_first}"
        )


def _attention_with_weights(q, k, v, mask, dropout_p):
    """(softmax(q / √d kᵀ + mask) v, the weights), as PyTorch computes it when the weights
    are asked for (the query scaled first; a row with every key masked comes out NaN)."""
    scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights


def _as_tensor(value):
    return value if is_tensor(value) else Tensor(np.asarray(value))


def _additive(mask, dtype, name):
    """A mask as a float Tensor to add to the scores: boolean True -> -inf, False -> 0;
    a float mask as it is (in the scores' dtype)."""
    mask = _as_tensor(mask)
    if mask.dtype == np.bool_:
        values_read(mask, f"MultiheadAttention's {name}")
        return Tensor(np.where(mask.data, -np.inf, 0.0).astype(dtype))
    if mask.dtype.kind != "f":
        raise TypeError(
            f"MultiheadAttention: {name} must be boolean or floating-point, got {mask.dtype}"
        )
    return mask if mask.dtype == dtype else mask.to(dtype)


__all__ = ["MultiheadAttention"]
