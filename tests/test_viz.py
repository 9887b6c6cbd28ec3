"""viz: the traced graph, its DOT source, the recorded backward order, grouping, limits."""

import numpy as np
import pytest
from helpers import Cube

import tinygrad_ops as tg
from tinygrad_ops import viz
from tinygrad_ops.autograd import ScannedSegment


def named(values, name, requires_grad=True):
    tensor = tg.Tensor(np.asarray(values, dtype=np.float32), requires_grad=requires_grad)
    tensor.name = name
    return tensor


def dot_lines(digraph):
    return [line.strip() for line in digraph.source.splitlines()]


def node_names(digraph):
    """The ids of the node statements in a DOT source (not edges, not attributes)."""
    names = []
    for line in dot_lines(digraph):
        if "->" in line or line.startswith(("digraph", "}", "node ", "edge ", "subgraph")):
            continue
        head = line.split(" ", 1)[0]
        if "[" in line and "=" not in head:
            names.append(head)
    return names


def small_graph():
    """loss = sum(x * w) with x = [1, 2], w = [3, 4]."""
    x = named([1.0, 2.0], "x")
    w = named([3.0, 4.0], "w")
    return x, w, (x * w).sum()


# -- trace -------------------------------------------------------------------------------------


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


# -- the DOT source ----------------------------------------------------------------------------


def test_dot_source_of_a_small_graph_with_recorded_backward():
    x, _w, loss = small_graph()
    record = viz.backward(loss)
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])  # a real backward ran
    lines = dot_lines(viz.draw(loss, show="shape|grad", backward=record))
    grad = '<font color="#b03a2e"><font point-size="9">grad {}</font></font>'
    expected_nodes = [
        f"t0 [label=<<b>x</b><br/>2  float32<br/>{grad.format('[3, 4]')}> "
        'color="#d79b00" fillcolor="#ffe6cc" shape=box style=filled]',
        f"t1 [label=<<b>w</b><br/>2  float32<br/>{grad.format('[1, 2]')}> "
        'color="#d79b00" fillcolor="#ffe6cc" shape=box style=filled]',
        'op0 [label=<<font color="#b03a2e"><b>#2</b></font><br/><b>Mul</b>> color="#9673a6" '
        'fillcolor="#e1d5e7" shape=box style="rounded,filled"]',
        f't2 [label=<2  float32<br/>{grad.format("[1, 1]")}> color="#666666" '
        'fillcolor="#ffffff" shape=box style=filled]',
        'op1 [label=<<font color="#b03a2e"><b>#1</b></font><br/><b>Sum</b>> color="#9673a6" '
        'fillcolor="#e1d5e7" shape=box style="rounded,filled"]',
        f"t3 [label=<<b>output</b><br/>scalar  float32<br/>{grad.format('1')}> "
        'color="#b85450" fillcolor="#f8cecc" penwidth=2.2 shape=box style=filled]',
    ]
    expected_edges = [
        't0 -> op0 [label=<2<br/><font color="#b03a2e">∇ [3, 4]</font>> color="#a05a55"]',
        't1 -> op0 [label=<2<br/><font color="#b03a2e">∇ [1, 2]</font>> color="#a05a55"]',
        'op0 -> t2 [label=<2<br/><font color="#b03a2e">∇ [1, 1]</font>> color="#a05a55"]',
        't2 -> op1 [label=<2<br/><font color="#b03a2e">∇ [1, 1]</font>> color="#a05a55"]',
        'op1 -> t3 [label=<scalar<br/><font color="#b03a2e">∇ 1</font>> color="#a05a55"]',
    ]
    assert lines[0] == "digraph tinygrad_ops {"
    body = [line for line in lines if line.startswith(("t", "op", "c"))]
    assert body == expected_nodes + expected_edges


def test_dot_source_without_backward_has_plain_labels():
    _x, _w, loss = small_graph()
    lines = dot_lines(viz.draw(loss))
    assert (
        'op0 [label=<<b>Mul</b>> color="#9673a6" fillcolor="#e1d5e7" shape=box '
        in (lines[lines.index(next(line for line in lines if line.startswith("op0 ")))][:80])
    )
    assert "t0 -> op0 [label=<2>]" in lines
    assert "op1 -> t3 [label=<scalar>]" in lines
    assert not any("#b03a2e" in line for line in lines)  # no numbers, no gradients
    assert "rankdir=TB" in lines[1]  # auto: a chain is drawn top to bottom
    assert "rankdir=TB" in viz.draw(loss, rankdir="TB").source


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


def test_show_value_and_grad_statistics():
    _x, _w, loss = small_graph()
    loss.backward()
    source = viz.draw(loss, show="shape|value|grad").source
    assert "value [1, 2]" in source  # x's values: tiny, so shown as they are
    assert "grad [3, 4]" in source  # x.grad = w
    assert "value 11" in source  # the loss, 1*3 + 2*4
    plain = viz.draw(loss, show="").source
    assert "float32" not in plain
    assert "value" not in plain
    with pytest.raises(ValueError, match="unknown item"):
        viz.draw(loss, show="shape|colour")
    with pytest.raises(ValueError, match="rankdir"):
        viz.draw(loss, rankdir="sideways")
    with pytest.raises(TypeError, match="backward="):
        viz.draw(loss, backward="yes")


def test_same_graph_twice_gives_the_same_source():
    def build():
        return viz.draw(viz.examples.mlp(), show="shape|value", backward=True).source

    first, second = build(), build()
    assert first == second
    assert "0x" not in first  # no memory addresses anywhere
    loss = viz.examples.rnn(steps=3)
    assert viz.draw(loss).source == viz.draw(loss).source
    assert str(viz.trace(loss)) == str(viz.trace(loss))


# -- big graphs --------------------------------------------------------------------------------


def test_a_100000_node_chain_traces_and_max_nodes_bounds_the_picture():
    x = tg.Tensor(np.array([0.5], dtype=np.float32), requires_grad=True)
    out = x
    for _ in range(100_000):
        out = out.tanh()
    graph = viz.trace(out)  # iterative: no RecursionError
    assert len(graph.ops) == 100_000
    assert len(graph.tensors) == 100_001
    picture = viz.draw(out, max_nodes=50)
    names = node_names(picture)
    assert len(names) == 51  # 50 nodes nearest the output, and one "… more" node
    assert "elided" in names
    assert f"… {200_001 - 50} more nodes" in picture.source
    # The nodes nearest the output: the last 25 tanh ops and their 25 outputs.
    nearest = {f"t{number}" for number in range(99_976, 100_001)}
    nearest |= {f"op{number}" for number in range(99_975, 100_000)}
    assert set(names[:-1]) == nearest


def test_max_nodes_keeps_the_nodes_nearest_the_output():
    _x, _w, loss = small_graph()
    names = node_names(viz.draw(loss, max_nodes=3))
    assert set(names) == {"t3", "op1", "t2", "elided"}
    assert node_names(viz.draw(loss, max_nodes=None)) == ["t0", "t1", "op0", "t2", "op1", "t3"]
    with pytest.raises(ValueError, match="max_nodes"):
        viz.draw(loss, max_nodes=0)


def test_function_groups_draw_one_box_per_call_and_fold_long_runs():
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=20, calls=calls)
    assert len(calls) == 20
    assert all(len(call.op_keys) == 5 for call in calls.calls)  # 2 matmuls, 2 adds, tanh
    source = viz.draw(loss, groups=calls, fold=2, max_nodes=None).source
    assert "subgraph cluster_g0 {" in source
    assert "subgraph cluster_g19 {" in source
    assert "cluster_g2 " not in source  # folded into one node
    assert "cell  × 16" in source
    assert "RNNCell calls #2 … #17" in source
    assert "80 ops, not drawn" in source
    unfolded = viz.draw(loss, groups=calls, fold=None, max_nodes=None).source
    assert all(f"subgraph cluster_g{number} {{" in unfolded for number in range(20))
    # The shared weights are drawn once per use, beside each use.
    assert "cell.weight_hh" in source
    assert "_use0" in source


def test_collapsed_groups_at_a_depth():
    calls = viz.ModuleCalls()
    loss = viz.examples.mlp(calls=calls)
    titles = [call.title for call in calls.calls]
    assert titles == ["layer1: Linear", "act1: Tanh", "layer2: Linear"]
    expanded = viz.draw(loss, groups=calls).source
    assert "subgraph cluster_g0" in expanded
    assert 'label="layer1: Linear"' in expanded
    collapsed = viz.draw(loss, groups=calls, depth=0)
    names = node_names(collapsed)
    assert [name for name in names if "call" in name] == ["call_g0", "call_g1", "call_g2"]
    assert "subgraph" not in collapsed.source
    assert "call_g0 -> call_g1" in collapsed.source
    # A layer's own weights are inside its box; the data stay outside.
    assert "layer1.weight" not in collapsed.source
    assert "<b>x</b>" in collapsed.source
    assert "<b>target</b>" in collapsed.source
    with pytest.raises(TypeError, match="groups="):
        viz.draw(loss, groups=[1, 2])


def test_module_calls_on_an_nn_model():
    nn = pytest.importorskip("tinygrad_ops.nn")
    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    with viz.module_calls(model) as calls:
        loss = model(tg.randn(5, 3, seed=0)).sum()
    assert [call.title for call in calls.calls] == [
        "(model): Sequential",
        "0: Linear",
        "1: Tanh",
        "2: Linear",
    ]
    assert [call.depth for call in calls.calls] == [0, 1, 1, 1]
    assert calls.calls[1].parent is calls.calls[0]
    assert all(call.op_keys for call in calls.calls[1:])
    source = viz.draw(loss, groups=calls).source
    assert "subgraph cluster_g0" in source
    assert "subgraph cluster_g1" in source
    assert "0.weight" in source  # parameters are named by their module path
    collapsed = viz.draw(loss, groups=calls, depth=1).source
    assert "call_g1" in collapsed
    assert "call_g3" in collapsed
    # The hooks are removed when the block ends.
    model(tg.randn(5, 3, seed=1))
    assert len(calls) == 4


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


def test_notebook_display_is_opt_in():
    x, _w, loss = small_graph()
    assert not hasattr(tg.Tensor, "_repr_mimebundle_")
    viz.enable_notebook_display()
    try:
        bundle = loss._repr_mimebundle_()
        assert bundle["text/plain"] == repr(loss)
        if viz.dot_program() is not None:
            assert bundle["image/svg+xml"].lstrip().startswith("<?xml")
        assert "image/svg+xml" not in x._repr_mimebundle_()  # a leaf: text only
    finally:
        viz.disable_notebook_display()
    assert not hasattr(tg.Tensor, "_repr_mimebundle_")
    assert hasattr(viz.draw(loss), "_repr_mimebundle_")  # graphviz's own inline display


def test_the_engine_does_not_import_viz():
    import subprocess
    import sys

    code = (
        "import sys, tinygrad_ops, tinygrad_ops.nn, tinygrad_ops.optim; "
        "x = tinygrad_ops.Tensor([1.0], requires_grad=True); (x * x).sum().backward(); "
        "print(any(name.startswith('tinygrad_ops.viz') for name in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_compact_leaves_out_intermediate_tensors_but_keeps_shapes_and_gradients():
    _x, _w, loss = small_graph()
    record = viz.backward(loss)
    picture = viz.draw(loss, compact=True, backward=record)
    assert node_names(picture) == ["t0", "t1", "op0", "op1", "t3"]  # t2 is left out
    lines = dot_lines(picture)
    assert 'op0 -> op1 [label=<2<br/><font color="#b03a2e">∇ [1, 1]</font>> color="#a05a55"]' in (
        lines
    )
    assert "t0 -> op0" in picture.source


def test_inputs_used_only_by_folded_calls_fold_with_them():
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=12, calls=calls)
    source = viz.draw(loss, groups=calls, depth=0, fold=2, max_nodes=None).source
    assert "<b>x[0]</b>" in source  # a kept step's input stays visible
    assert "<b>x[11]</b>" in source
    assert "x[5]" not in source  # the folded steps' inputs are inside the fold
    assert source.count(" -> fold_g2") == 4  # h from step 1, and the three weights


def test_a_user_function_is_drawn_under_its_own_name():
    x = named([2.0], "x")
    loss = Cube.apply(x).sum()
    assert [op.op_name for op in viz.trace(loss).ops.values()] == ["Cube", "Sum"]
    record = viz.backward(loss)
    assert "<b>Cube</b>" in viz.draw(loss, backward=record).source
    np.testing.assert_allclose(x.grad.numpy(), [12.0])


def test_recording_a_create_graph_pass():
    x = named([1.0, 2.0], "x")
    loss = (x * x * x).sum()
    recorder = viz.RecordingScheduler()
    (grad,) = tg.grad(loss, [x], create_graph=True, scheduler=recorder)
    assert [type(op).__name__ for op in recorder.record.visit_order] == ["Sum", "Mul", "Mul"]
    np.testing.assert_allclose(grad.numpy(), [3.0, 12.0])
    # The gradient is itself a graph that can be drawn (and differentiated again).
    assert len(viz.trace(grad.sum()).ops) > 3


def test_names_with_markup_characters_are_escaped():
    x = named([1.0], '<x> & "y"')
    source = viz.draw((x * x).sum(), title="<t>").source
    assert '<b>&lt;x&gt; &amp; "y"</b>' in source
    assert 'label="<t>"' in source  # a plain (quoted) label, not an HTML one


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


def test_a_scalar_gradient_keeps_its_sign_and_big_ones_label_their_statistics():
    w = tg.Tensor([[0.5, -1.0, 2.0, 0.25, -3.0]], requires_grad=True)
    w.name = "w"
    loss = (w * -4.0).sum() * -1.0
    record = viz.backward(loss)
    source = viz.draw(loss, show="shape|value|grad", backward=record).source
    assert "∇ -1" in source  # d loss / d (sum) = -1: the sign is shown
    assert "value min -3 mean -0.25 max 2" in source
    assert "grad min 4 mean 4 max 4  ‖8.94‖" in source


def test_auto_rankdir_draws_a_deep_graph_top_to_bottom_and_a_wide_one_left_to_right():
    deep = viz.draw(viz.examples.mlp())
    assert "rankdir=TB" in deep.source
    leaves = [tg.Tensor([float(i)], requires_grad=True) for i in range(8)]
    wide = viz.draw(tg.stack([leaf * 2.0 for leaf in leaves]).sum())
    assert "rankdir=LR" in wide.source
    assert "rankdir=LR" in viz.draw(viz.examples.mlp(), rankdir="LR").source


def test_the_example_graphs_name_the_derivations_intermediates():
    layernorm = viz.draw(viz.examples.layernorm()).source
    for name in ("μ", "x - μ", "σ²", "x̂"):
        assert f"<b>{name}</b>" in layernorm, name
    softmax = viz.draw(viz.examples.softmax()).source
    for name in ("m = max x", "e = exp(x - m)", "S = Σ e", "y = e / S"):
        assert f"<b>{name}</b>" in softmax, name
