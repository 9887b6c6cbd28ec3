"""`trace(root)`: the tape behind a tensor as plain data (nodes and edges), and as text.

The graph is read from the tape the engine already keeps: a non-leaf tensor's `_ctx` is
the op that made it, and `op.inputs` are that op's operands (Tensors or constants). The
walk is iterative (no recursion limit); the ops are listed in the order they ran (their
creation numbers), and ids are numbers given in that order (`t0`, `op0`, `c0`...), never
`id()`: the same graph always gives the same ids, the same text and the same picture.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tinygrad_ops import Tensor

# What a tensor is, as far as the picture is concerned.
OUTPUT = "output"  # a root of the trace: what you called backward on
PARAMETER = "parameter"  # a named leaf that requires grad (nn.Parameter, or a `.name` set)
LEAF = "leaf"  # an unnamed leaf that requires grad
INPUT = "input"  # a tensor that does not require grad (data, targets, masks)
CONSTANT = "constant"  # a non-Tensor operand (a Python number or a numpy array)
INTERMEDIATE = "intermediate"  # made by a recorded op


@dataclass
class TensorNode:
    """One tensor (or constant operand) of the graph."""

    id: str
    kind: str
    shape: tuple
    dtype: str
    name: str | None = None
    tensor: Tensor | None = field(default=None, repr=False, compare=False)
    value: object = field(default=None, repr=False, compare=False)  # constants only


@dataclass
class OpNode:
    """One recorded op: its class name, its operands' node ids and its output's node id."""

    id: str
    op_name: str
    inputs: list  # node ids of the operands, in operand order (None operands left out)
    output: str
    detail: str = ""
    op: object = field(default=None, repr=False, compare=False)


@dataclass
class Edge:
    """Data flowing from `source` to `target`; `index` is the operand slot at an op."""

    source: str
    target: str
    shape: tuple
    index: int = 0


def shape_text(shape) -> str:
    """`(4, 3)` as '4×3', a scalar as 'scalar' (in every picture, page and printout).

    >>> shape_text((4, 3)), shape_text(())
    ('4×3', 'scalar')
    """
    if len(shape) == 0:
        return "scalar"
    return "×".join(str(size) for size in shape)


def _is_parameter(tensor) -> bool:
    # nn.Parameter is found by name so that viz does not need nn to be importable.
    return any(cls.__name__ == "Parameter" for cls in type(tensor).__mro__)


REPR_LIMIT = 100  # ops; a bigger trace's repr is a one-line summary

# Op attributes worth showing beside the op's name (the rest are internal bookkeeping).
_DETAIL_SLOTS = ("exponent", "axis")


def _op_name(op) -> str:
    """The op's class name; for a user `tg.Function`, the Function's own name."""
    function = getattr(op, "function", None)
    if isinstance(function, type):
        return function.__name__
    return type(op).__name__


def _op_detail(op) -> str:
    values = {slot: getattr(op, slot, None) for slot in _DETAIL_SLOTS}
    return ", ".join(f"{slot}={value}" for slot, value in values.items() if value is not None)


class Trace:
    """A traced graph: `tensors` and `ops` in execution order, and the `edges`.

    `str(trace)` is the tape as text: one line per op in execution order, then one line
    per op in the order the sequential backward visits them (see `print_tape`).
    """

    def __init__(self, roots):
        self.roots = list(roots)
        self.tensors: dict[str, TensorNode] = {}  # id -> node, in execution order
        self.ops: dict[str, OpNode] = {}  # id -> node, in execution order
        self.edges: list[Edge] = []
        self.tensor_ids: dict[int, str] = {}  # id(tensor) -> node id, for lookups
        self.op_ids: dict[int, str] = {}  # id(op) -> node id
        self.root_ids: list[str] = []
        self.node_order: list[str] = []  # every node id (tensor, constant, op), as created

    def __len__(self) -> int:
        """The number of nodes: tensors, constants and ops."""
        return len(self.tensors) + len(self.ops)

    def node_id(self, tensor) -> str | None:
        """The id of `tensor` in this trace (None if it is not in it)."""
        return self.tensor_ids.get(id(tensor))

    def backward_order(self) -> list[str]:
        """Op ids in the order the sequential scheduler visits them (the reference walk).

        That walk takes the pending op created last first (every consumer of a tensor was
        created after it), so the order is by creation number, newest first, over the ops
        that a gradient reaches. It is what `loss.backward()` does by default.
        """
        from tinygrad_ops.autograd import topological_order

        grad_roots = [root for root in self.roots if root.requires_grad]
        nodes = [tensor._ctx for tensor in topological_order(grad_roots)]
        nodes = [node for node in nodes if node is not None and id(node) in self.op_ids]
        if all(getattr(node, "sequence", None) is not None for node in nodes):
            nodes.sort(key=lambda node: node.sequence, reverse=True)
        else:
            nodes.reverse()  # reversed topological order: also a valid walk
        return [self.op_ids[id(node)] for node in nodes]

    def describe_tensor(self, node_id: str) -> str:
        node = self.tensors[node_id]
        if node.kind == CONSTANT:
            return f"{node_id} const {shape_text(node.shape)}"
        label = f"{node_id}"
        if node.name:
            label += f" {node.name}"
        return f"{label} {shape_text(node.shape)} {node.dtype}"

    def describe_op(self, op_id: str) -> str:
        op = self.ops[op_id]
        inputs = ", ".join(self.describe_tensor(input_id) for input_id in op.inputs)
        detail = f"[{op.detail}]" if op.detail else ""
        return f"{op.op_name}{detail}({inputs}) -> {self.describe_tensor(op.output)}"

    def text(self) -> str:
        """The tape as text: execution order, then backward order (see `print_tape`)."""
        lines = [f"forward, in execution order ({len(self.ops)} ops):"]
        for step, op_id in enumerate(self.ops, start=1):
            lines.append(f"  {step:>4}  {op_id:<6} {self.describe_op(op_id)}")
        order = self.backward_order()
        lines.append(f"backward, in the order the sequential walk visits ({len(order)} ops):")
        for step, op_id in enumerate(order, start=1):
            lines.append(f"  {step:>4}  {op_id:<6} {self.describe_op(op_id)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        # At the prompt, `viz.trace(loss)` shows the tape itself (up to a readable size).
        if len(self.ops) <= REPR_LIMIT:
            return self.text()
        return (
            f"<Trace: {len(self.tensors)} tensors, {len(self.ops)} ops, {len(self.edges)} "
            "edges; print() it for the whole tape>"
        )


def _as_roots(root) -> list:
    roots = list(root) if isinstance(root, (list, tuple)) else [root]
    for index, tensor in enumerate(roots):
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"trace() takes a Tensor or a list of Tensors, root {index} is a "
                f"{type(tensor).__name__}"
            )
    return roots


def _made_in_order(roots) -> list:
    """Every tensor an op made, reachable from `roots`, in the order the ops ran.

    The order is the ops' creation numbers (`sequence`), which is what ran; where an op
    has none (a graph built by hand), an iterative post-order depth-first walk, which is a
    valid execution order too (every tensor after its operands).
    """
    made = []
    seen = set()
    for start in roots:
        stack = [(start, False)]
        while stack:
            tensor, expanded = stack.pop()
            if id(tensor) in seen:
                continue  # a tensor with two consumers sits on the stack twice
            if not expanded:
                stack.append((tensor, True))
                if tensor._ctx is not None:
                    for operand in reversed(tensor._ctx.inputs):
                        if isinstance(operand, Tensor) and id(operand) not in seen:
                            stack.append((operand, False))
                continue
            seen.add(id(tensor))
            if tensor._ctx is not None:
                made.append(tensor)
    if all(getattr(tensor._ctx, "sequence", None) is not None for tensor in made):
        made.sort(key=lambda tensor: tensor._ctx.sequence)
    return made


class _Builder:
    """Adds nodes and edges to a Trace, numbering each kind in the order it is added."""

    def __init__(self, graph, root_keys):
        self.graph = graph
        self.root_keys = root_keys
        self.counters = {"t": 0, "op": 0, "c": 0}

    def new_id(self, prefix):
        number = self.counters[prefix]
        self.counters[prefix] += 1
        return f"{prefix}{number}"

    def tensor(self, tensor):
        """The node id of `tensor`, added on first sight."""
        graph = self.graph
        if id(tensor) in graph.tensor_ids:
            return graph.tensor_ids[id(tensor)]
        node_id = self.new_id("t")
        if id(tensor) in self.root_keys:
            kind = OUTPUT
        elif tensor._ctx is not None:
            kind = INTERMEDIATE
        elif tensor.requires_grad:
            kind = PARAMETER if (tensor.name or _is_parameter(tensor)) else LEAF
        else:
            kind = INPUT
        graph.tensors[node_id] = TensorNode(
            node_id, kind, tuple(tensor.shape), str(np.dtype(tensor.dtype)), tensor.name, tensor
        )
        graph.tensor_ids[id(tensor)] = node_id
        graph.node_order.append(node_id)
        return node_id

    def constant(self, value):
        node_id = self.new_id("c")
        dtype = str(np.asarray(value).dtype)
        self.graph.tensors[node_id] = TensorNode(
            node_id, CONSTANT, tuple(np.shape(value)), dtype, value=value
        )
        self.graph.node_order.append(node_id)
        return node_id

    def op(self, tensor):
        """The op that made `tensor`: its operands (new ones first), itself, its output."""
        graph, node = self.graph, tensor._ctx
        operands = []  # (node id, operand slot, shape)
        for index, operand in enumerate(node.inputs):
            if operand is None:
                continue  # an optional operand left out (a Linear without bias)
            if isinstance(operand, Tensor):
                operands.append((self.tensor(operand), index, tuple(operand.shape)))
            else:
                operands.append((self.constant(operand), index, tuple(np.shape(operand))))
        op_id = self.new_id("op")
        graph.node_order.append(op_id)
        output_id = self.tensor(tensor)
        input_ids = [input_id for input_id, _, _ in operands]
        graph.ops[op_id] = OpNode(
            op_id, _op_name(node), input_ids, output_id, _op_detail(node), node
        )
        graph.op_ids[id(node)] = op_id
        for input_id, index, shape in operands:
            graph.edges.append(Edge(input_id, op_id, shape, index))
        graph.edges.append(Edge(op_id, output_id, tuple(tensor.shape)))


def trace(root) -> Trace:
    """The graph that produced `root` (a Tensor or a list of them), as a `Trace`.

    Ops come in the order they ran (their creation numbers), each tensor first seen where
    it is first used, and ids are numbered in that order; `print(trace(root))` shows the
    tape as text.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> graph = viz.trace((x * 3).sum())
    >>> [op.op_name for op in graph.ops.values()]
    ['Mul', 'Sum']
    >>> print(graph)
    forward, in execution order (2 ops):
         1  op0    Mul(t0 2 float32, c0 const scalar) -> t1 2 float32
         2  op1    Sum(t1 2 float32) -> t2 scalar float32
    backward, in the order the sequential walk visits (2 ops):
         1  op1    Sum(t1 2 float32) -> t2 scalar float32
         2  op0    Mul(t0 2 float32, c0 const scalar) -> t1 2 float32
    """
    roots = _as_roots(root)
    graph = Trace(roots)
    builder = _Builder(graph, {id(tensor) for tensor in roots})
    for tensor in _made_in_order(roots):
        builder.op(tensor)
    graph.root_ids = [builder.tensor(tensor) for tensor in roots]  # a leaf root, too
    return graph


def print_tape(root, file=None) -> None:
    """Print the tape of `root`: one line per op with shapes, in execution order and then in
    the order backward visits them.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> w = tg.Tensor([[1.0, 2.0]], requires_grad=True)
    >>> viz.print_tape((w @ w.T).tanh())
    forward, in execution order (3 ops):
         1  op0    Transpose(t0 1×2 float32) -> t1 2×1 float32
         2  op1    MatMul(t0 1×2 float32, t1 2×1 float32) -> t2 1×1 float32
         3  op2    Tanh(t2 1×1 float32) -> t3 1×1 float32
    backward, in the order the sequential walk visits (3 ops):
         1  op2    Tanh(t2 1×1 float32) -> t3 1×1 float32
         2  op1    MatMul(t0 1×2 float32, t1 2×1 float32) -> t2 1×1 float32
         3  op0    Transpose(t0 1×2 float32) -> t1 2×1 float32
    """
    print(trace(root).text(), file=file)
