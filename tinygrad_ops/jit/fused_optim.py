"""Fused optimizer kernels: `zero_grad()`, SGD's and Adam's `step()` in the lines.

A `Call` kernel replays an optimizer method by calling it again, which walks the
parameter groups in Python and reads each gradient through `parameter.grad`. For the
two calls of almost every training step the replay can write the work out instead,
parameter by parameter, and take each gradient from the slot the leaf write just filled.
The numbers are the method's own: plain SGD's line is `SGD.step`'s subtraction, and the
other updates call optim.py's `sgd_update` and `adam_update`, which the steps call too. The
hyperparameters are still read at each call (a learning-rate scheduler's new lr counts).

What the lines assume is checked at each replay, at the cost of a few dictionary reads:
the number of groups and of parameters in each (add_param_group, a parameter appended),
and, for SGD, that momentum and weight decay are still 0. If one does not hold, the
method is called as a whole, as a `Call` kernel would.
"""

from __future__ import annotations

from ..optim import SGD, Adam, AdamW, Optimizer, adam_update, sgd_update
from .kernels import Kernel


def _layout_check(code, kernel) -> tuple:
    """(names of the group dicts, the condition that the groups are as at capture)."""
    owner = code.bind(kernel.owner, "optimizer")
    groups = kernel.owner.param_groups
    names = [code.bind(group, "group") for group in groups]
    condition = [f"len({owner}.param_groups) == {len(groups)}"]
    for name, group in zip(names, groups):
        condition.append(f'len({name}["params"]) == {len(group["params"])}')
    return names, condition


class FusedZeroGrad(Kernel):
    """optimizer.zero_grad(): every parameter's .grad set to None, one line each."""

    __slots__ = ("kernel",)

    def __init__(self, kernel):
        self.kernel = kernel
        self.frees = ()

    def emit(self, code, number):
        _, condition = _layout_check(code, self.kernel)
        code.line(f"if {' and '.join(condition)}:  # {self.describe(None)}")
        code.depth += 1
        for group in self.kernel.owner.param_groups:
            for parameter in group["params"]:
                code.line(f"{code.bind(parameter, 'parameter')}._grad = None")
        code.depth -= 1
        self.kernel.emit_otherwise(code)

    def describe(self, name):
        return self.kernel.describe(name) + "   (fused)"


class FusedSGDStep(Kernel):
    """Plain SGD's step (no momentum, no weight decay): p -= lr * grad for each parameter
    with a gradient, the gradient read from its leaf write's slot when the program wrote
    it (`grads`: id(parameter) -> slot), else from `parameter.grad`."""

    __slots__ = ("kernel", "grads")

    def __init__(self, kernel, grads):
        self.kernel = kernel
        self.grads = grads
        self.frees = ()

    def emit(self, code, number):
        names, condition = _layout_check(code, self.kernel)
        condition += [self.holds(name) for name in names if self.holds(name)]
        code.line(f"if {' and '.join(condition)}:  # {self.describe(None)}")
        code.depth += 1
        for name, group in zip(names, self.kernel.owner.param_groups):
            code.line(self.hyperparameters(name))
            for parameter in group["params"]:
                self.emit_update(code, code.bind(parameter, "parameter"), id(parameter))
        code.depth -= 1
        self.kernel.emit_otherwise(code)

    def holds(self, group) -> str:
        """What the lines assume of a group's settings, checked at each call."""
        return f'{group}["momentum"] == 0 and {group}["weight_decay"] == 0'

    def hyperparameters(self, group) -> str:
        """The line that reads the group's settings into the names the updates use."""
        return f'lr = {group}["lr"]'

    def update(self, code, parameter, grad) -> list:
        return [
            f"subtract({parameter}._data, lr * {grad}, out={parameter}._data)",
            f"bump_version({parameter})",
        ]

    def emit_update(self, code, parameter, key):
        slot = self.grads.get(key)
        if slot is None:  # not written by this program: None, or left from before
            code.line(f"if {parameter}._grad is not None:")
            code.depth += 1
            grad = f"{parameter}._grad._data"
        else:
            grad = code.slot(slot)
        for line in self.update(code, parameter, grad):
            code.line(line)
        if slot is None:
            code.depth -= 1

    def reads(self):
        return tuple(self.grads.values())

    def describe(self, name):
        return self.kernel.describe(name) + "   (fused)"


class FusedUpdateStep(FusedSGDStep):
    """A step written as one call of the optimizer's own per-parameter update for each
    parameter with a gradient: `update(optimizer, parameter, grad, *settings)`, the
    settings read from the group at each call (`keys`, in the update's order)."""

    __slots__ = ()
    keys = ()
    update_function = None

    def holds(self, group) -> str:
        return ""

    def hyperparameters(self, group) -> str:
        values = ", ".join(f'{group}["{key}"]' for key in self.keys)
        return f"{', '.join(self.keys)} = {values}"

    def update(self, code, parameter, grad) -> list:
        optimizer = code.bind(self.kernel.owner, "optimizer")
        function = code.bind(self.update_function, self.update_function.__name__)
        return [f"{function}({optimizer}, {parameter}, {grad}, {', '.join(self.keys)})"]


class FusedMomentumSGDStep(FusedUpdateStep):
    """SGD's step with momentum or weight decay: one `sgd_update` call per parameter."""

    __slots__ = ()
    keys = ("lr", "momentum", "dampening", "weight_decay", "nesterov")
    update_function = staticmethod(sgd_update)


class FusedAdamStep(FusedUpdateStep):
    """Adam's or AdamW's step, one `adam_update` call per parameter with a gradient."""

    __slots__ = ()
    keys = ("lr", "betas", "eps", "weight_decay", "amsgrad")
    update_function = staticmethod(adam_update)


def fuse_call(kernel, grads):
    """The fused kernel for a `Call` of zero_grad(), plain SGD's or Adam's step(), else None.
    `grads` maps id(parameter) to the slot holding the gradient the program wrote."""
    if kernel.args or kernel.kwargs or not isinstance(kernel.owner, Optimizer):
        return None
    if kernel.function is Optimizer.zero_grad.__wrapped__:
        return FusedZeroGrad(kernel)
    if type(kernel.owner) is SGD and kernel.function is SGD.step.__wrapped__:
        groups = kernel.owner.param_groups
        if all(g["momentum"] == 0 and g["weight_decay"] == 0 for g in groups):
            return FusedSGDStep(kernel, dict(grads))
        return FusedMomentumSGDStep(kernel, dict(grads))
    if type(kernel.owner) in (Adam, AdamW) and kernel.function is Adam.step.__wrapped__:
        return FusedAdamStep(kernel, dict(grads))
    return None
