"""viz.backward's recorder (viz/record.py): the recorded backward order and gradients, scanned
segments, and a recording scheduler that changes no gradient."""

import numpy as np
import pytest
from helpers import named

import tinygrad_ops as tg
from tinygrad_ops import viz
from tinygrad_ops.autograd import ScannedSegment


def test_static_backward_numbers_follow_the_sequential_walk():
    x = named([0.5, 0.25], "x")
    hidden = (x * 2.0).tanh()
    loss = (hidden * x).sum()
    source = viz.draw(loss, backward=True).source
    graph = viz.trace(loss)
    order = graph.backward_order()
    assert [graph.ops[op_id].op_name for op_id in order] == ["Sum", "Mul", "Tanh", "Mul"]
    for step, op_id in enumerate(order, start=1):
        assert f'{op_id} [label=<<font color="#b03a2e"><b>#{step}</b></font>' in source
    # The recorded walk of the real backward visits the ops in the same order.
    record = viz.backward(loss)
    assert [type(op).__name__ for op in record.visit_order] == ["Sum", "Mul", "Tanh", "Mul"]
    assert [record.step(graph.ops[op_id].op) for op_id in order] == [1, 2, 3, 4]


def test_recorded_edge_gradients_match_the_leaf_gradients():
    x = named([1.0, -2.0, 3.0], "x")
    y = x * x  # both slots of Mul get 2x / 2 = x each... from d(sum(x*x)) = 2x in total
    loss = y.sum()
    record = viz.backward(loss)
    mul = loss._ctx.inputs[0]._ctx
    first, second = record.edge_grad(mul, 0), record.edge_grad(mul, 1)
    assert first.shape == second.shape == (3,)
    assert first.norm == pytest.approx(np.linalg.norm([1.0, -2.0, 3.0]))
    assert second.norm == pytest.approx(first.norm)
    assert record.tensor_grad(x).norm == pytest.approx(np.linalg.norm(x.grad.numpy()))
    assert record.tensor_grad(y).norm == pytest.approx(np.sqrt(3.0))
    assert record.scheduler_name == "sequential"


class SegmentScheduler:
    """A stand-in for a scan scheduler: walks sequentially and names a scanned segment."""

    name = "fake-scan"

    def __init__(self, tensors):
        self.tensors = tensors

    def run(self, graph):
        graph.scanned_segments = [ScannedSegment("blelloch", self.tensors, "blelloch", None)]
        tg.scheduler.resolve_scheduler("sequential").run(graph)


def test_scanned_segments_are_drawn_as_one_named_cluster():
    import tinygrad_ops.scheduler  # noqa: F401 (tg.scheduler above)

    x = named([0.1, 0.2], "x")
    chain = [x]
    for _ in range(4):
        chain.append(chain[-1].tanh())
    loss = chain[-1].sum()
    record = viz.backward(loss, scheduler=SegmentScheduler(chain[1:]))
    assert record.scanned_segments[0][0] == "blelloch"
    assert record.scheduler_name == "fake-scan"
    source = viz.draw(loss, backward=record).source
    assert "subgraph cluster_scan_0 {" in source
    assert 'label="scan: blelloch (3 steps)"' in source
    cluster = source.split("subgraph cluster_scan_0 {")[1].split("}")[0]
    members = [line.strip().split(" ")[0] for line in cluster.splitlines() if "[label" in line]
    # The chain from its lowest anchor t1 up to its top t4: the three tanh ops between.
    assert sorted(members) == ["op1", "op2", "op3", "t1", "t2", "t3", "t4"]


def test_a_real_scan_scheduler_is_recorded_and_its_segments_drawn():
    if "blelloch" not in tg.available_schedulers():
        pytest.skip("no scan scheduler registered")
    loss = viz.examples.rnn(steps=16)
    graph = viz.trace(loss)
    leaves = [node.tensor for node in graph.tensors.values() if node.kind == "parameter"]
    expected = [grad.numpy() for grad in tg.grad(loss, leaves, retain_graph=True)]
    record = viz.backward(loss, scheduler="blelloch")
    for leaf, grad in zip(leaves, expected):
        np.testing.assert_allclose(leaf.grad.numpy(), grad, rtol=1e-4, atol=1e-6)
    source = viz.draw(loss, backward=record).source
    for number, segment in enumerate(record.scanned_segments):
        assert f"subgraph cluster_scan_{number} {{" in source
        assert f'label="scan: {segment.scheduler} (' in source


def test_recording_scheduler_gives_the_same_gradients():
    loss = viz.examples.mlp()
    graph = viz.trace(loss)
    leaves = [node.tensor for node in graph.tensors.values() if node.kind == "parameter"]
    expected = tg.grad(loss, leaves, retain_graph=True)
    recorder = viz.RecordingScheduler("sequential")
    loss.backward(scheduler=recorder)
    for leaf, grad in zip(leaves, expected):
        np.testing.assert_allclose(leaf.grad.numpy(), grad.numpy(), rtol=1e-6)
    assert len(recorder.record) == len(graph.ops)
    # The wrappers lived on that one graph object for the run only.
    assert tg.autograd.BackwardGraph.input_grads.__name__ == "input_grads"


def test_recording_a_create_graph_pass():
    x = named([1.0, 2.0], "x")
    loss = (x * x * x).sum()
    recorder = viz.RecordingScheduler()
    (grad,) = tg.grad(loss, [x], create_graph=True, scheduler=recorder)
    assert [type(op).__name__ for op in recorder.record.visit_order] == ["Sum", "Mul", "Mul"]
    np.testing.assert_allclose(grad.numpy(), [3.0, 12.0])
    # The gradient is itself a graph that can be drawn (and differentiated again).
    assert len(viz.trace(grad.sum()).ops) > 3
