"""Fused optimizer kernels: `zero_grad()` and plain SGD's `step()` written into the lines.

A `Call` kernel replays an optimizer method by calling it again, which walks the
parameter groups in Python and reads each gradient through `parameter.grad`. For the
two calls of almost every training step the replay can write the work out instead,
parameter by parameter, and take each gradient from the slot the leaf write just filled.
The numbers are the method's own (`np.subtract(p, lr * grad, out=p)`, optim.py), and the
hyperparameters are still read at each call (a learning-rate scheduler's new lr counts).

What the lines assume is checked at each replay, at the cost of a few dictionary reads:
the number of groups and of parameters in each (add_param_group, a parameter appended),
and, for SGD, that momentum and weight decay are still 0. If one does not hold, the
method is called as a whole, as a `Call` kernel would.
"""

from __future__ import annotations

from ..optim import SGD, Optimizer
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
        for name in names:
            condition.append(f'{name}["momentum"] == 0 and {name}["weight_decay"] == 0')
        code.line(f"if {' and '.join(condition)}:  # {self.describe(None)}")
        code.depth += 1
        for name, group in zip(names, self.kernel.owner.param_groups):
            code.line(f'lr = {name}["lr"]')
            for parameter in group["params"]:
                self.emit_update(code, code.bind(parameter, "parameter"), id(parameter))
        code.depth -= 1
        self.kernel.emit_otherwise(code)

    def emit_update(self, code, parameter, key):
        slot = self.grads.get(key)
        if slot is None:  # not written by this program: None, or left from before
            code.line(f"if {parameter}._grad is not None:")
            code.depth += 1
            grad = f"{parameter}._grad._data"
        else:
            grad = code.slot(slot)
        code.line(f"subtract({parameter}._data, lr * {grad}, out={parameter}._data)")
        code.line(f"{parameter}._version[0] += 1")
        if slot is None:
            code.depth -= 1

    def reads(self):
        return tuple(self.grads.values())

    def describe(self, name):
        return self.kernel.describe(name) + "   (fused)"


def fuse_call(kernel, grads):
    """The fused kernel for a `Call` of zero_grad() or plain SGD's step(), else None.
    `grads` maps id(parameter) to the slot holding the gradient the program wrote."""
    if kernel.args or kernel.kwargs or not isinstance(kernel.owner, Optimizer):
        return None
    if kernel.function is Optimizer.zero_grad.__wrapped__:
        return FusedZeroGrad(kernel)
    if type(kernel.owner) is SGD and kernel.function is SGD.step.__wrapped__:
        return FusedSGDStep(kernel, dict(grads))
    return None
