"""viz.draw (viz/dot.py, layout.py, style.py): the DOT source of a graph, its labels and
statistics, limits on big graphs, compact pictures, escaping, the layout's direction."""

import numpy as np
import pytest
from helpers import Cube, dot_lines, named, node_names, small_graph

import tinygrad_ops as tg
from tinygrad_ops import viz


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


def test_a_100000_node_chain_traces_and_max_nodes_bounds_the_picture():
    x = tg.Tensor(np.array([0.5], dtype=np.float32), requires_grad=True)
    out = x
    for _ in range(100_000):
        out = out.tanh()
    graph = viz.trace(out)  # iterative: no RecursionError
    assert len(graph.ops) == 100_000
    assert len(graph.tensors) == 100_001
    picture = viz.draw(out, max_nodes=50, compact=False)
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


def test_a_user_function_is_drawn_under_its_own_name():
    x = named([2.0], "x")
    loss = Cube.apply(x).sum()
    assert [op.op_name for op in viz.trace(loss).ops.values()] == ["Cube", "Sum"]
    record = viz.backward(loss)
    assert "<b>Cube</b>" in viz.draw(loss, backward=record).source
    np.testing.assert_allclose(x.grad.numpy(), [12.0])


def test_names_with_markup_characters_are_escaped():
    x = named([1.0], '<x> & "y"')
    source = viz.draw((x * x).sum(), title="<t>").source
    assert '<b>&lt;x&gt; &amp; "y"</b>' in source
    assert 'label="<t>"' in source  # a plain (quoted) label, not an HTML one


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
