"""Capture: the recorder that watches one eager run of a function and writes its program.

While `tg.compile` captures, `STATE.tracer` holds a `Recorder`, which implements the seam's
calls (`mode.Trace`); its backward passes are `TracedGraph`s, the engine's own walk, which
also record the seeds, every rule, the leaf writes and each scanned chain. Every array is
known by its identity: each new one gets a *slot* and is kept alive until capture ends, so
that no id is reused meanwhile.
"""

from __future__ import annotations

import os
import traceback

import numpy as np

from ..autograd.graph import BackwardGraph, made_by_rule, needed_grads
from ..mode import STATE, Trace
from ..ops.base import GRAD_READ
from ..random_state import default_generator
from ..tensor import Tensor
from .guards import members, parameters_of
from .kernels import (
    Backward,
    Call,
    CustomBackward,
    Edge,
    ForgetGrad,
    Forward,
    LeafWrite,
    ReadGrad,
    Seed,
    SetGrad,
    SetSetting,
    Write,
)
from .program import Slot
from .scan_kernel import ScanKernel
from .stacks import plan_stacks

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CompileError(RuntimeError):
    """The function cannot be captured or replayed as it is (the message says why)."""


def user_line() -> str:
    """The innermost line of the call stack outside tinygrad_ops: the user's line."""
    for frame in reversed(traceback.extract_stack()):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE + os.sep):
            return f"{frame.filename}, line {frame.lineno}: {(frame.line or '').strip()}"
    return "(unknown line)"  # pragma: no cover - a test or a script is always on the stack


class TracedGraph(BackwardGraph):
    """The graph of a backward pass run while capturing: the engine's own walk, which
    also tells the recorder each seed (`send` before the walk starts), each rule it runs
    (through `_Rule`, the node as the walk sees it), each leaf write and each scan."""

    def __init__(self, recorder, *arguments):
        super().__init__(*arguments)
        self.recorder = recorder
        self.started = recorder.muted > 0
        if not self.started:
            recorder.begin_backward(self)

    def send(self, tensor, grad, owned=False):
        recorder = self.recorder
        if not self.started:
            recorder.seed(self, tensor, grad)
        elif recorder.scanning is not None:  # (what a recorded scan sends, in order)
            recorder.scan_sent.append(recorder.pending_slot(tensor))
        return super().send(tensor, grad, owned)

    def run_sequential(self):
        self.started = True
        super().run_sequential()

    def visit(self, tensor, grad, owned=False):
        self.started = True
        super().visit(tensor, grad, owned)
        if tensor._ctx is None and self.accumulate_into_leaves and not self.recorder.muted:
            self.recorder.record_leaf(tensor)

    def input_grads(self, node, grad, output=None):
        if self.recorder.muted:
            return super().input_grads(node, grad, output)
        return super().input_grads(_Rule(node, self.recorder, output), grad, output)

    def scan_watched(self, runner, method, block_size) -> bool:
        self.started = True
        if self.recorder.scanning is not None or self.recorder.muted:
            return False
        self.recorder.record_scan(runner, method, block_size)
        return True


class _Rule:
    """A node as the walk sees it while capturing: its `backward` is the recorder's
    `run_rule` (which runs the node's own rule and records it); all else is the node's."""

    __slots__ = ("node", "recorder", "output")

    def __init__(self, node, recorder, output):
        self.node = node
        self.recorder = recorder
        self.output = output

    def backward(self, grad):
        return self.recorder.run_rule(self.node, grad, self.output)

    def __getattr__(self, name):
        return getattr(self.node, name)


class Recorder(Trace):
    """Builds the slots and kernels of a program from the events of one eager call
    (the seam's calls: see `mode.Trace` and the module docstring)."""

    active = True

    def __init__(self, values):
        self.slots = []
        self.initial = []
        self.slot_by_array = {}  # id(array) -> slot
        self.alive = []  # every array and tensor met, so that ids stay unique
        self.kernels = []
        self.phases = []
        self.phase = "forward"
        self.arguments = []  # (slot, position, whether a Tensor) for tensor and array arguments
        self.captured = []  # tensors read from outside (parameters, buffers)
        self.pending = {}  # id(tensor) -> slot of its pending gradient
        self.written = set()  # slots written in place
        self.snapshots = []  # (captured tensor, a copy of its data when first read)
        self.grad_guards = []  # (captured tensor, whether its .grad was None when first read)
        # (leaf, whether its .grad was None as the call began): read by the step's Python
        # before anything wrote it (`if p.grad is not None:`), kept whatever comes after
        self.grads_read = []
        self.grad_at_start = {}  # id(leaf) -> the .grad it began the call with
        # id(leaf) -> (leaf, its .grad after its last write, a copy of its values, position)
        self.grads_written = {}
        self.generators = []
        self.modules = {}  # id(module) -> (module, its flag when called, whether guarded)
        self.flags_set = set()  # ids of the modules whose flag a replayed train() sets
        self.grad_of = {}  # id(leaf) -> (leaf, the .grad the program leaves it with)
        self.random = _RandomState()
        self.settings = {}  # id(optimizer) -> (optimizer, its groups' settings as last seen)
        self.graphs = []
        self.muted = 0
        self.scanning = None  # the SegmentRun being recorded
        self.scan_sent = []  # the pending slots it sends to, in order
        self.scanned = set()  # ids of the nodes of scanned segments (their forwards stay general)
        self.values = values
        for position, value in enumerate(values):
            data = value.data if isinstance(value, Tensor) else value
            if isinstance(data, np.ndarray):
                slot = self.new_slot("input", f"argument {position}", data)
                self.arguments.append((slot, position, isinstance(value, Tensor)))

    # -- slots ---------------------------------------------------------------------------

    def new_slot(self, kind, label, array=None, value=None):
        slot = len(self.slots)
        shape = getattr(array, "shape", None)
        self.slots.append(Slot(kind, label, shape, getattr(array, "dtype", None)))
        self.initial.append(value)
        if array is not None:
            self.slot_by_array[id(array)] = slot
            self.alive.append(array)
        return slot

    def slot_of(self, operand, op_name=""):
        """The slot of an operand: a known array's, else a new captured tensor or constant."""
        data = operand.data if isinstance(operand, Tensor) else operand
        slot = self.slot_by_array.get(id(data)) if isinstance(data, np.ndarray) else None
        if slot is not None:
            return slot
        if isinstance(data, np.ndarray) and self.views_a_known_array(data):
            self.refuse(
                f"{op_name}: a numpy view of an argument or of a computed array (indexing a "
                "numpy array, or .data): a replay would reuse the first call's. Index the "
                "Tensor instead (x[t], not tg.Tensor(x_array[t]))"
            )
        if isinstance(operand, Tensor):
            leaf = self.grad_read(operand)
            if leaf is not None:
                return self.read_grad(leaf, operand)
            if operand._ctx is not None:
                self.refuse(
                    f"{op_name}: an input computed outside the recorded ops (a "
                    "tg.Function whose forward returned a new tensor, or an in-place op on a "
                    "tensor that requires grad)"
                )
            self.captured.append(operand)
            self.snapshots.append((operand, data.copy()))
            # A .grad the step's Python set before this read (`p.grad = None` at its top) is
            # replayed; else the state it had as the call began is guarded, unless a
            # replayed call that may change gradients came first (a zero_grad(), an
            # optimizer's step: the state before it does not matter; a train() does not).
            if not self.sync_grad(operand) and not self.grads_touched():
                self.grad_guards.append((operand, operand._grad is None))
            self.alive.append(operand)
            return self.new_slot("captured", operand.name or "tensor", data, data)
        slot = self.new_slot("constant", _constant_label(operand), value=operand)
        self.alive.append(operand)
        return slot

    def grads_touched(self) -> bool:
        return any(
            isinstance(kernel, Call)
            and (kernel.function.__name__ == "zero_grad" or hasattr(kernel.owner, "param_groups"))
            for kernel in self.kernels
        )

    def grad_read(self, tensor):
        """The leaf whose .grad `tensor` is, as the call began (the previous call's
        gradient, read before this call writes it), or None."""
        for leaf, grad in self.grad_of.values():
            if grad is tensor and leaf._grad is tensor:
                return leaf
        return None

    def read_grad(self, leaf, grad):
        """A slot that a kernel fills with the leaf's .grad at each call (not the first
        call's tensor); the program assumes the leaf has one as the call begins."""
        label = leaf.name or "a leaf"
        slot = self.new_slot("value", f"{label}.grad", grad.data)
        self.emit(ReadGrad(leaf, slot, label, self.argument_position(leaf)))
        self.grad_guards.append((leaf, False))
        self.alive.append(grad)
        return slot

    def views_a_known_array(self, array) -> bool:
        base = array.base
        while base is not None:
            if id(base) in self.slot_by_array:
                return True
            base = getattr(base, "base", None)
        return False

    def computed(self, array) -> bool:
        slot = self.slot_by_array.get(id(array))
        return slot is not None and (
            self.slots[slot].kind in ("value", "grad") or slot in self.written
        )

    def emit(self, kernel):
        self.kernels.append(kernel)
        self.phases.append(self.phase)

    def refuse(self, what):
        raise CompileError(f"tg.compile cannot capture {what}\n  at {user_line()}")

    # -- forward events ------------------------------------------------------------------

    def op(self, node, operands, options, out, given):
        """`node.forward` has run on `operands` (`given`, after type promotion) and made
        the Tensor `out`."""
        if self.muted:
            return
        draws = any(isinstance(value, np.random.Generator) for value in options.values())
        if not draws:
            self.random.check(self)
        name = type(node).__name__
        inputs = []
        conversions = []  # numpy arguments that promotion converted: converted at replay too
        for position, (operand, before) in enumerate(zip(operands, given)):
            converted = isinstance(before, np.ndarray) and operand is not before
            if converted and self.slot_by_array.get(id(before)) is not None:
                inputs.append(self.slot_of(before, name))
                conversions.append((position, operand.dtype))
            else:
                inputs.append(self.slot_of(operand, name))
        for value in options.values():
            if self.changes(value):
                self.refuse(
                    f"{name}: an option (an index, a mask) holding an argument or a value the "
                    "step computes: a replay would reuse the first call's"
                )
            if isinstance(value, np.random.Generator):
                self.check_generator(value, name)
        output = self.new_slot("value", type(node).__name__, out.data)
        self.emit(Forward(node, tuple(inputs), dict(options), output, tuple(conversions)))
        if draws:
            self.random.after(self)

    def changes(self, option) -> bool:
        """Whether an op's option is (or holds) an argument or a computed array."""
        if isinstance(option, (tuple, list)):
            return any(self.changes(part) for part in option)
        data = option.data if isinstance(option, Tensor) else option
        if not isinstance(data, np.ndarray):
            return False
        slot = self.slot_by_array.get(id(data))
        is_argument = slot is not None and self.slots[slot].kind == "input"
        return is_argument or self.computed(data) or self.views_a_known_array(data)

    def check_generator(self, generator, op_name):
        """A replay draws on from the generators the capture drew from: fine for one that
        lives on (the shared one, a module's own), wrong for one made inside
        the function (`seed=`), which eager would make again at every call."""
        if generator is default_generator():
            if generator not in self.generators:
                self.generators.append(generator)  # tg.manual_seed replaces it: a guard
            return
        lives_on = any(
            getattr(module, "generator", None) is generator
            for module, _, _ in self.modules.values()
        )
        if not lives_on:
            self.refuse(
                f"{op_name}: a random generator made inside the function (seed=...): a replay "
                "would draw on from it instead of starting again. Use the shared generator "
                "(tg.manual_seed) or a module's own (nn.Dropout(p, generator=...))"
            )

    def write(self, tensor, result, what=None):
        """An in-place op copied `result` into `tensor`'s own array (None: written some
        other way, `what`, which a replay cannot repeat)."""
        if self.muted:
            return
        if result is None:
            self.refuse(what)
        target = self.slot_of(tensor, "an in-place op")
        source = self.slot_of(result, "an in-place op")
        self.written.add(target)
        captured = tensor if self.slots[target].kind == "captured" else None
        self.emit(Write(target, source, captured))

    def read(self, value, what):
        """Python is about to read the values of `value`, a Tensor or an array (`what`:
        "item()", ...): refused unless they are the same at every call."""
        if self.muted:
            return
        if what is GRAD_READ:
            self.read_of_grad(value)
            return
        data = value.data if isinstance(value, Tensor) else value
        slot = self.slot_by_array.get(id(data))
        changing = slot is not None and self.slots[slot].kind != "constant"
        if changing or self.views_a_known_array(data):
            self.refuse(
                f"{what} on a value that changes from call to call (an argument, a parameter "
                "or a value the step computes): a replay would reuse the first call's. "
                "Return the tensor from the compiled function and read it outside"
            )

    def read_of_grad(self, tensor):
        """The step's Python reads `tensor.grad`: if that is still the .grad the call began
        with (nothing of this call wrote it), what the step does next may depend on it
        (`if p.grad is not None:`), so whether it was None is guarded, even where a later
        zero_grad() resets it."""
        if tensor._ctx is not None:
            return  # (made by this call: no .grad from before)
        if id(tensor) in self.grad_at_start:  # a watched leaf: its .grad as the call began
            start = self.grad_at_start[id(tensor)]
        elif id(tensor) in self.grad_of:
            return  # (another leaf whose .grad this call wrote)
        else:
            start = tensor._grad  # (another leaf, untouched so far)
        if tensor._grad is start:
            self.grads_read.append((tensor, start is None))

    def module_guards(self) -> list:
        """(module, the train/eval flag the program assumes or None, its members)."""
        return [
            (module, training if guarded else None, members(module))
            for module, training, guarded in self.modules.values()
        ]

    def graph(self, graph_class, *arguments):
        return TracedGraph(self, *arguments)

    def call(self, function, owner, args, kwargs, whole):
        """Not `whole` (a module's __call__): note the module (its flag and members become
        guards) and run it, recorded. `whole`: run `function(owner, ...)` now, unrecorded
        inside, and replay it as one kernel; what it reads that the step's Python set (a
        parameter's .grad, an optimizer's setting given as an argument) is set first by
        kernels of its own."""
        if not whole:
            if id(owner) not in self.modules:
                guarded = id(owner) not in self.flags_set
                self.modules[id(owner)] = (owner, owner.training, guarded)
            return function(owner, *args, **kwargs)
        if self.muted:
            return function(owner, *args, **kwargs)
        self.random.check(self)
        self.check_settings()
        parameters = list(parameters_of(owner))
        self.phase = "update"
        for parameter in parameters:
            self.sync_grad(parameter)
        self.sync_settings(owner)
        self.muted += 1
        try:
            result = function(owner, *args, **kwargs)
        finally:
            self.muted -= 1
        self.emit(Call(function, owner, args, kwargs))
        self.phase = "forward"
        for parameter in parameters:  # (zero_grad() sets them to None)
            if id(parameter) in self.grad_of:
                self.grad_of[id(parameter)] = (parameter, parameter._grad)
        if function.__name__ == "train" and hasattr(owner, "modules"):
            self.flags_set.update(id(module) for module in owner.modules())
        self.random.after(self)
        self.watch_settings(owner)
        for optimizer, _ in list(self.settings.values()):  # (a scheduler's step sets the lr)
            self.watch_settings(optimizer)
        return result

    def watch(self, owner):
        """As the capture begins: note what the step's Python may change of `owner` (an
        optimizer's settings, and the .grad of the parameters an optimizer or a module
        holds, itself or as an attribute of `owner`: an assignment such as `p.grad = None`
        is replayed, `sync_grad`, and a read of the .grad the call began with is read
        again at each call, `read_grad`)."""
        self.watch_settings(owner)
        # (itself, its attributes: a trainer's .model; the items of a list of parameters)
        held = [owner, *getattr(owner, "__dict__", {}).values()]
        if isinstance(owner, (list, tuple)):
            held += owner
        for value in held:
            if isinstance(value, Tensor):
                leaves = [value] if value._ctx is None and value._requires_grad else []
            elif hasattr(value, "param_groups") or hasattr(value, "training"):
                leaves = [leaf for leaf in parameters_of(value) if isinstance(leaf, Tensor)]
            else:
                continue
            for leaf in leaves:
                self.grad_of.setdefault(id(leaf), (leaf, leaf._grad))
                self.grad_at_start.setdefault(id(leaf), leaf._grad)

    def watch_settings(self, owner):
        """Note an optimizer's settings now: a change the step's Python makes later
        (`param_groups[0]["lr"] *= 0.5`) is one a replay would not repeat."""
        groups = getattr(owner, "param_groups", None)
        if groups is not None:
            settings = [{k: v for k, v in group.items() if k != "params"} for group in groups]
            self.settings[id(owner)] = (owner, settings)

    def check_settings(self):
        """Refuse a change of an optimizer's settings made by the step's Python, unless
        the new value is one of the call's arguments (a kernel writes it: sync_settings;
        a Python number is guarded by value)."""
        arguments = {id(value) for value in self.values}
        for optimizer, before in self.settings.values():
            for number, (group, seen) in enumerate(zip(optimizer.param_groups, before)):
                for key, value in seen.items():
                    now = group.get(key)
                    if now is not value and now != value and id(now) not in arguments:
                        self.refuse(
                            f"a change of the optimizer's param_groups[{number}][{key!r}] "
                            f"({value!r} -> {now!r}) made by the function's Python: a replay "
                            "would not repeat it. Use a learning-rate scheduler (replayed), or "
                            "pass the value as a Tensor or array argument"
                        )

    def sync_grad(self, tensor) -> bool:
        """The kernel that gives `tensor` the .grad the step's Python gave it since the
        program last wrote it (`p.grad = p.grad * 0.5`, `p.grad = None`), if any (True)."""
        entry = self.grad_of.get(id(tensor))
        if entry is None or tensor._grad is entry[1]:
            return False
        grad = tensor._grad
        label = tensor.name or "a leaf"
        position = self.argument_position(tensor)
        if grad is None:
            self.emit(ForgetGrad(tensor, None, label, position))
        else:
            slot = self.slot_by_array.get(id(grad._data))
            if slot is None or self.slots[slot].kind == "constant":
                self.refuse(
                    ".grad assigned a tensor the step does not compute with tensor ops: a "
                    "replay would not assign it"
                )
            self.emit(SetGrad(tensor, slot, label, position))
        self.grad_of[id(tensor)] = (tensor, grad)
        return True

    def sync_settings(self, owner):
        """An optimizer setting that is one of the call's argument objects (an array or a
        tensor given as the learning rate, written into param_groups by the step): a
        kernel writes that call's argument there before the method runs."""
        arguments = {id(value): position for position, value in enumerate(self.values)}
        for group in getattr(owner, "param_groups", ()):
            for key, value in group.items():
                position = arguments.get(id(value))
                if position is not None and key != "params" and not _interned(value):
                    self.emit(SetSetting(group, key, position))

    # -- backward events -----------------------------------------------------------------

    def begin_backward(self, graph):
        """A backward pass starts on `graph` (its seeds come next)."""
        if graph.create_graph:
            self.refuse("backward(create_graph=True): the gradients of a replay are not recorded")
        if not graph.accumulate_into_leaves:
            self.refuse("tg.grad(): use loss.backward() and read the .grad of the leaves")
        if STATE.anomaly:
            self.refuse("a backward pass in detect_anomaly() mode")
        self.graphs.append(graph)
        self.phase = "backward"

    def seed(self, graph, tensor, grad):
        """The gradient `graph`'s pass starts from at `tensor` (d root / d root)."""
        pending = self.pending_slot(tensor)
        source = self.slot_of(grad, "backward's seed")
        self.emit(Seed(pending, source))

    def pending_slot(self, tensor):
        slot = self.pending.get(id(tensor))
        if slot is None:
            of = self.slot_of(tensor, "backward")
            label = self.slots[of].label if tensor._ctx is None else f"%{of}"
            slot = self.new_slot("grad", f"grad of {label}")
            self.pending[id(tensor)] = slot
            self.alive.append(tensor)
        return slot

    def taken_pending(self, tensor):
        """The slot of the pending gradient a rule or a leaf write takes from `tensor`."""
        if tensor is None or tensor._hooks:
            self.refuse("a tensor hook (register_hook): hooks run Python on gradients")
        slot = self.pending.get(id(tensor))
        if slot is None:
            self.refuse_scheduler()
        return slot

    def run_rule(self, node, grad, output):
        """Run `node.backward(grad)` for the walk, recording it; return its results."""
        if self.muted:
            return node.backward(grad)
        slot = self.taken_pending(output)
        self.slot_by_array[id(grad)] = slot  # what a tg.Function's backward ops will read
        self.alive.append(grad)
        grads = node.backward(grad)
        edges = self.edges_of(node, grads, grad)
        if getattr(node, "function", None) is None:
            self.emit(Backward(node, slot, edges))
            return grads
        results = []
        for result in grads:
            if result is not None and id(result) not in self.slot_by_array:
                self.refuse(
                    f"{node.function.__name__}.backward returning a value not computed with "
                    "tensor ops"
                )
            results.append(None if result is None else self.slot_by_array[id(result)])
        self.emit(CustomBackward(node, tuple(results), edges))
        return grads

    def edges_of(self, node, grads, upstream):
        """Where each gradient goes, and what the walk's `input_grads` does with it
        on the way (cast, unbroadcast, whether it owns it): decided once, here."""
        edges = []
        for index, tensor, grad in needed_grads(node, grads):
            data = tensor.data
            wrap = type(grad) is not np.ndarray
            grad = np.asarray(grad)
            cast = grad.dtype != data.dtype
            reduce = grad.shape != data.shape
            if reduce:
                owned = True  # a sum makes a new array
            elif cast:
                owned = node.fresh_gradients  # (astype makes one too)
            else:
                owned = made_by_rule(grad, upstream, grads, node)
            slot = self.pending_slot(tensor)
            edges.append(Edge(index, slot, data.shape, data.dtype, wrap, cast, reduce, owned))
        return tuple(edges)

    def record_leaf(self, tensor):
        """The leaf `tensor` has taken its total gradient into `tensor.grad`."""
        if self.muted:
            return
        slot = self.taken_pending(tensor)
        label = self.slots[slot].label[len("grad of ") :]
        result = self.new_slot("grad", f"{label}.grad", tensor._grad.data)
        self.emit(LeafWrite(tensor, slot, result, label, self.argument_position(tensor)))
        written = (tensor, tensor._grad, tensor._grad.data.copy(), len(self.kernels))
        self.grads_written[id(tensor)] = written
        self.grad_of[id(tensor)] = (tensor, tensor._grad)

    def argument_position(self, tensor):
        """The position of `tensor` among the arguments (a replay writes the .grad of the
        call's argument, not of the first call's), or None."""
        for _, position, is_tensor in self.arguments:
            if is_tensor and self.values[position] is tensor:
                return position
        return None

    def record_scan(self, runner, method, block_size):
        """A scan scheduler scans `runner.segment`: run it, watching which pending
        gradients it takes and where it sends its results; record it as one kernel."""
        graph = runner.graph
        plan = plan_stacks(self, runner.segment)  # (from the saved values, before the scan)
        taken = tuple(
            self.pending.get(id(anchor)) if id(anchor) in graph.grads else None
            for anchor in runner.segment.anchors
        )
        self.scanning, self.scan_sent = runner, []  # (TracedGraph.send fills scan_sent)
        try:
            runner.run(method, block_size)
        finally:
            self.scanning = None
        if plan is None:  # (the scan reads the nodes' saved values: their forwards stay generic)
            self.scanned.update(id(node) for column in runner.segment.nodes for node in column)
        self.emit(
            ScanKernel(runner.segment, method, block_size, taken, tuple(self.scan_sent), plan)
        )

    def refuse_scheduler(self):
        self.refuse(
            "a backward scheduler that computes gradients outside the ops' rules and "
            "outside the scans tg.compile records; use scheduler='sequential'"
        )

    def check_finished(self):
        """At the end of capture: no scan ran behind the recorder's back, and every change
        to a captured tensor was made by a kernel the program replays."""
        self.random.check(self)
        self.check_settings()
        recorded = sum(isinstance(kernel, ScanKernel) for kernel in self.kernels)
        if sum(len(graph.scanned_segments) for graph in self.graphs) > recorded:
            self.refuse_scheduler()
        self.forget_grads()
        updated = set()
        for kernel in self.kernels:
            for group in getattr(getattr(kernel, "owner", None), "param_groups", ()):
                updated.update(id(parameter) for parameter in group["params"])
        for tensor, before in self.snapshots:
            if id(tensor) in updated or self.written_to(tensor):
                continue
            if not _same_values(tensor.data, before):
                self.refuse_unseen_change(f"the captured tensor '{tensor.name or tensor.shape}'")

    @staticmethod
    def refuse_unseen_change(what):
        raise CompileError(
            f"tg.compile cannot capture a change to {what} made without an op (through "
            ".data?): a replay would not repeat it. Use an optimizer, or in-place ops "
            "(p.sub_(...), p.copy_(...)) under tg.no_grad()"
        )

    def forget_grads(self):
        """At the end of capture: every leaf leaves a replay with the .grad the step's
        Python gave it (`sync_grad`), and no gradient the program wrote was changed
        without a kernel (`p.grad.data *= 2`)."""
        for tensor, grad, values, position in self.grads_written.values():
            if tensor._grad is not grad or self.written_to(grad):
                continue
            later_call = any(isinstance(kernel, Call) for kernel in self.kernels[position:])
            if not later_call and not _same_values(grad.data, values):
                self.refuse_unseen_change(f"{tensor.name or 'a leaf'}.grad")
        self.phase = "update"
        for tensor, _ in list(self.grad_of.values()):
            self.sync_grad(tensor)

    def written_to(self, tensor):
        slot = self.slot_by_array.get(id(tensor.data))
        return slot is not None and slot in self.written


def _interned(value) -> bool:
    """Python shares some objects (None, bools, small ints): one of those in an
    optimizer's settings is not known to be the argument."""
    return value is None or isinstance(value, (bool, int, float, str))


class _RandomState:
    """Draws from the shared random generator that no recorded op made (`tg.randn`,
    `tg.rand` inside the step: a replay would return the capture's numbers), and a
    generator replaced inside the step (tg.manual_seed: a replay would not reseed),
    refused at the next op, naming its line."""

    def __init__(self):
        self.generator = default_generator()
        self.state = self.generator.bit_generator.state

    def check(self, recorder):
        generator = default_generator()
        if generator is not self.generator:
            recorder.refuse("tg.manual_seed inside the function: a replay would not reseed")
        if generator.bit_generator.state != self.state:
            recorder.refuse(
                "random numbers drawn outside the ops (tg.randn, tg.rand, ... in the "
                "function, before this line): a replay would return the first call's. "
                "Make them outside and pass them in, or use an op that draws (F.dropout)"
            )

    def after(self, recorder):
        """An op or a call has drawn what the program draws again at each replay."""
        self.state = self.generator.bit_generator.state


def _same_values(array, before) -> bool:
    """Whether `array` still holds the bits of `before` (a NaN equals itself here; one
    memory comparison, several times faster than np.array_equal(equal_nan=True))."""
    return array.shape == before.shape and array.tobytes() == before.tobytes()


def _constant_label(value) -> str:
    if isinstance(value, np.ndarray):
        return "constant array"
    text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."
