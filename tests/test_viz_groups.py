"""Module and function calls as groups of the picture (viz/groups.py): one box per call,
long runs folded, collapsed at a depth."""

import pytest
from helpers import node_names

import tinygrad_ops as tg
from tinygrad_ops import viz


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


def test_inputs_used_only_by_folded_calls_fold_with_them():
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=12, calls=calls)
    source = viz.draw(loss, groups=calls, depth=0, fold=2, max_nodes=None).source
    assert "<b>x[0]</b>" in source  # a kept step's input stays visible
    assert "<b>x[11]</b>" in source
    assert "x[5]" not in source  # the folded steps' inputs are inside the fold
    assert source.count(" -> fold_g2") == 4  # h from step 1, and the three weights
