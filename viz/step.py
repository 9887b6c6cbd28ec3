"""`step_backward(loss)`: run backward and print every step of it, with real numbers.

The chain rule is easy to state and hard to *see*. This prints, node by node in the order
the scheduler visits them, the op, its inputs' shapes, the rule it applies (the maths of the
op's docstring, written with the operands' own labels: `d t0 = g * t1`), the gradient
arriving at its output and the gradient it sends to each input. Leaves show the gradient
that lands in their `.grad`.

The engine is not changed: a wrapper scheduler runs the chosen one (sequential by
default) with an observer on its `BackwardGraph` (`graph.observers`): the graph calls
`rule_ran(node, grad, results)` after an op's backward rule ran on the gradient of its
output (the results already summed back to each input's shape) and `visiting(tensor,
grad)` where a tensor is visited (a leaf's gradient then lands in its `.grad`).
Tensor ids (`t0`, `op1`...) are those of `viz.trace`, so the printout and `viz.draw`'s
picture of the same graph use the same names.
"""

from __future__ import annotations

import sys
import textwrap

import numpy as np

from tinygrad_ops import Tensor

from .rules import labelled_rule, missing_rule, op_class
from .trace import shape_text, trace

# Ops whose operands numpy broadcasts: a gradient for a smaller operand was summed back
# over the broadcast dims by the engine (`unbroadcast`), which the printout points out.
_BROADCASTING_OPS = {"Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Where"}


def _values_text(values, precision, indent) -> str:
    """Numbers rounded to `precision` significant digits, numpy's layout for arrays."""
    values = np.asarray(values.data if isinstance(values, Tensor) else values)
    if values.ndim == 0:
        return f"{float(values) + 0.0:.{precision}g}"
    text = np.array2string(
        values.astype(np.float64),
        separator=", ",
        threshold=24,
        edgeitems=3,
        max_line_width=100,
        # Adding 0.0 turns -0.0 into 0.0: a student should not wonder what -0 means.
        formatter={"float_kind": lambda value: f"{value + 0.0:.{precision}g}"},
        prefix=" " * indent,
    )
    return text


class _StepPrinter:
    """A scheduler that runs `inner` and prints each visit of the backward graph."""

    def __init__(self, inner, labels, names, outputs, file, precision):
        self.inner = inner
        self.labels = labels  # id(tensor) -> 't3 x'
        self.names = names  # id(op) -> 'op2'
        self.outputs = outputs  # id(op) -> the tensor it made
        self.file = file
        self.precision = precision
        self.name = f"step_backward({getattr(inner, 'name', type(inner).__name__)})"

    def label(self, tensor) -> str:
        return self.labels.get(id(tensor), "t?")

    def print(self, text=""):
        print(text, file=self.file)

    def run(self, graph):
        observer = _StepObserver(self, graph)
        graph.observers.append(observer)  # the graph calls it on every visit and rule
        try:
            self.inner.run(graph)
        finally:
            graph.observers.remove(observer)
        observer.report_scans()
        skipped = sorted(
            (
                self.label(tensor)
                for tensor in graph.order
                if tensor._ctx is not None and id(tensor._ctx) not in observer.seen_ops
            ),
            key=lambda label: int(label[1:].split()[0]) if label[1:2].isdigit() else -1,
        )
        if skipped:
            self.print(
                f"{len(skipped)} tensors got their gradients from a scan, not from a step of "
                f"their own: {' '.join(skipped)}"
            )

    def rule_name(self, operand):
        """How the rule writes an operand: a tensor's id, a number's value (None: as is)."""
        if isinstance(operand, Tensor):
            return self.label(operand).split()[0]
        if operand is not None and np.ndim(operand) == 0:
            return _values_text(operand, self.precision, 0)
        return None

    def _operand_text(self, operand) -> str:
        if operand is None:  # an optional input left out (a linear layer without bias)
            return "None"
        if isinstance(operand, Tensor):
            return f"{self.label(operand)} {shape_text(operand.shape)}"
        if np.ndim(operand) == 0:
            return _values_text(operand, self.precision, 0)
        return f"const {shape_text(np.shape(operand))}"


class _StepObserver:
    """Prints one backward pass as it happens (an observer of the BackwardGraph)."""

    def __init__(self, printer, graph):
        self.printer = printer
        self.graph = graph
        self.number = 0  # the last step printed
        self.segments = 0  # the scanned segments reported so far
        self.seen_ops = set()

    def report_scans(self):
        # Scan schedulers note each chain segment in `graph.scanned_segments` once its
        # gradients are computed: show it where it happened in the walk.
        printer = self.printer
        segments = getattr(self.graph, "scanned_segments", None) or []
        for segment in segments[self.segments :]:
            scan_name, anchors = segment.scheduler, segment.tensors
            self.number += 1
            chain = " -> ".join(printer.label(tensor) for tensor in anchors)
            printer.print(
                f"[{self.number}] {scan_name} scan along the chain {chain} "
                f"({len(anchors) - 1} steps): all its gradients at once"
            )
        self.segments = len(segments)

    def visiting(self, tensor, grad):
        self.report_scans()
        if tensor._ctx is None:
            self.number += 1
            target = f"[{self.number}] leaf {self.printer.label(tensor)} "
            target += f"{shape_text(tensor.shape)}: .grad += "
            self.printer.print(target + _values_text(grad, self.printer.precision, len(target)))

    def rule_ran(self, node, grad, results):
        # Every walk runs an op's backward rule through the graph, whichever scheduler.
        printer = self.printer
        self.report_scans()
        self.number += 1
        self.seen_ops.add(id(node))
        output = printer.outputs.get(id(node))
        output_label = printer.label(output) if output is not None else "t?"
        output_shape = tuple(np.shape(grad.data if isinstance(grad, Tensor) else grad))
        operands = ", ".join(printer._operand_text(operand) for operand in node.inputs)
        printer.print(
            f"[{self.number}] {printer.names.get(id(node), 'op?')} "
            f"{op_class(node).__name__}({operands}) -> {output_label} "
            f"{shape_text(output_shape)}"
        )
        rule = labelled_rule(node, [printer.rule_name(operand) for operand in node.inputs])
        # "d t5" stays on one line (a no-break space while wrapping).
        wrapped = textwrap.fill(
            (rule or missing_rule(node)).replace("d t", "d\u00a0t"),
            100,
            initial_indent="    rule     ",
            subsequent_indent=" " * 13,
        )
        printer.print(wrapped.replace("\u00a0", " "))
        head = f"    grad in  {output_label}: "
        printer.print(head + _values_text(grad, printer.precision, len(head)))
        self.print_sends(node, results, output_shape)

    def print_sends(self, node, results, output_shape):
        printer = self.printer
        for position, (parent, parent_grad, _) in enumerate(results):
            head = "    sends    " if position == 0 else "             "
            target = f"{printer.label(parent)} <- "
            line = head + target + _values_text(parent_grad, printer.precision, len(head + target))
            parent_shape = tuple(parent.shape)
            if type(node).__name__ in _BROADCASTING_OPS and parent_shape != output_shape:
                line += (
                    f"   (summed from {shape_text(output_shape)} back to "
                    f"{shape_text(parent_shape)})"
                )
            printer.print(line)
        if not results:
            printer.print("    sends    nothing (no input needs a gradient)")


def step_backward(
    loss, scheduler=None, file=None, gradient=None, retain_graph=False, precision=4
) -> None:
    """Run `loss.backward()` for real, printing each step: op, shapes, rule, gradients.

    Numbers are rounded to `precision` significant digits. Each op step shows the gradient
    arriving at its output (`grad in`) and what its backward rule sends to each input;
    each leaf step shows what is added to its `.grad`. Names are `viz.trace`'s ids followed
    by the tensor's `.name` when set. `scheduler` is any name or object
    `backward(scheduler=...)` accepts.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> x.name = "x"
    >>> viz.step_backward((x * x).sum())
    backward of t2 (scalar), scheduler sequential
    [1] op1 Sum(t1 2) -> t2 scalar
        rule     out = sum of t1 over axes;  d t1 = g broadcast back over the summed axes
        grad in  t2: 1
        sends    t1 <- [1, 1]
    [2] op0 Mul(t0 x 2, t0 x 2) -> t1 2
        rule     out = t0 * t0;  d t0 = g * t0, d t0 = g * t0
        grad in  t1: [1, 1]
        sends    t0 x <- [1, 2]
                 t0 x <- [1, 2]
    [3] leaf t0 x 2: .grad += [2, 4]
    >>> x.grad.numpy()
    array([2., 4.], dtype=float32)
    """
    from tinygrad_ops.scheduler import resolve_scheduler

    if not isinstance(loss, Tensor):
        raise TypeError(f"step_backward takes a Tensor, got {type(loss).__name__}")
    file = sys.stdout if file is None else file
    inner = resolve_scheduler(scheduler)
    graph = trace(loss)
    labels = {}
    for node_id, node in graph.tensors.items():
        if node.tensor is not None:
            labels[id(node.tensor)] = f"{node_id} {node.name}" if node.name else node_id
    names = {id(op_node.op): op_id for op_id, op_node in graph.ops.items()}
    outputs = {
        id(op_node.op): graph.tensors[op_node.output].tensor for op_node in graph.ops.values()
    }
    printer = _StepPrinter(inner, labels, names, outputs, file, precision)
    inner_name = getattr(inner, "name", type(inner).__name__)
    print(
        f"backward of {printer.label(loss)} ({shape_text(loss.shape)}), scheduler {inner_name}",
        file=file,
    )
    loss.backward(gradient, retain_graph=retain_graph, scheduler=printer)
