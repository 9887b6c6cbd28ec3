"""A scanned chain, compiled: the scan scheduler's segment run replayed as one kernel.

With a scan scheduler (`"blelloch"`, `"hillis-steele"`, `"blocked"`, or `"auto"` when it
picks one), the capture's backward finds the chains of the graph (declared by `tg.scan`, or
found in a hand-written loop by scheduler/loops.py: once, here) and scans each one
(`scan_scheduler.SegmentRun`): the saved values of all its steps stacked, every step's
Jacobian built by one vectorised call per op, one prefix scan for every gradient along the
chain, one vectorised call per op for the side gradients (the weights'). The recorder
watches that run (`Recorder.record_scan`): which pending gradients it takes (the anchors'
x_0 .. x_n) and, in order, where it sends its results. The replay then runs the same
`SegmentRun` on the segment the capture found, over the saved values the replayed forward
kernels left on the steps' nodes, and adds what it sends into the slots the capture's sends
went to. So the chain analysis, the graph walk around the chain and every ownership
decision are made once; what runs at each call is the scheduler's own vectorised code, bit
for bit the eager scan.

Where the capture finds every saved value of the chain in a stack (stacks.py: the
anchors x_0 .. x_n, another column's outputs, a run of `x[t]`), the scan has a plan
(stacks.StackPlan) instead: the replayed forward writes those values straight into
stacked buffers (`StackAlloc`, `StackedForward`), nothing is left on the steps' nodes,
and the scan reads the stacks: no Python pass over the steps at all.
"""

from __future__ import annotations

import ast
import copy

import numpy as np

from ..scheduler.scan_scheduler import SegmentRun
from .fused import FusedForward
from .inline import RESULT
from .kernels import Forward, Kernel
from .specialise import constant, known


class ReplayGraph:
    """What `SegmentRun` uses of a BackwardGraph: the anchors' pending gradients in, the
    gradients it sends out (in order), a list for what backward would release."""

    __slots__ = ("grads", "sent", "visited")

    def __init__(self, grads):
        self.grads = grads
        self.sent = []
        self.visited = []

    def pop_grad(self, tensor):
        return self.grads.pop(id(tensor), None)

    def send(self, tensor, grad, owned=False):
        self.sent.append(grad)

    def scan_watched(self, runner, method, block_size):
        return False  # (a replay: nobody watches)


class ScanKernel(Kernel):
    """Scan one segment: `taken` lists, per anchor, the slot of the pending gradient the
    scan takes (None where none was pending; kept without those); `sent` the slot of each
    gradient it sends. With a `plan` (a stacks.StackPlan) the saved values are in stacked
    buffers, the arrays the plan names (stacks, weights, inputs), passed in after the
    pending gradients; without, on the steps' nodes."""

    __slots__ = ("segment", "method", "block_size", "taken", "sent", "plan", "keys", "saving")

    def __init__(self, segment, method, block_size, taken, sent, plan=None):
        self.segment = segment
        self.method = method
        self.block_size = block_size
        self.taken = tuple(slot for slot in taken if slot is not None)
        self.sent = sent
        self.plan = plan
        # The anchors whose pending gradient the scan takes (the others get None).
        self.keys = [id(anchor) for anchor, slot in zip(segment.anchors, taken) if slot is not None]
        self.saving = None  # the nodes that save values (known at the first replay)

    def __call__(self, *arrays):
        """Run the scan on the anchors' pending gradients; return what it sends, in order."""
        graph = ReplayGraph(dict(zip(self.keys, arrays)))
        if self.plan is not None:
            self.plan.run(graph, arrays[len(self.keys) :], self.method, self.block_size)
            return graph.sent
        if self.saving is None:
            nodes = [node for column in self.segment.nodes for node in column]
            for node in nodes:  # (a node that saves nothing: Op.apply's empty tuple)
                if node.saved is None:
                    node.saved = ()
            self.saving = [node for node in nodes if node.saved]
        SegmentRun(graph, self.segment).run(self.method, self.block_size)
        for node in self.saving:  # (as backward releases a scanned segment's buffers)
            node.saved = None
        return graph.sent

    def emit(self, code, number):
        arguments = ", ".join(code.slot(slot) for slot in self.reads())
        for slot in self.taken:
            code.consume(slot)
        scan = code.bind(self, "scan")
        code.line(f"r = {scan}({arguments})  # {self.describe(None)}")
        code.free(self.taken)
        for index, slot in enumerate(self.sent):
            code.accumulate(slot, f"r[{index}]", False)

    def reads(self):
        return self.taken + (() if self.plan is None else tuple(self.plan.arguments))

    def consumes(self):
        return self.taken

    def writes(self):
        return self.sent

    def describe(self, name):
        steps = len(self.segment.anchors) - 1
        text = f"scan of a chain of {steps} steps ({self.method}, {len(self.sent)} gradients out)"
        if self.plan is None:
            return text
        name = name or (lambda slot: f"%{slot}")
        stacks = ", ".join(name(stack.slot) for stack in self.plan.stacks)
        return text + f", saved values from {stacks or 'the arguments'}"


class StackAlloc(Kernel):
    """A new stack for one call (stacks.Stack), with row 0 copied in (x_0) if it has one."""

    __slots__ = ("stack",)

    def __init__(self, stack):
        self.stack = stack

    def emit(self, code, number):
        name = code.slot(self.stack.slot)
        empty, dtype = code.bind(np.empty, "empty"), code.bind(self.stack.dtype, "dtype")
        code.line(f"{name} = {empty}({self.stack.shape!r}, {dtype})  # {self.describe(None)}")
        if self.stack.first is not None:
            code.line(f"{name}[0] = {code.slot(self.stack.first)}")

    def reads(self):
        return () if self.stack.first is None else (self.stack.first,)

    def writes(self):
        return (self.stack.slot,)

    def describe(self, name):
        name = name or (lambda slot: f"%{slot}")
        first = "" if self.stack.first is None else f", row 0 = {name(self.stack.first)}"
        return f"{name(self.stack.slot)} = new stack {self.stack.shape} {self.stack.dtype}{first}"


class StackedForward(Kernel):
    """A forward kernel whose output is a row of one or more stacks (`targets`: (stack,
    row) pairs): computed into the first by the op's own inlined forward where that ends
    in one numpy call that can take `out=` (`computed_into`), else copied there; copied
    into the others."""

    __slots__ = ("kernel", "targets")

    def __init__(self, kernel, targets):
        self.kernel = kernel
        self.targets = targets
        kernel.release = True  # (the node's saved values: nothing reads them)

    def emit(self, code, number):
        kernel = self.kernel
        # (a row of a stack of 0-d values: `stack[t, ...]`, an array, where stack[t] is a number)
        rows = [
            f"{code.slot(stack.slot)}[{row}{'' if len(stack.shape) > 1 else ', ...'}]"
            for stack, row in self.targets
        ]
        out = code.slot(kernel.writes()[0])
        copies = rows
        if isinstance(kernel, FusedForward):
            pair = kernel.prepare(code)
            statements = computed_into(code, pair.forward)
            if statements is not None:  # (the same kernel, its result made in the row)
                code.line(f"{out} = {rows[0]}  # the forward computes into the stack")
                kernel = copy.copy(kernel)
                kernel.pair = pair._replace(forward=statements)
                copies = rows[1:]
        kernel.emit(code, number)
        for row in copies:
            code.line(f"copyto({row}, {out})  # into the stack")

    def reads(self):
        return self.kernel.reads()

    def writes(self):
        return self.kernel.writes() + tuple(stack.slot for stack, _ in self.targets)

    def describe(self, name):
        rows = ", ".join(f"{name(stack.slot)}[{row}]" for stack, row in self.targets)
        return f"{self.kernel.describe(name)}   (into {rows})"


# The numpy function an operator calls on arrays (`a + b` is `np.add(a, b)`).
_OPERATORS = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.divide,
    ast.MatMult: np.matmul,
    ast.USub: np.negative,
}


def computed_into(code, statements):
    """An inlined forward's statements (inline.Pair.forward) computing the result into
    the array its name holds before them, or None where they cannot: the result must be
    made by one ufunc call or operator (`tanh(a)`, `a @ b`), given `out=` (the same call,
    so the same bits), and only changed in place after it (Linear's `out += bias`)."""
    assigned = [
        index
        for index, statement in enumerate(statements)
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and node.id == RESULT and not isinstance(node.ctx, ast.Load)
    ]
    if not assigned:
        return None
    first = statements[assigned[0]]
    if _assignment(first) != "=":
        return None
    if any(_assignment(statements[index]) != "in place" for index in assigned[1:]):
        return None  # (only `out += bias` may follow)
    value = first.value
    if isinstance(value, ast.Call) and isinstance(known(value.func), np.ufunc):
        function, arguments = value.func, value.args
        ufunc = known(value.func)
        if value.keywords or len(arguments) != ufunc.nin or ufunc.nout != 1:
            return None
    elif isinstance(value, (ast.BinOp, ast.UnaryOp)) and type(value.op) in _OPERATORS:
        function = constant(_OPERATORS[type(value.op)], lambda f: code.bind(f, f.__name__))
        arguments = [value.left, value.right] if isinstance(value, ast.BinOp) else [value.operand]
    else:
        return None
    into = ast.keyword("out", ast.Name(RESULT, ast.Load()))
    call = ast.Assign(first.targets, ast.Call(function, arguments, [into]), lineno=0)
    return [*statements[: assigned[0]], call, *statements[assigned[0] + 1 :]]


def _assignment(statement):
    """What `statement` does to the result: "=" (`RESULT = ...`), "in place" (`RESULT += ...`),
    or None (anything else, such as `a, RESULT = ...`)."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target, kind = statement.targets[0], "="
    elif isinstance(statement, ast.AugAssign):
        target, kind = statement.target, "in place"
    else:
        return None
    return kind if isinstance(target, ast.Name) and target.id == RESULT else None


class StackCopy(Kernel):
    """out = a copy of rows start..stop-1 of a stack: a `Stack` (axis 0) of exactly those
    rows (the states of a `tg.scan`, its `ys`), one copy instead of a stack of n arrays."""

    __slots__ = ("stack", "start", "stop", "output")

    def __init__(self, stack, start, stop, output):
        self.stack = stack
        self.start = start
        self.stop = stop
        self.output = output

    def emit(self, code, number):
        source = code.slot(self.stack.slot)
        rows = f"{source}[{self.start}:{self.stop}]"
        code.line(f"{code.slot(self.output)} = {rows}.copy()  # {self.describe(None)}")

    def reads(self):
        return (self.stack.slot,)

    def writes(self):
        return (self.output,)

    def describe(self, name):
        name = name or (lambda slot: f"%{slot}")
        rows = f"{name(self.stack.slot)}[{self.start}:{self.stop}]"
        return f"{name(self.output)} = Stack.forward of the rows {rows} (a copy)"


def _stack_copy(kernel, row_of):
    """The StackCopy of a Forward kernel of `Stack` (axis 0) whose inputs are consecutive
    rows of one stack (`row_of`: slot -> (stack, row)), or None."""
    if not isinstance(kernel, Forward) or type(kernel.node).__name__ != "Stack":
        return None
    if kernel.node.axis != 0 or kernel.conversions:
        return None
    found = [row_of.get(slot) for slot in kernel.inputs]
    if None in found or any(stack is not found[0][0] for stack, _ in found):
        return None
    stack, start = found[0]
    if [row for _, row in found] != list(range(start, start + len(found))):
        return None
    return StackCopy(stack, start, start + len(found), kernel.output)


def place_stacks(kernels, phases):
    """The kernels (and their phases) with the stacks of every scan with a plan put in:
    each stack made right before the first kernel that writes a row of it, and each such
    kernel writing into its rows (the nodes of those chains keep nothing for the scan); a
    `Stack` of consecutive rows of one becomes a copy of them (`StackCopy`)."""
    rows = {}  # output slot -> [(stack, row)]
    row_of = {}  # slot -> (stack, row), for the first stack each slot is a row of
    for kernel in kernels:
        if isinstance(kernel, ScanKernel) and kernel.plan is not None:
            for stack in kernel.plan.stacks:
                if stack.first is not None:
                    row_of.setdefault(stack.first, (stack, 0))
                for slot, row in stack.rows.items():
                    rows.setdefault(slot, []).append((stack, row))
                    row_of.setdefault(slot, (stack, row))
    if not rows:
        return kernels, phases
    made = set()
    placed = []  # (kernel, phase)
    for kernel, phase in zip(kernels, phases):
        rows_copy = _stack_copy(kernel, row_of)
        if rows_copy is not None and rows_copy.stack.slot in made:
            placed.append((rows_copy, phase))
            continue
        forward = kernel.kernel if isinstance(kernel, FusedForward) else kernel
        targets = rows.get(forward.output) if isinstance(forward, Forward) else None
        if targets is not None:
            for stack, _ in targets:
                if stack.slot not in made:
                    made.add(stack.slot)
                    placed.append((StackAlloc(stack), phase))
            kernel = StackedForward(kernel, targets)
        placed.append((kernel, phase))
    return [kernel for kernel, _ in placed], [phase for _, phase in placed]
