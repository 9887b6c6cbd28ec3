"""`tg.compile`: capture a function once, replay its program on later calls."""

from __future__ import annotations

import functools
import types

from ..mode import STATE, gc_paused
from ..tensor import Tensor
from .capture import CompileError, Recorder, user_line
from .guards import Guards, needed_grad_guards, reached_names, reached_objects
from .program import Output, Program


class CompiledFunction:
    """A function with its captured programs (see `compile`)."""

    def __init__(self, function, max_programs=4):
        functools.update_wrapper(self, function)
        self.function = function
        self.max_programs = max_programs
        self.programs = []  # (guards, program), the most recently captured last

    @property
    def program(self) -> Program:
        """The most recently captured program (print it to see the kernels)."""
        if not self.programs:
            raise CompileError(f"{self.__name__} has not been called yet: nothing is captured")
        return self.programs[-1][1]

    def __call__(self, *args, **kwargs):
        if STATE.anomaly:  # detect_anomaly() checks every gradient: the eager step does
            return detached(self.function(*args, **kwargs))
        if not kwargs:  # the usual call, tried before `flatten` opens any container: the
            for guards, program in self.programs:  # guards of a program captured with one
                if guards.holds(args, ()):  # hold only for its layout, given as a keyword
                    return program.run(args)
        values, keywords = (args + tuple(kwargs.values()), tuple(kwargs)) if kwargs else (args, ())
        values, keywords = flatten(values, keywords)
        for guards, program in self.programs:
            if guards.holds(values, keywords):
                return program.run(values)
        if len(self.programs) >= self.max_programs:
            guards = self.programs[-1][0]
            changes = "; ".join(guards.differences(values, keywords)) or "unknown"
            raise CompileError(
                f"{self.__name__}: no captured program fits this call and the limit of "
                f"{self.max_programs} programs is reached. What changed since the last "
                f"capture: {changes}. A value that changes at every call goes in as a "
                "Tensor argument, not as a Python number; or pass max_programs= to "
                f"tg.compile to keep more.\n  at {user_line()}"
            )
        return self.capture(args, kwargs, values, keywords)

    def capture(self, args, kwargs, values, keywords):
        """Run the function eagerly with a recorder watching; keep the program it wrote.
        (The cyclic garbage collector is paused meanwhile: the capture's thousands of
        objects all live on, and for a long RNN its passes cost more than the capture.)"""
        if STATE.tracer.active:
            raise CompileError(f"{self.__name__}: a compiled function called while capturing")
        with gc_paused():
            return self.record(args, kwargs, values, keywords)

    def record(self, args, kwargs, values, keywords):
        """The capture itself (see `capture`)."""
        recorder = Recorder(values)
        for value in reached_objects(self.function):  # (what the step's Python may change)
            recorder.watch(value)
        for value in values:
            recorder.watch(value)
        guards = Guards(values, keywords)  # the world as the capture starts
        previous, STATE.tracer = STATE.tracer, recorder
        try:
            result = self.function(*args, **kwargs)
        finally:
            STATE.tracer = previous
        recorder.check_finished()
        output = output_of(result, recorder, values)
        guards.complete(
            recorder.captured,
            recorder.generators,
            recorder.module_guards(),
            reached_names(self.function),
            needed_grad_guards(recorder.grad_guards, recorder.kernels) + recorder.grads_read,
        )
        program = Program(
            self.__name__,
            recorder.slots,
            recorder.initial,
            recorder.arguments,
            recorder.kernels,
            recorder.phases,
            output,
            recorder.scanned,
        )
        forget_capture(recorder)
        self.programs.append((guards, program))
        return detached(result)

    def __get__(self, instance, owner=None):
        """As a method (`@tg.compile` on a `def step(self, ...)`): bound to the instance,
        which is then an argument guarded by identity."""
        return self if instance is None else types.MethodType(self, instance)

    def __repr__(self):
        return f"<compiled {self.__name__}: {len(self.programs)} program(s)>"


_CONTAINERS = (list, tuple, dict)


def flatten(values, keywords):
    """The call's arguments with every list, tuple and dict among them opened up (a
    batch `(x, y)` or `{"x": x}` is its tensors, each an argument of its own), and the
    containers' layout added to `keywords` (the guards compare both)."""
    for value in values:
        if isinstance(value, _CONTAINERS):
            break
    else:
        return values, keywords  # (the usual call: nothing to open)
    flat = []
    layout = tuple(_open(value, flat) for value in values)
    return tuple(flat), (keywords, layout)


def _open(value, flat):
    if isinstance(value, dict):
        return (dict, tuple(value), tuple(_open(item, flat) for item in value.values()))
    if isinstance(value, (list, tuple)):
        return (type(value), len(value), tuple(_open(item, flat) for item in value))
    flat.append(value)
    return None


def output_of(value, recorder, values) -> Output:
    """How a replay builds the returned `value` (a Tensor, a container of them, a constant)."""
    if isinstance(value, Tensor):
        for position, argument in enumerate(values):
            if value is argument:
                return Output("argument", position)
        if any(value is tensor for tensor in recorder.captured):
            return Output("tensor", value)
        slot = recorder.slot_by_array.get(id(value.data))
        if slot is None or recorder.slots[slot].kind != "value":
            recorder.refuse("a returned tensor the step does not compute (e.g. a .grad)")
        return Output("slot", slot)
    if isinstance(value, (tuple, list)):
        items = tuple(output_of(item, recorder, values) for item in value)
        return Output("tuple" if isinstance(value, tuple) else "list", items=items)
    if isinstance(value, dict):
        items = tuple(output_of(item, recorder, values) for item in value.values())
        return Output("dict", tuple(value), items)
    if value is None or isinstance(value, (bool, int, float, str)):
        return Output("constant", value)
    recorder.refuse(f"a returned {type(value).__name__} (return Tensors, numbers or containers)")
    return None  # pragma: no cover - refuse raises


def detached(value):
    """The first call's results, as a replay returns them: tensors without history."""
    if isinstance(value, Tensor):
        return value if value._ctx is None else Tensor._make(value.data, False, None)
    if isinstance(value, (tuple, list)):
        return type(value)(detached(item) for item in value)
    if isinstance(value, dict):
        return {key: detached(item) for key, item in value.items()}
    return value


class RecordedInput:
    """What a backward rule may read about an input at replay (shape, dtype): a node's
    `inputs` after capture, so that the program keeps no first-call arrays alive."""

    __slots__ = ("shape", "dtype", "ndim")

    def __init__(self, tensor):
        self.shape = tensor.shape  # (a released tensor has no values, only these)
        self.dtype = tensor.dtype
        self.ndim = tensor.ndim


def forget_capture(recorder):
    """Drop what only the capture needed: the first call's tensors and saved arrays."""
    for kernel in recorder.kernels:
        node = getattr(kernel, "node", None)
        if node is None:
            continue
        node.saved = None
        node.saved_output = None
        inputs = getattr(node, "inputs", None)
        if inputs is not None:
            node.inputs = tuple(
                RecordedInput(value) if isinstance(value, Tensor) else value for value in inputs
            )
        ctx = getattr(node, "ctx", None)
        if ctx is not None:
            ctx._saved = ()
    recorder.alive.clear()
    recorder.slot_by_array.clear()


def compile(function=None, *, max_programs=4):
    """Capture `function` on its first call and replay it on later ones (also a decorator).

    The first call runs `function` eagerly and records the numpy work the engine does;
    later calls replay it as one generated function, bit for bit the eager results, while
    the guards hold (else a new capture, up to `max_programs`; then a CompileError saying
    what changed). What cannot be replayed is refused at capture, naming the line; what is
    frozen, guarded and refused is in docs/compile.md. `print(step.program)` lists it.

    >>> import tinygrad_ops as tg
    >>> w = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> optimizer = tg.optim.SGD([w], lr=0.1)
    >>> @tg.compile
    ... def step(x):
    ...     optimizer.zero_grad()
    ...     loss = (w * x).sum()
    ...     loss.backward()
    ...     optimizer.step()
    ...     return loss
    >>> [round(step(tg.Tensor([1.0, 1.0])).item(), 6) for _ in range(3)]
    [3.0, 2.8, 2.6]
    """
    if function is None:
        return functools.partial(compile, max_programs=max_programs)
    return CompiledFunction(function, max_programs)
