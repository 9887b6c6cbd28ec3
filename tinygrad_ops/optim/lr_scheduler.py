"""Learning-rate schedulers, as `torch.optim.lr_scheduler`: call `scheduler.step()` once per
epoch, after the optimizer's. Each sets every group's lr from a closed form of the epoch.
"""

import math

from ..mode import replayed_whole


class LRScheduler:
    """Base class: sets every group's lr to `lr_at(base_lr, epoch)`; `step()` advances
    one epoch. A new schedule only needs `lr_at`.

    >>> import tinygrad_ops as tg
    >>> class Halving(tg.optim.LRScheduler):
    ...     def lr_at(self, base_lr, epoch):
    ...         return base_lr / 2**epoch
    >>> scheduler = Halving(tg.optim.SGD([tg.nn.Parameter(tg.zeros(1))], lr=1.0))
    >>> scheduler.step()
    >>> scheduler.get_last_lr()
    [0.5]
    """

    def __init__(self, optimizer):
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = 0
        self._apply()

    def lr_at(self, base_lr, epoch):  # pragma: no cover - every scheduler overrides it
        raise NotImplementedError

    def _apply(self):
        for group, base_lr in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = self.lr_at(base_lr, self.last_epoch)

    @replayed_whole
    def step(self):
        self.last_epoch += 1
        self._apply()

    def get_last_lr(self):
        """The learning rate of each group, as set by the last step."""
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        return {"last_epoch": self.last_epoch, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, state_dict):
        self.last_epoch = int(state_dict["last_epoch"])
        self.base_lrs = [float(lr) for lr in state_dict["base_lrs"]]
        self._apply()


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (epoch // step_size), as torch.optim.lr_scheduler.StepLR.

    >>> import tinygrad_ops as tg
    >>> p = tg.nn.Parameter(tg.Tensor([1.0]))
    >>> scheduler = tg.optim.StepLR(tg.optim.SGD([p], lr=1.0), step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for epoch in range(4):
    ...     lrs.append(scheduler.get_last_lr()[0])
    ...     scheduler.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5]
    """

    def __init__(self, optimizer, step_size, gamma=0.1):
        if step_size < 1:
            raise ValueError(f"StepLR: step_size must be >= 1, got {step_size}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer)

    def lr_at(self, base_lr, epoch):
        return base_lr * self.gamma ** (epoch // self.step_size)


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2 (Loshchilov &
    Hutter 2017, without restarts). This is the closed form that PyTorch's recursive
    CosineAnnealingLR follows; the two agree to rounding.

    >>> import tinygrad_ops as tg
    >>> p = tg.nn.Parameter(tg.Tensor([1.0]))
    >>> scheduler = tg.optim.CosineAnnealingLR(tg.optim.SGD([p], lr=1.0), T_max=2)
    >>> scheduler.step()
    >>> scheduler.get_last_lr()
    [0.5]
    """

    def __init__(self, optimizer, T_max, eta_min=0.0):
        if T_max < 1:
            raise ValueError(f"CosineAnnealingLR: T_max must be >= 1, got {T_max}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer)

    def lr_at(self, base_lr, epoch):
        cosine = (1 + math.cos(math.pi * epoch / self.T_max)) / 2
        return self.eta_min + (base_lr - self.eta_min) * cosine


class ExponentialLR(LRScheduler):
    """lr = base_lr * gamma ** epoch, as torch.optim.lr_scheduler.ExponentialLR.

    >>> import tinygrad_ops as tg
    >>> p = tg.nn.Parameter(tg.Tensor([1.0]))
    >>> scheduler = tg.optim.ExponentialLR(tg.optim.SGD([p], lr=1.0), gamma=0.5)
    >>> scheduler.step(); scheduler.step()
    >>> scheduler.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer, gamma):
        self.gamma = gamma
        super().__init__(optimizer)

    def lr_at(self, base_lr, epoch):
        return base_lr * self.gamma**epoch


class MultiStepLR(LRScheduler):
    """lr = base_lr * gamma ** (the number of milestones reached), as
    torch.optim.lr_scheduler.MultiStepLR.

    >>> import tinygrad_ops as tg
    >>> p = tg.nn.Parameter(tg.Tensor([1.0]))
    >>> scheduler = tg.optim.MultiStepLR(tg.optim.SGD([p], lr=1.0), [1, 3], gamma=0.5)
    >>> lrs = []
    >>> for epoch in range(4):
    ...     lrs.append(scheduler.get_last_lr()[0])
    ...     scheduler.step()
    >>> lrs
    [1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer, milestones, gamma=0.1):
        milestones = list(milestones)
        if milestones != sorted(milestones):
            raise ValueError(f"MultiStepLR: milestones must be increasing, got {milestones}")
        self.milestones = milestones
        self.gamma = gamma
        super().__init__(optimizer)

    def lr_at(self, base_lr, epoch):
        reached = sum(1 for milestone in self.milestones if milestone <= epoch)
        return base_lr * self.gamma**reached


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(epoch), as torch.optim.lr_scheduler.LambdaLR (one function
    for every group, or one per group).

    >>> import tinygrad_ops as tg
    >>> p = tg.nn.Parameter(tg.Tensor([1.0]))
    >>> scheduler = tg.optim.LambdaLR(tg.optim.SGD([p], lr=2.0), lambda epoch: 1 / (epoch + 1))
    >>> scheduler.step()
    >>> scheduler.get_last_lr()
    [1.0]
    """

    def __init__(self, optimizer, lr_lambda):
        groups = len(optimizer.param_groups)
        functions = (
            list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
        )
        if len(functions) != groups:
            raise ValueError(f"LambdaLR: {len(functions)} functions for {groups} parameter groups")
        self.lr_lambdas = functions
        super().__init__(optimizer)

    def _apply(self):
        for group, base_lr, function in zip(
            self.optimizer.param_groups, self.base_lrs, self.lr_lambdas
        ):
            group["lr"] = base_lr * function(self.last_epoch)


__all__ = [
    "CosineAnnealingLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "MultiStepLR",
    "StepLR",
]


class ReduceLROnPlateau:
    """Multiply every group's lr by `factor` once a metric has stopped improving for
    `patience` epochs, as torch.optim.lr_scheduler.ReduceLROnPlateau: call
    `scheduler.step(validation_loss)` once per epoch. Better means below best · (1 -
    threshold) in mode "min" ("rel"; best - threshold with threshold_mode "abs"), above in
    mode "max"; after a reduction `cooldown` epochs pass before counting again; no lr goes
    below `min_lr`, and a change smaller than `eps` is not made.

    >>> import tinygrad_ops as tg
    >>> optimizer = tg.optim.SGD([tg.nn.Parameter(tg.zeros(1))], lr=1.0)
    >>> scheduler = tg.optim.ReduceLROnPlateau(optimizer, patience=1, factor=0.5)
    >>> for loss in [3.0, 2.0, 2.0, 2.0, 2.0, 2.0]:
    ...     scheduler.step(loss)
    >>> scheduler.get_last_lr()
    [0.25]
    """

    def __init__(
        self,
        optimizer,
        mode="min",
        factor=0.1,
        patience=10,
        threshold=1e-4,
        threshold_mode="rel",
        cooldown=0,
        min_lr=0,
        eps=1e-8,
    ):
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor should be < 1.0, got {factor}")
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode {mode!r} is unknown (min or max)")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(
                f"ReduceLROnPlateau: threshold_mode {threshold_mode!r} is unknown (rel or abs)"
            )
        groups = optimizer.param_groups
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(groups):
                raise ValueError(
                    f"ReduceLROnPlateau: expected {len(groups)} min_lrs, got {len(min_lr)}"
                )
            self.min_lrs = list(min_lr)
        else:
            self.min_lrs = [min_lr] * len(groups)
        self.optimizer, self.mode, self.factor, self.patience = optimizer, mode, factor, patience
        self.threshold, self.threshold_mode, self.cooldown, self.eps = (
            threshold,
            threshold_mode,
            cooldown,
            eps,
        )
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs, self.cooldown_counter, self.last_epoch = 0, 0, 0

    def is_better(self, value, best):
        if self.mode == "min":
            bound = (
                best * (1 - self.threshold)
                if self.threshold_mode == "rel"
                else best - self.threshold
            )
            return value < bound
        bound = (
            best * (1 + self.threshold) if self.threshold_mode == "rel" else best + self.threshold
        )
        return value > bound

    def step(self, metrics):
        """One epoch's metric (a number or a one-element Tensor, read once)."""
        current = float(metrics.item() if hasattr(metrics, "item") else metrics)
        self.last_epoch += 1
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # the epochs of the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0

    def _reduce(self):
        for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs, strict=True):
            new_lr = max(group["lr"] * self.factor, min_lr)
            if group["lr"] - new_lr > self.eps:
                group["lr"] = new_lr

    def get_last_lr(self):
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        keys = ("best", "num_bad_epochs", "cooldown_counter", "last_epoch")
        return {key: getattr(self, key) for key in keys}

    def load_state_dict(self, state_dict):
        for key, value in state_dict.items():
            setattr(self, key, value)
