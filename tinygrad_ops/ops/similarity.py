"""Vectors scaled to unit norm and the cosine of two vectors' angle, composed as PyTorch
composes them (`F.normalize`, `F.cosine_similarity`): their backward is the primitives'
rules (VectorNorm's, Clip's, the arithmetic's).
"""

from .base import is_tensor
from .checks import check_float


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """out = x / max(||x||_p over dim, eps), as `torch.nn.functional.normalize`.

    >>> import tinygrad_ops as tg
    >>> normalize(tg.Tensor([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    _check(input, "normalize", "input")
    norm = input.norm(p=p, dim=dim, keepdim=True)
    return input / norm.clip(eps, None)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """out = sum over dim of (x1 / max(||x1||, eps)) (x2 / max(||x2||, eps)), the cosine of
    the angle between x1 and x2 (broadcast against each other), as PyTorch 2 computes it:
    each vector scaled to unit length first, then their dot product.

    >>> import tinygrad_ops as tg
    >>> cosine_similarity(tg.Tensor([[1.0, 0.0]]), tg.Tensor([[1.0, 1.0]])).tolist()
    [0.7071067690849304]
    """
    _check(x1, "cosine_similarity", "x1")
    _check(x2, "cosine_similarity", "x2")
    unit1 = x1 / x1.norm(dim=dim, keepdim=True).clip(eps, None)
    unit2 = x2 / x2.norm(dim=dim, keepdim=True).clip(eps, None)
    return (unit1 * unit2).sum(dim)


def _check(value, op_name, name):
    if not is_tensor(value):
        raise TypeError(f"{op_name}: {name} must be a Tensor, got {type(value).__name__}")
    check_float(op_name, value.data, name)
