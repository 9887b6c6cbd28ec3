"""Scaled dot-product attention (Vaswani et al. 2017), composed of the primitives in ops/ as
PyTorch's reference states it: scores = q kᵀ · scale, a mask, softmax over the keys,
dropout, then the weighted sum of the values. Its backward is the primitives' rules
(MatMul's, Where's, Softmax's fused rule, Dropout's), so gradients of every input,
second order included, come from them.
"""

import math

import numpy as np

from .activations import Dropout
from .base import is_tensor, values_read
from .checks import check_float
from .elementwise import Where


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    scale=None,
    enable_gqa=False,
    generator=None,
):
    """out = softmax(q kᵀ · scale + mask) v, over the last two dims (L queries, S keys), as
    `torch.nn.functional.scaled_dot_product_attention`: scale 1/√E unless given; a boolean
    `attn_mask` keeps the scores where it is True, a float one is added; `is_causal` keeps
    key j <= query i; dropout with probability `dropout_p` on the weights (always, as
    PyTorch's function: pass 0 in eval). A query whose keys are all masked gets 0 (and no
    gradient), as PyTorch's kernels give. `enable_gqa`: key and value may have fewer heads
    (dim -3), each shared by a group of query heads. The dropout mask is drawn from
    `generator` (`F.scaled_dot_product_attention` passes the shared one).

    >>> import tinygrad_ops as tg
    >>> q = tg.Tensor([[[1.0, 0.0], [0.0, 1.0]]])
    >>> scaled_dot_product_attention(q, q, q, is_causal=True).numpy().round(3)
    array([[[1.  , 0.  ],
            [0.33, 0.67]]], dtype=float32)
    """
    for tensor, name in ((query, "query"), (key, "key"), (value, "value")):
        _check_input(tensor, name)
    _check_shapes(query, key, value, enable_gqa)
    if enable_gqa and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        group = query.shape[-3] // key.shape[-3]
        key, value = key.repeat_interleave(group, -3), value.repeat_interleave(group, -3)
    length, source = query.shape[-2], key.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
    scores = (query @ key.transpose(-2, -1)) * float(scale)
    keep = None  # where the scores are kept (a boolean array), when some are masked
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError(
                "scaled_dot_product_attention: pass either attn_mask or is_causal=True, not "
                "both (is_causal is the lower-triangular boolean mask)"
            )
        keep = np.tril(np.ones((length, source), dtype=bool))
    elif attn_mask is not None:
        mask = _checked_mask(attn_mask, scores, query.dtype)
        if mask.dtype == np.bool_:
            keep = mask
        else:
            scores = scores + mask
    if keep is not None:
        scores = Where.apply(keep, scores, -np.inf)
    dead = _dead_rows(keep, attn_mask)
    if dead is not None:  # softmax of a row of -inf is NaN: give those rows 0
        scores = Where.apply(dead, 0.0, scores)
    weights = scores.softmax(-1)
    if dead is not None:
        weights = Where.apply(dead, 0.0, weights)
    if dropout_p > 0.0:
        if generator is None:
            raise ValueError("scaled_dot_product_attention: dropout_p > 0 needs a generator")
        weights = Dropout.apply(weights, p=float(dropout_p), generator=generator)
    return weights @ value


def _check_input(tensor, name):
    if not is_tensor(tensor):
        raise TypeError(
            f"scaled_dot_product_attention: {name} must be a Tensor, got {type(tensor).__name__}"
        )
    check_float("scaled_dot_product_attention", tensor.data, name)
    if tensor.ndim < 2:
        raise RuntimeError(
            f"scaled_dot_product_attention: {name} must have at least 2 dims (..., length, "
            f"features), got shape {tensor.shape}"
        )


def _check_shapes(query, key, value, enable_gqa):
    problem = None
    if key.shape[-1] != query.shape[-1]:
        problem = f"key's last dim {key.shape[-1]} must equal query's {query.shape[-1]}"
    elif key.shape[-2] != value.shape[-2]:
        problem = f"key and value must have as many rows (keys), got {key.shape} and {value.shape}"
    elif enable_gqa and key.ndim >= 3 and query.ndim >= 3:
        heads, kv_heads = query.shape[-3], key.shape[-3]
        if value.shape[-3] != kv_heads or heads % kv_heads:
            problem = (
                f"with enable_gqa, key's and value's heads (dim -3: {kv_heads}, "
                f"{value.shape[-3]}) must be equal and divide query's {heads}"
            )
    batch = -3 if enable_gqa else -2  # (with enable_gqa the heads differ)
    if problem is None:
        try:
            np.broadcast_shapes(query.shape[:batch], key.shape[:batch], value.shape[:batch])
        except ValueError:
            problem = "the batch dims (all but the last two) must broadcast"
    if problem:
        raise RuntimeError(
            f"scaled_dot_product_attention: {problem}; got query {query.shape}, key "
            f"{key.shape}, value {value.shape}"
        )


def _checked_mask(attn_mask, scores, dtype):
    """attn_mask checked: it must be boolean or floating-point and broadcast to the scores'
    shape (..., L, S). A boolean one comes back as an array (its values read, a constant of
    the call for tg.compile); a float one in the query's dtype (a Tensor keeps its gradient).
    """
    values = attn_mask.data if is_tensor(attn_mask) else np.asarray(attn_mask)
    if values.dtype != np.bool_ and values.dtype.kind != "f":
        raise TypeError(
            f"scaled_dot_product_attention: attn_mask must be boolean or floating-point, got "
            f"dtype {values.dtype}"
        )
    try:
        shape = np.broadcast_shapes(values.shape, scores.shape)
    except ValueError:
        shape = None
    if shape != scores.shape:
        raise RuntimeError(
            f"scaled_dot_product_attention: attn_mask of shape {values.shape} does not "
            f"broadcast to the attention scores' shape {scores.shape} (..., L, S)"
        )
    if values.dtype == np.bool_:
        values_read(attn_mask, "scaled_dot_product_attention")
        return values
    if not is_tensor(attn_mask):
        return values.astype(dtype, copy=False)
    return attn_mask if attn_mask.dtype == dtype else attn_mask.to(dtype)


def _dead_rows(keep, attn_mask):
    """A boolean array, True on the query rows whose keys are all masked (None if none is):
    read from the mask's values (a constant of the call, for tg.compile)."""
    if keep is not None:
        dead = ~np.any(keep, axis=-1, keepdims=True)
    elif attn_mask is not None:
        values_read(attn_mask, "scaled_dot_product_attention")
        mask = attn_mask.data if is_tensor(attn_mask) else np.asarray(attn_mask)
        dead = np.all(np.isneginf(mask), axis=-1, keepdims=True)
    else:
        return None
    return dead if dead.any() else None
