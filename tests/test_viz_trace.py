"""viz.trace (viz/trace.py): the traced graph of tensors and ops, its ids, kinds and edges,
and the printed tape."""

import numpy as np
import pytest
from helpers import named, small_graph

import tinygrad_ops as tg
from tinygrad_ops import viz


def test_trace_ids_kinds_and_edges_of_a_small_graph():
    _x, w, loss = small_graph()
    graph = viz.trace(loss)
    assert list(graph.tensors) == ["t0", "t1", "t2", "t3"]
    assert [node.name for node in graph.tensors.values()] == ["x", "w", None, None]
    assert [node.kind for node in graph.tensors.values()] == [
        "parameter",
        "parameter",
        "intermediate",
        "output",
    ]
    assert [(op.id, op.op_name, op.inputs, op.output) for op in graph.ops.values()] == [
        ("op0", "Mul", ["t0", "t1"], "t2"),
        ("op1", "Sum", ["t2"], "t3"),
    ]
    assert [(edge.source, edge.target, edge.shape) for edge in graph.edges] == [
        ("t0", "op0", (2,)),
        ("t1", "op0", (2,)),
        ("op0", "t2", (2,)),
        ("t2", "op1", (2,)),
        ("op1", "t3", ()),
    ]
    assert graph.node_id(w) == "t1"
    assert graph.backward_order() == ["op1", "op0"]


def test_trace_kinds_of_inputs_leaves_and_constants():
    data = tg.Tensor([1.0, 2.0])  # needs no gradient: an input
    leaf = tg.Tensor([0.5, 0.5], requires_grad=True)  # unnamed: a leaf
    out = (data * leaf + 2.0).sum()
    graph = viz.trace(out)
    kinds = {node.id: node.kind for node in graph.tensors.values()}
    assert kinds == {
        "t0": "input",
        "t1": "leaf",
        "t2": "intermediate",
        "c0": "constant",
        "t3": "intermediate",
        "t4": "output",
    }
    assert graph.tensors["c0"].value == 2.0


def test_trace_shares_a_tensor_used_twice_and_keeps_both_operand_edges():
    x = named([1.0, -2.0], "x")
    y = x * x
    graph = viz.trace(y.sum())
    assert graph.ops["op0"].inputs == ["t0", "t0"]
    assert [(edge.source, edge.index) for edge in graph.edges if edge.target == "op0"] == [
        ("t0", 0),
        ("t0", 1),
    ]
    source = viz.draw(y.sum()).source
    assert source.count("t0 -> op0") == 2


def test_trace_of_several_roots_and_bad_input():
    x = named([1.0], "x")
    a, b = x * 2, x * 3
    graph = viz.trace([a, b])
    assert graph.root_ids == ["t1", "t2"]
    assert [node.kind for node in graph.tensors.values()].count("output") == 2
    with pytest.raises(TypeError, match="root 0 is a ndarray"):
        viz.trace(np.zeros(2))


def test_trace_works_after_backward_released_the_buffers():
    _x, _w, loss = small_graph()
    loss.backward()
    assert len(viz.trace(loss).ops) == 2


def test_printed_tape_in_execution_and_backward_order(capsys):
    _x, _w, loss = small_graph()
    viz.print_tape(loss)
    assert capsys.readouterr().out.splitlines() == [
        "forward, in execution order (2 ops):",
        "     1  op0    Mul(t0 x 2 float32, t1 w 2 float32) -> t2 2 float32",
        "     2  op1    Sum(t2 2 float32) -> t3 scalar float32",
        "backward, in the order the sequential walk visits (2 ops):",
        "     1  op1    Sum(t2 2 float32) -> t3 scalar float32",
        "     2  op0    Mul(t0 x 2 float32, t1 w 2 float32) -> t2 2 float32",
    ]
    assert str(viz.trace(loss)) == viz.trace(loss).text()
    assert repr(viz.trace(loss)) == viz.trace(loss).text()  # the prompt shows the tape


def test_a_big_trace_has_a_short_repr():
    x = named([0.5], "x")
    out = x
    for _ in range(150):
        out = out.tanh()
    assert repr(viz.trace(out)) == (
        "<Trace: 151 tensors, 150 ops, 300 edges; print() it for the whole tape>"
    )
    assert len(str(viz.trace(out)).splitlines()) == 302


def test_the_tape_lists_ops_in_the_order_they_ran():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    first = x * 2.0  # ran first
    second = x.exp()  # ran second
    loss = (second + first).sum()  # the depth-first walk meets `second` first
    graph = viz.trace(loss)
    assert [op.op_name for op in graph.ops.values()] == ["Mul", "Exp", "Add", "Sum"]
    assert [op.op for op in graph.ops.values()] == sorted(
        (op.op for op in graph.ops.values()), key=lambda op: op.sequence
    )
    forward = graph.text().splitlines()[1:5]
    assert [line.split()[1] for line in forward] == ["op0", "op1", "op2", "op3"]
    assert "Mul(t0" in forward[0]
