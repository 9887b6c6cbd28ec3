"""Gradient clipping, as `torch.nn.utils`: what an RNN's training loop calls between
`backward()` and `optimizer.step()`.

Both change the parameters' `.grad` in place and record nothing. They compute with
tensor ops (under no_grad), so that a compiled step (tg.compile) replays them with each
call's gradients.
"""

import math

from ..mode import no_grad
from ..ops.base import is_tensor
from ..tensor import Tensor
from ..tensor_functions import stack


def _gradients(parameters):
    """The `.grad` tensors of `parameters` (a tensor or an iterable of them) that have one."""
    if is_tensor(parameters):
        parameters = [parameters]
    return [parameter.grad for parameter in parameters if parameter.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale the gradients so that their joint norm is at most `max_norm`; return the norm
    they had (a 0-d tensor), as `torch.nn.utils.clip_grad_norm_`.

    The norm is that of all gradients as one vector (`norm_type` p, or inf for the largest
    magnitude). Each gradient is multiplied by min(1, max_norm / (norm + 1e-6)), PyTorch's
    factor (the 1e-6 keeps a zero norm from dividing by zero).

    >>> import tinygrad_ops as tg
    >>> w = tg.Tensor([3.0, 4.0], requires_grad=True)
    >>> (w * 1.0).sum().backward()  # grad [1, 1], norm sqrt(2)
    >>> round(tg.nn.utils.clip_grad_norm_([w], 1.0).item(), 4)
    1.4142
    >>> w.grad.numpy().round(4)
    array([0.7071, 0.7071], dtype=float32)
    """
    norm_type = float(norm_type)
    grads = [grad for grad in _gradients(parameters) if grad.size]
    if not grads:
        return Tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            total = stack([grad.abs().amax().double() for grad in grads]).amax()
        else:
            norms = [(grad.double().abs() ** norm_type).sum() for grad in grads]
            total = stack(norms).sum() ** (1.0 / norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(
                f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is "
                f"{total.item()}, not finite; pass error_if_nonfinite=False to clip anyway"
            )
        factor = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
        for grad in grads:
            grad.mul_(factor.astype(grad.dtype))
        return total.astype(grads[0].dtype)


def clip_grad_value_(parameters, clip_value):
    """Clip every gradient element into [-clip_value, clip_value], in place, as
    `torch.nn.utils.clip_grad_value_`.

    >>> import tinygrad_ops as tg
    >>> w = tg.Tensor([3.0, 4.0], requires_grad=True)
    >>> (w * w).sum().backward()  # grad [6, 8]
    >>> tg.nn.utils.clip_grad_value_([w], 5.0)
    >>> w.grad.numpy()
    array([5., 5.], dtype=float32)
    """
    clip_value = float(clip_value)
    with no_grad():
        for grad in _gradients(parameters):
            grad.clamp_(-clip_value, clip_value)
