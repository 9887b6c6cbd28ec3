"""Guards: what a compiled program assumed about the world, checked before each replay
(docs/compile.md lists them: the arguments' shapes, dtypes and values, the captured arrays,
the modes, the shared generator, the modules called, the names the code reads).

Each guard is stated once, as a `Check`: a condition in Python text, true when the
assumption fails, and the sentence that says what changed. `holds`, made at every call, is
all the conditions in one generated function (compiled at the first replay, with the
program's own); `differences` evaluates them one by one, for the error raised when no
program fits and no more may be captured.
"""

from __future__ import annotations

import types
from typing import NamedTuple

import numpy as np

from ..mode import STATE
from ..random_state import default_generator
from ..scheduler import get_default_scheduler
from ..tensor import Tensor
from .codegen import compiled_code
from .kernels import Call, ForgetGrad, LeafWrite, ReadGrad, SetGrad


def describe_value(value):
    """The part of an argument that a program depends on: shape and dtype of a tensor or
    array (and requires_grad), the value itself of a number or string, else its identity."""
    if isinstance(value, Tensor):
        return ("tensor", value.data.shape, value.data.dtype, value._requires_grad)
    if isinstance(value, np.ndarray):
        return ("array", value.shape, value.dtype)
    if value is None or isinstance(value, (bool, int, float, str, np.generic)):
        return ("value", type(value), value)
    return ("object", id(value))


class Check(NamedTuple):
    """One guard: `condition` (Python text over `values`, `keywords` and the bound names)
    is true when it fails; `explain` (a sentence, or a function of the call's values and
    keywords that writes one) then says what changed."""

    condition: str
    explain: object


class Guards:
    """The assumptions of one program, as `Check`s (see the module docstring)."""

    def __init__(self, values, keywords):
        """The checks of the call itself and of the world as the capture starts."""
        self.namespace = {
            "Tensor": Tensor,
            "ndarray": np.ndarray,
            "describe_value": describe_value,
            "STATE": STATE,
            "get_default_scheduler": get_default_scheduler,
            "default_generator": default_generator,
        }
        self.names = {}  # id(value) -> its name in the namespace
        self.objects = [value for value in values if describe_value(value)[0] == "object"]
        count = len(values)

        def explain_call(now, now_keywords):
            if now_keywords != keywords:
                return f"keyword arguments or containers: {keywords!r} -> {now_keywords!r}"
            return f"{count} arguments -> {len(now)}"

        condition = f"keywords != {self.bind(keywords)} or len(values) != {count}"
        self.checks = [Check(condition, explain_call)]
        for position, value in enumerate(values):
            self.checks.append(self.argument_check(position, describe_value(value)))
        grad_mode, scheduler = STATE.grad_enabled, get_default_scheduler()
        self.add(
            f"STATE.grad_enabled is not {grad_mode}",
            lambda *_: f"grad mode: {grad_mode} -> {STATE.grad_enabled}",
        )
        self.add(
            f"get_default_scheduler() != {self.bind(scheduler)}",
            lambda *_: f"default scheduler: {scheduler!r} -> {get_default_scheduler()!r}",
        )

    def bind(self, value) -> str:
        """A name for `value` in the checks' namespace."""
        if id(value) not in self.names:
            self.names[id(value)] = f"g{len(self.namespace)}"
            self.namespace[self.names[id(value)]] = value
        return self.names[id(value)]

    def add(self, condition, explain):
        self.checks.append(Check(condition, explain))

    def argument_check(self, position, expected) -> Check:
        """Argument `position` against its capture's `describe_value`; a Tensor or an
        array (the usual arguments) compared without making a new tuple."""
        value = f"values[{position}]"
        otherwise = f"describe_value(v) != {self.bind(expected)}"
        if expected[0] == "tensor":
            _, shape, dtype, requires_grad = expected
            fields = (
                f"v._data.shape != {shape!r} or v._data.dtype != {self.bind(dtype)} "
                f"or v._requires_grad is not {requires_grad}"
            )
            condition = f"({fields}) if type(v := {value}) is Tensor else {otherwise}"
        elif expected[0] == "array":
            fields = f"v.shape != {expected[1]!r} or v.dtype != {self.bind(expected[2])}"
            condition = f"({fields}) if type(v := {value}) is ndarray else {otherwise}"
        else:
            condition = f"describe_value({value}) != {self.bind(expected)}"

        def explain(values, keywords):
            now = describe_value(values[position])
            return f"argument {position}: {_spec(expected)} -> {_spec(now)}"

        return Check(condition, explain)

    def complete(self, captured, generators, modules, reached, grads):
        """The checks of what the capture read: the leaves' .grad (first: a step that calls
        zero_grad() after its forward has one program for its first call and one for the
        others, told apart here), the captured tensors, the shared generators, the modules
        (`capture.module_guards`) and the names the function's code reads."""
        for tensor, was_none in grads:
            state = "None" if was_none else "a tensor"
            self.add(
                f"({self.bind(tensor)}._grad is None) is not {was_none}",
                f"the .grad of '{tensor.name or tensor.shape}' was {state} as the call "
                "began, at capture (the step reads it, or adds into it)",
            )
        for tensor in captured:
            data, requires_grad = tensor.data, tensor._requires_grad
            name = self.bind(tensor)
            self.add(
                f"{name}._data is not {self.bind(data)}",
                lambda *_, data=data, tensor=tensor: (
                    f"a captured tensor of shape {data.shape} now holds another array "
                    f"(shape {tensor.data.shape})"
                ),
            )
            self.add(
                f"{name}._requires_grad is not {requires_grad}",
                f"a captured tensor's requires_grad: {requires_grad} -> {not requires_grad}",
            )
        for generator in generators:
            self.add(
                f"default_generator() is not {self.bind(generator)}",
                "the default random generator was replaced (tg.manual_seed)",
            )
        for module, training, held in modules:
            self.module_checks(module, training, held)
        for where, name, value in reached:
            now = f".get({name!r})" if isinstance(where, dict) else ".cell_contents"
            self.add(
                f"{self.bind(where)}{now} is not {self.bind(value)}",
                f"'{name}' names another object",
            )

    def module_checks(self, module, training, held):
        """A module's train/eval flag (None: the program sets it itself, by a replayed
        train() or eval()), and that it holds the objects of `members` (and no others)."""
        name = self.bind(module)
        kind = type(module).__name__
        if training is not None:
            self.add(
                f"{name}.training != {training}",
                lambda *_: f"{kind} was switched to {'train' if module.training else 'eval'} mode",
            )
        conditions = []
        size = f"len({name}._parameters) + len({name}._buffers) + len({name}._modules)"
        conditions.append(f"{size} != {sum(entry[3] is not _SETTING for entry in held)}")
        for registry, key, value, data in held:
            if data is _SETTING:  # a number or string the module's forward reads (Dropout's p)
                conditions.append(f"{self.bind(registry)}.get({key!r}) != {self.bind(value)}")
                continue
            conditions.append(f"{self.bind(registry)}.get({key!r}) is not {self.bind(value)}")
            if data is not None:
                conditions.append(f"{self.bind(value)}._data is not {self.bind(data)}")
        replaced = (
            f"a parameter, buffer, submodule or array of {kind} was replaced, or one of its "
            "settings changed"
        )
        for condition in conditions:
            self.add(condition, replaced)

    def holds(self, values, keywords) -> bool:
        """True when the program may replay this call: the first call writes the checks
        as one function, `self.source`, and puts it here."""
        conditions = [check.condition for check in self.checks]
        # One `if` over all of them (`or` stops at the first that fails, as separate ifs
        # would): half the text for Python's compiler to read.
        lines = ["if (", *(f"    ({condition}) or" for condition in conditions[:-1])]
        lines += [f"    ({conditions[-1]})", "):", "    return False"]
        body = "".join(f"    {line}\n" for line in lines)
        self.source = f"def holds(values, keywords):\n{body}    return True\n"
        exec(compiled_code(self.source, "<tg.compile guards>"), self.namespace)  # (written above)
        self.holds = self.namespace["holds"]
        return self.holds(values, keywords)

    def differences(self, values, keywords) -> list:
        """What does not hold, one sentence per guard that fails (each once)."""
        found = []
        for number, check in enumerate(self.checks):
            if eval(check.condition, self.namespace, {"values": values, "keywords": keywords}):
                explain = check.explain
                found.append(explain(values, keywords) if callable(explain) else explain)
                if number == 0:
                    break  # (another call's layout: the arguments cannot be compared)
        return list(dict.fromkeys(found))


def needed_grad_guards(grad_guards, kernels) -> list:
    """The (leaf, whether its .grad was None) guards a program needs: not those of the
    leaves that a replayed zero_grad() resets before any kernel writes or reads their
    gradient. The .grad such a leaf starts a call with is forgotten, as in the step that
    runs its forward before zero_grad() (that of `tinygrad-ops train`): one program serves
    its first call and all the others."""
    return [
        (tensor, was_none) for tensor, was_none in grad_guards if not _reset_first(tensor, kernels)
    ]


def _reset_first(tensor, kernels) -> bool:
    """Whether the first kernel that touches `tensor.grad` is a zero_grad() that resets it
    (an optimizer or a module: what holds `param_groups` or `parameters()`)."""
    for kernel in kernels:
        if (
            isinstance(kernel, (LeafWrite, ForgetGrad, SetGrad, ReadGrad))
            and kernel.tensor is tensor
        ):
            return False
        if not isinstance(kernel, Call) or not _holds_parameters(kernel.owner):
            continue  # (a learning-rate scheduler's step does not touch gradients)
        if kernel.function.__name__ == "zero_grad" and not kernel.args and not kernel.kwargs:
            if any(parameter is tensor for parameter in parameters_of(kernel.owner)):
                return True
        elif hasattr(kernel.owner, "param_groups"):
            return False  # a step reads the gradients it finds
    return False


def _holds_parameters(owner) -> bool:
    return hasattr(owner, "param_groups") or callable(getattr(owner, "parameters", None))


def parameters_of(owner):
    """The parameters an optimizer (`param_groups`) or a module (`parameters()`) holds."""
    groups = getattr(owner, "param_groups", None)
    if groups is not None:
        return (parameter for group in groups for parameter in group["params"])
    parameters = getattr(owner, "parameters", None)
    return parameters() if callable(parameters) else ()


_SETTING = object()  # (the `data` of a member that is a plain setting, compared by value)
_PLAIN = (bool, int, float, str, type(None))


def _plain(value) -> bool:
    if isinstance(value, tuple):
        return all(isinstance(item, _PLAIN) for item in value)
    return isinstance(value, _PLAIN)


def members(module) -> tuple:
    """(registry, name, object, its array or None) for each parameter, buffer and
    submodule `module` holds itself: the program read those objects and those arrays
    (`model.head = nn.Linear(...)`, `bn.running_mean.data = ...` make another program)."""
    held = [
        (registry, name, value, getattr(value, "_data", None))
        for registry in (module._parameters, module._buffers, module._modules)
        for name, value in registry.items()
    ]
    settings = vars(module)
    held += [
        (settings, name, value, _SETTING)
        for name, value in settings.items()
        if name != "training" and _plain(value)
    ]
    return tuple(held)


def reached_names(function) -> list:
    """(namespace, name, object) for each global and closure variable the function's
    code names (its nested functions' too), but modules: the program was captured with
    those objects (an optimizer or a model rebound under the same name makes another)."""
    code = getattr(function, "__code__", None)
    if code is None:
        return []
    names = set()
    stack = [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(const for const in current.co_consts if isinstance(const, types.CodeType))
    reached = []
    namespace = function.__globals__
    for name in sorted(names):
        if name in namespace and not isinstance(namespace[name], types.ModuleType):
            reached.append((namespace, name, namespace[name]))
    for name, cell in zip(code.co_freevars, function.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # (an empty cell: a name assigned later)
            continue
        if not isinstance(value, types.ModuleType):
            reached.append((cell, name, value))
    return reached


def reached_objects(function, depth=3) -> list:
    """The objects `function`'s globals and closure name, and those that the functions
    among them name, `depth` calls deep (a step that calls a helper over the model): what
    the capture watches as it begins."""
    found, seen, todo = [], set(), [(function, 0)]
    while todo:
        current, level = todo.pop()
        for _, _, value in reached_names(current):
            if id(value) not in seen:
                seen.add(id(value))
                found.append(value)
                if level < depth and isinstance(value, types.FunctionType):
                    todo.append((value, level + 1))
    return found


def _spec(description) -> str:
    kind = description[0]
    if kind == "tensor":
        _, shape, dtype, requires_grad = description
        return f"Tensor {shape} {dtype}" + (" requires_grad" if requires_grad else "")
    if kind == "array":
        return f"array {description[1]} {description[2]}"
    if kind == "value":
        return repr(description[2])
    return "another object"
