"""Fused optimizer kernels: `zero_grad()` and an optimizer's `step()` in the lines.

A `Call` kernel replays an optimizer method by calling it again, which walks the
parameter groups in Python and reads each gradient through `parameter.grad`. For the
two calls of almost every training step the replay can write the work out instead,
parameter by parameter, and take each gradient from the slot the leaf write just filled.
The numbers are the method's own: an optimizer whose step is one update per parameter
declares that update (`SGD.parameter_update = (sgd_update, (...settings))`), which its
`step` calls too; the replay calls it. The settings are read at each call (a
learning-rate scheduler's new lr counts). The jit knows no optimizer class: only this
protocol (`param_groups`, `zero_grad`, `step`, `parameter_update`).

What the lines assume is checked at each replay, at the cost of a few dictionary reads:
the number of groups and of parameters in each (add_param_group, a parameter appended).
If it does not hold, the method is called as a whole, as a `Call` kernel would.
"""

from __future__ import annotations

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


class FusedUpdateStep(Kernel):
    """An optimizer's step written as one call of its own per-parameter update for each
    parameter with a gradient: `update(optimizer, parameter, grad, *settings)`, the
    settings read from the group at each call (`keys`, in the update's order), the
    gradient from its leaf write's slot when the program wrote it (`grads`: id(parameter)
    -> slot), else from `parameter.grad`. The optimizer declares both
    (`parameter_update = (update, keys)`, beside its `step`)."""

    __slots__ = ("kernel", "grads", "update", "keys")

    def __init__(self, kernel, grads, update, keys):
        self.kernel = kernel
        self.grads = grads
        self.update = update
        self.keys = keys
        self.frees = ()

    def emit(self, code, number):
        names, condition = _layout_check(code, self.kernel)
        code.line(f"if {' and '.join(condition)}:  # {self.describe(None)}")
        code.depth += 1
        optimizer = code.bind(self.kernel.owner, "optimizer")
        update = code.bind(self.update, self.update.__name__)
        for name, group in zip(names, self.kernel.owner.param_groups):
            values = ", ".join(f'{name}["{key}"]' for key in self.keys)
            code.line(f"{', '.join(self.keys)} = {values}")
            for parameter in group["params"]:
                name_of = code.bind(parameter, "parameter")
                slot = self.grads.get(id(parameter))
                if slot is None:  # not written by this program: None, or left from before
                    code.line(f"if {name_of}._grad is not None:")
                    grad = f"    {update}({optimizer}, {name_of}, {name_of}._grad._data, "
                else:
                    grad = f"{update}({optimizer}, {name_of}, {code.slot(slot)}, "
                code.line(grad + ", ".join(self.keys) + ")")
        code.depth -= 1
        self.kernel.emit_otherwise(code)

    def reads(self):
        return tuple(self.grads.values())

    def describe(self, name):
        return self.kernel.describe(name) + "   (fused)"


def fuse_call(kernel, grads):
    """The fused kernel for a `Call` of an optimizer's zero_grad() or of a step whose class
    declares its per-parameter update, else None. `grads` maps id(parameter) to the slot
    holding the gradient the program wrote."""
    owner = kernel.owner
    if kernel.args or kernel.kwargs or not hasattr(owner, "param_groups"):
        return None
    function = kernel.function
    if function.__name__ == "zero_grad" and function.__module__ == "tinygrad_ops.optim":
        return FusedZeroGrad(kernel)  # (the optimizers' own: each .grad set to None)
    for cls in type(owner).__mro__:  # (the class that defines step must declare the update)
        if "step" in vars(cls):
            declared = vars(cls).get("parameter_update")
            wrapped = getattr(vars(cls)["step"], "__wrapped__", None)
            if declared is None or kernel.function is not wrapped:
                return None
            return FusedUpdateStep(kernel, dict(grads), *declared)
    return None
