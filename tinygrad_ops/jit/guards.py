"""Guards: what a compiled program assumed about the world, checked before each replay.

A program is valid only while these hold: the arguments have the shapes and dtypes (and,
for plain Python values, the values) it was captured with; every tensor it read from
outside is still the same array and still (or still not) requires grad; grad mode, the
default scheduler, the shared random generator and each module's train/eval flag are as
they were, and each module called still holds the same parameter and buffer objects
(`model.weight = nn.Parameter(...)` after the capture gives a new program, not the old
weight). `holds` is the fast check made at every call; `differences` says in words what
changed, for the error raised when no program fits and no more may be captured.
"""

from __future__ import annotations

import types

import numpy as np

from ..mode import STATE
from ..random_state import default_generator
from ..scheduler import get_default_scheduler
from ..tensor import Tensor
from .codegen import compiled_code
from .kernels import Call, ForgetGrad, LeafWrite, SetGrad

INTERPRETED_CHECKS = 2  # calls checked by `differences` before the checks are compiled


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


class Guards:
    """The assumptions of one program (see the module docstring)."""

    def __init__(self, values, keywords, captured, generators, modules):
        self.signature = tuple(describe_value(value) for value in values)
        self.keywords = keywords  # the names of the keyword arguments, in call order
        self.objects = [value for value in values if self._by_identity(value)]  # kept alive
        self.captured = [(tensor, tensor.data, tensor._requires_grad) for tensor in captured]
        self.grad_enabled = STATE.grad_enabled
        self.scheduler = get_default_scheduler()
        self.generators = generators  # generators that were default_generator() at capture
        self.modules = [(module, module.training, members(module)) for module in modules]
        self.grads = []  # (leaf, whether its .grad was None as the capture began)
        self.reached = []  # (namespace, name, object): the globals and closure the code reads
        self.checks = 0

    @staticmethod
    def _by_identity(value):
        return describe_value(value)[0] == "object"

    def holds(self, values, keywords) -> bool:
        """True when the program may replay this call (made at every call). The first
        `INTERPRETED_CHECKS` checks ask `differences`; then `seal` writes the checks out as
        one generated function, `self.source`, and puts it here (compiling it costs more
        than an eager step: a program that is called again pays it, not the capture)."""
        self.checks += 1
        if self.checks <= INTERPRETED_CHECKS:
            return not self.differences(values, keywords)
        self.seal()
        return self.holds(values, keywords)

    def seal(self):
        """Write the checks as straight-line Python, once every guard is known: an
        argument's shape and dtype, each captured tensor's array, the modes, the modules'
        flags and members, the leaves' .grad; the first that fails returns False."""
        namespace = {
            "Tensor": Tensor,
            "ndarray": np.ndarray,
            "describe_value": describe_value,
            "STATE": STATE,
            "get_default_scheduler": get_default_scheduler,
            "default_generator": default_generator,
        }

        names = {}  # id(value) -> its name

        def bind(value):
            if id(value) not in names:
                names[id(value)] = f"g{len(namespace)}"
                namespace[names[id(value)]] = value
            return names[id(value)]

        count = len(self.signature)
        checks = [f"keywords != {bind(self.keywords)} or len(values) != {count}"]
        lines = []
        for position, expected in enumerate(self.signature):
            lines.extend(_argument_check(position, expected, bind))
        # (the .grad checks first: a step that calls zero_grad() after its forward has one
        # program for the first call and one for the others, told apart here)
        checks.extend(f"({bind(t)}._grad is None) is not {none}" for t, none in self.grads)
        for tensor, data, requires_grad in self.captured:
            name = bind(tensor)
            checks.append(f"{name}._data is not {bind(data)}")
            checks.append(f"{name}._requires_grad is not {requires_grad}")
        checks.append(f"STATE.grad_enabled is not {self.grad_enabled}")
        checks.append(f"get_default_scheduler() != {bind(self.scheduler)}")
        checks.extend(f"default_generator() is not {bind(g)}" for g in self.generators)
        for module, training, held in self.modules:
            checks.extend(_module_checks(bind(module), training, held, bind))
        for where, name, value in self.reached:
            now = f".get({name!r})" if isinstance(where, dict) else ".cell_contents"
            checks.append(f"{bind(where)}{now} is not {bind(value)}")
        lines[:0] = [f"if {checks[0]}:", "    return False"]
        if checks[1:]:
            # One `if` over all of them (`or` stops at the first that fails, as separate
            # ifs would): half the text for Python's compiler to read.
            lines += ["if (", *(f"    {check} or" for check in checks[1:-1])]
            lines += [f"    {checks[-1]}", "):", "    return False"]
        body = "".join(f"    {line}\n" for line in lines)
        self.source = f"def holds(values, keywords):\n{body}    return True\n"
        exec(compiled_code(self.source, "<tg.compile guards>"), namespace)  # (written above)
        self.holds = namespace["holds"]

    def differences(self, values, keywords) -> list:
        """What does not hold, one sentence per guard that fails."""
        found = []
        if keywords != self.keywords:
            found.append(f"keyword arguments {list(self.keywords)} -> {list(keywords)}")
        elif len(values) != len(self.signature):
            found.append(f"{len(self.signature)} arguments -> {len(values)}")
        else:
            for position, (value, expected) in enumerate(zip(values, self.signature)):
                now = describe_value(value)
                if now != expected:
                    found.append(f"argument {position}: {_spec(expected)} -> {_spec(now)}")
        for tensor, data, requires_grad in self.captured:
            if tensor.data is not data:
                found.append(
                    f"a captured tensor of shape {data.shape} now holds another array "
                    f"(shape {tensor.data.shape})"
                )
            elif tensor._requires_grad is not requires_grad:
                found.append(
                    f"a captured tensor's requires_grad: {requires_grad} -> {not requires_grad}"
                )
        if STATE.grad_enabled is not self.grad_enabled:
            found.append(f"grad mode: {self.grad_enabled} -> {STATE.grad_enabled}")
        if get_default_scheduler() != self.scheduler:
            found.append(f"default scheduler: {self.scheduler!r} -> {get_default_scheduler()!r}")
        if any(default_generator() is not generator for generator in self.generators):
            found.append("the default random generator was replaced (tg.manual_seed)")
        for tensor, was_none in self.grads:
            if (tensor.grad is None) is not was_none:
                state = "None" if was_none else "a tensor"
                found.append(
                    f"the .grad of '{tensor.name or tensor.shape}' was {state} at capture "
                    "(assigning .grad inside a compiled function is not replayed: use "
                    "optimizer.zero_grad())"
                )
        for module, training, held in self.modules:
            if training is not None and module.training != training:
                mode = "train" if module.training else "eval"
                found.append(f"{type(module).__name__} was switched to {mode} mode")
            if not holds_members(module, held):
                found.append(
                    f"a parameter, buffer, submodule or array of {type(module).__name__} "
                    "was replaced, or one of its settings changed"
                )
        for namespace, name, value in self.reached:
            if _reached_now(namespace, name) is not value:
                found.append(f"'{name}' names another object")
        return found


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
        if isinstance(kernel, (LeafWrite, ForgetGrad, SetGrad)) and kernel.tensor is tensor:
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


def _argument_check(position, expected, bind) -> list:
    """The lines that check argument `position` against its capture's `describe_value`."""
    lines = [f"value = values[{position}]"]
    if expected[0] == "array":
        _, shape, dtype = expected
        return lines + [
            "if type(value) is ndarray:",
            f"    if value.shape != {shape!r} or value.dtype != {bind(dtype)}:",
            "        return False",
            f"elif describe_value(value) != {bind(expected)}:",
            "    return False",
        ]
    if expected[0] != "tensor":
        return lines + [f"if describe_value(value) != {bind(expected)}:", "    return False"]
    _, shape, dtype, requires_grad = expected
    return lines + [
        "if type(value) is Tensor:  # the usual argument: compared without a new tuple",
        f"    if value._data.shape != {shape!r} or value._data.dtype != {bind(dtype)}:",
        "        return False",
        f"    if value._requires_grad != {requires_grad}:",
        "        return False",
        f"elif describe_value(value) != {bind(expected)}:",
        "    return False",
    ]


def _module_checks(module, training, held, bind) -> list:
    """A module's train/eval flag (None: the program sets it itself, by a replayed
    train() or eval()), and that it holds the objects of `members` (and no others)."""
    checks = [] if training is None else [f"{module}.training != {training}"]
    size = f"len({module}._parameters) + len({module}._buffers) + len({module}._modules)"
    checks.append(f"{size} != {sum(entry[3] is not _SETTING for entry in held)}")
    for registry, name, value, data in held:
        if data is _SETTING:  # a number or string the module's forward reads (Dropout's p)
            checks.append(f"{bind(registry)}.get({name!r}) != {bind(value)}")
            continue
        checks.append(f"{bind(registry)}.get({name!r}) is not {bind(value)}")
        if data is not None:
            checks.append(f"{bind(value)}._data is not {bind(data)}")
    return checks


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


def holds_members(module, held) -> bool:
    """Whether `module` still holds the objects and arrays of `members`."""
    size = len(module._parameters) + len(module._buffers) + len(module._modules)
    objects = [entry for entry in held if entry[3] is not _SETTING]
    return len(objects) == size and all(
        registry.get(name) == value
        if data is _SETTING
        else registry.get(name) is value and (data is None or value._data is data)
        for registry, name, value, data in held
    )


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


def _reached_now(namespace, name):
    if isinstance(namespace, dict):
        return namespace.get(name)
    try:
        return namespace.cell_contents
    except ValueError:
        return None


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
