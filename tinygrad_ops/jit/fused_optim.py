"""Fused optimizer kernels: `zero_grad()` and an optimizer's `step()` written out in the
lines, parameter by parameter, each gradient taken from the slot the leaf write just filled
(what that replays, and when it pays: docs/compile.md). A `Call` kernel would call the
method again, which walks the parameter groups in Python.

An optimizer whose step is one update per parameter declares that update
(`SGD.parameter_update = (sgd_update, (...settings))`), which its `step` calls too; the
replay writes its lines in, as an op's rule (inline.py). The jit knows no optimizer class:
only this protocol (`param_groups`, `zero_grad`, `step`, `parameter_update`). The settings
are read at each call (a learning-rate scheduler's new lr counts), but for those the
update's branches test (momentum, weight decay), which are the capture's (specialise.py
decides the branches): their types and values are checked at each replay, with the number
of groups and of parameters in each (add_param_group, a parameter appended). If that does
not hold, the method is called as a whole, as a `Call` kernel would.
"""

from __future__ import annotations

import ast

from .inline import binder, body_of, write
from .kernels import Kernel
from .specialise import Fact, Specialise, clone, drop_dead, frozen, loaded_names


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
    """An optimizer's step written as its own per-parameter update's lines for each
    parameter with a gradient (`update(optimizer, parameter, grad, *settings)`, inlined:
    inline.py), the settings read from the group at each call (`keys`, in the update's
    order) but for those its branches test, fixed to the capture's and checked (`fixed`);
    the gradient from its leaf write's slot when the program wrote it (`grads`:
    id(parameter) -> slot), else from `parameter.grad`. The optimizer declares both
    (`parameter_update = (update, keys)`, beside its `step`)."""

    __slots__ = ("kernel", "grads", "body", "keys")

    def __init__(self, kernel, grads, body, keys):
        self.kernel = kernel
        self.grads = grads
        self.body = body
        self.keys = keys

    def emit(self, code, number):
        names, condition = _layout_check(code, self.kernel)
        groups = self.kernel.owner.param_groups
        updates = [self.specialised(code, group) for group in groups]
        for name, (_, fixed) in zip(names, updates):
            for key, value in fixed:
                kind, known = binder(code)(type(value)), code.bind(value, "fixed")
                condition.append(f'type({name}["{key}"]) is {kind} and {name}["{key}"] == {known}')
        code.line(f"if {' and '.join(condition)}:  # {self.describe(None)}")
        code.depth += 1
        optimizer = code.bind(self.kernel.owner, "optimizer")
        for name, group, (statements, _) in zip(names, groups, updates):
            read, settings = loaded_names(statements), zip(self.body.parameters[3:], self.keys)
            keys = [key for parameter, key in settings if parameter in read]  # (still named)
            if keys:
                code.line(", ".join(keys) + " = " + ", ".join(f'{name}["{key}"]' for key in keys))
            for parameter in group["params"]:
                name_of = code.bind(parameter, "parameter")
                slot = self.grads.get(id(parameter))
                grad = f"{name_of}._grad._data" if slot is None else code.slot(slot)
                if slot is None:  # not written by this program: None, or left from before
                    code.line(f"if {name_of}._grad is not None:")
                code.depth += slot is None
                arguments = dict(zip(self.body.parameters, (optimizer, name_of, grad, *self.keys)))
                write(code, self.body, statements, "u", "", "", "_", arguments)
                code.depth -= slot is None
        code.depth -= 1
        self.kernel.emit_otherwise(code)

    def specialised(self, code, group):
        """The update's statements with the settings its branches test fixed to `group`'s
        (specialise.py decides those branches), and those settings: (key, value)."""
        body = self.body
        tested = {
            name.id
            for statement in body.statements
            for branch in ast.walk(statement)
            if isinstance(branch, (ast.If, ast.IfExp))
            for name in ast.walk(branch.test)
            if isinstance(name, ast.Name)
        }
        facts = {name: Fact(None, value) for name, value in body.global_values.items()}
        fixed = []
        for parameter, key in zip(body.parameters[3:], self.keys):
            if parameter in tested and frozen(group[key]):
                facts[parameter] = Fact(None, group[key])
                fixed.append((key, group[key]))
        statements = [clone(statement) for statement in body.statements]
        return drop_dead([Specialise(facts, binder(code)).block(statements)])[0], fixed

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
            update, keys = declared
            body = body_of(update, method=False)
            return None if body is None else FusedUpdateStep(kernel, dict(grads), body, keys)
    return None
