"""Loss layers, named and parameterised as torch.nn's: `criterion = nn.CrossEntropyLoss()`,
then `loss = criterion(logits, target)`. Each is a thin Module over its function in
`tinygrad_ops.functional` (the options are kept and shown in the repr); a class weight
or pos_weight is registered as a buffer, as in PyTorch, so it moves with the state dict.
"""

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..tensor import Tensor
from .module import Module


class _Loss(Module):
    """A loss layer: `function(input, target, reduction=..., **options)`."""

    function = None

    def __init__(self, reduction="mean", weights=None, **options):
        super().__init__()
        self.reduction = reduction
        self.options = options
        for name, value in (weights or {}).items():
            if value is not None and not isinstance(value, Tensor):
                value = Tensor(value)
            self.register_buffer(name, value)
            self.options[name] = None  # read from the buffer at each call (see forward)

    def forward(self, input, target):
        options = {name: self._buffers.get(name, value) for name, value in self.options.items()}
        return type(self).function(input, target, reduction=self.reduction, **options)

    def extra_repr(self):
        shown = {"reduction": self.reduction, **self.options}
        return ", ".join(
            f"{name}={value!r}" for name, value in shown.items() if name not in self._buffers
        )


class MSELoss(_Loss):
    """mean((input - target)²) (`F.mse_loss`).

    >>> import tinygrad_ops as tg
    >>> tg.nn.MSELoss()(tg.Tensor([1.0, 3.0]), tg.Tensor([0.0, 0.0])).item()
    5.0
    """

    function = staticmethod(F.mse_loss)


class L1Loss(_Loss):
    """mean(|input - target|) (`F.l1_loss`).

    >>> import tinygrad_ops as tg
    >>> tg.nn.L1Loss(reduction="sum")(tg.Tensor([1.0, -2.0]), tg.Tensor([0.0, 0.0])).item()
    3.0
    """

    function = staticmethod(F.l1_loss)


class CrossEntropyLoss(_Loss):
    """log_softmax and the negative log-likelihood of the target class (`F.cross_entropy`).

    >>> import numpy as np, tinygrad_ops as tg
    >>> criterion = tg.nn.CrossEntropyLoss()
    >>> round(criterion(tg.Tensor([[0.0, 0.0]]), np.array([1])).item(), 4)
    0.6931
    """

    function = staticmethod(F.cross_entropy)

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(
            reduction,
            weights={"weight": weight},
            ignore_index=ignore_index,
            label_smoothing=label_smoothing,
        )


class NLLLoss(_Loss):
    """-input[i, target_i] for log-probabilities (`F.nll_loss`).

    >>> import numpy as np, tinygrad_ops as tg
    >>> tg.nn.NLLLoss()(tg.Tensor([[-1.0, -2.0]]), np.array([1])).item()
    2.0
    """

    function = staticmethod(F.nll_loss)

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction, weights={"weight": weight}, ignore_index=ignore_index)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (`F.binary_cross_entropy`).

    >>> import tinygrad_ops as tg
    >>> round(tg.nn.BCELoss()(tg.Tensor([0.5]), tg.Tensor([1.0])).item(), 4)
    0.6931
    """

    function = staticmethod(F.binary_cross_entropy)

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction, weights={"weight": weight})


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits, without overflow (`F.binary_cross_entropy_with_logits`).

    >>> import tinygrad_ops as tg
    >>> round(tg.nn.BCEWithLogitsLoss()(tg.Tensor([0.0]), tg.Tensor([1.0])).item(), 4)
    0.6931
    """

    function = staticmethod(F.binary_cross_entropy_with_logits)

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction, weights={"weight": weight, "pos_weight": pos_weight})


class HuberLoss(_Loss):
    """Squared below delta, linear above (`F.huber_loss`).

    >>> import tinygrad_ops as tg
    >>> tg.nn.HuberLoss()(tg.Tensor([0.5, 3.0]), tg.Tensor([0.0, 0.0])).item()
    1.3125
    """

    function = staticmethod(F.huber_loss)

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction, delta=delta)


class SmoothL1Loss(_Loss):
    """Huber loss divided by beta (`F.smooth_l1_loss`).

    >>> import tinygrad_ops as tg
    >>> tg.nn.SmoothL1Loss()(tg.Tensor([0.5, 3.0]), tg.Tensor([0.0, 0.0])).item()
    1.3125
    """

    function = staticmethod(F.smooth_l1_loss)

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction, beta=beta)


class KLDivLoss(_Loss):
    """KL divergence of log-probabilities from a target distribution (`F.kl_div`).

    >>> import numpy as np, tinygrad_ops as tg
    >>> criterion = tg.nn.KLDivLoss(reduction="batchmean")
    >>> round(criterion(tg.Tensor(np.log([[0.5, 0.5]])), tg.Tensor([[0.5, 0.5]])).item(), 4)
    0.0
    """

    function = staticmethod(F.kl_div)

    def __init__(self, reduction="mean", log_target=False):
        super().__init__(reduction, log_target=log_target)
