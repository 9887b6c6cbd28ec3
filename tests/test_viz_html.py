"""viz.html: the page's data is the engine's walk; the page needs nothing from outside.

The page itself is tested in a real browser in test_viz_html_browser.py.
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from tinygrad_ops.viz.html import page_data
from tinygrad_ops.viz.html_layout import layered_layout
from tinygrad_ops.viz.html_scan import scan_levels

import tinygrad_ops as tg
from tinygrad_ops import viz
from tinygrad_ops.cli import main


def page_json(page):
    match = re.search(
        r'<script type="application/json" id="tg-data">(.*?)</script>', page.text, re.S
    )
    return json.loads(match.group(1))


def test_the_steps_are_the_engines_visit_order():
    loss = viz.examples.mlp()
    page = viz.html(loss)
    graph = viz.trace(loss)
    recorded = [graph.op_ids[id(op)] for op in page.record.visit_order]
    assert [step["op"] for step in page_json(page)["steps"]] == recorded
    assert recorded == graph.backward_order()  # the sequential walk, as print_tape lists it


def test_gradients_on_the_page_are_the_recorded_ones():
    weight = tg.Tensor([[0.5, -1.0], [2.0, 0.25]], dtype=np.float64, requires_grad=True)
    weight.name = "w"
    x = tg.Tensor([[1.0, 2.0]], dtype=np.float64)
    loss = (x @ weight).tanh().sum()
    data = page_json(viz.html(loss))
    leaf = next(node for node in data["nodes"] if node["label"] == "w")
    np.testing.assert_allclose(leaf["grad"]["values"], weight.grad.numpy().ravel())
    tanh = next(node for node in data["nodes"] if node["label"] == "Tanh")
    matmul_out = np.array([[1.0, 2.0]]) @ weight.numpy()
    np.testing.assert_allclose(
        tanh["operands"][0]["grad"]["values"], 1 - np.tanh(matmul_out[0]) ** 2
    )


def test_the_page_is_self_contained():
    page = viz.html(viz.examples.softmax())
    text = page.text
    assert "<svg" in text
    assert "<script>" in text
    for pattern in (r"\bsrc=", r"<link\b", r"\bimport\s*\(", r"fetch\(", r"https://"):
        assert not re.search(pattern, text), pattern
    # The one URL is the SVG namespace (a name, never fetched).
    assert set(re.findall(r"http://[^\s\"'`]+", text)) == {"http://www.w3.org/2000/svg"}


def test_jupyter_shows_it_in_an_iframe_and_a_file_is_written(tmp_path):
    path = tmp_path / "walk.html"
    page = viz.html(viz.examples.layernorm(), path)
    assert path.read_text(encoding="utf-8") == page.text
    shown = page._repr_html_()
    assert shown.startswith("<iframe srcdoc=")
    assert "&lt;svg" in shown


def test_nan_and_infinity_travel_as_text():
    x = tg.Tensor([0.0, 1.0], requires_grad=True)
    data = page_json(viz.html(x.sqrt().sum()))
    sqrt = next(node for node in data["nodes"] if node["label"] == "Sqrt")
    assert sqrt["operands"][0]["grad"]["values"][0] == "inf"


def test_a_scanned_chain_is_one_node_with_the_scans_levels():
    loss = viz.examples.rnn(steps=8)
    data = page_json(viz.html(loss, scheduler="blelloch"))
    (scan,) = [node for node in data["nodes"] if node["kind"] == "scan"]
    assert scan["levels"]["method"] == "blelloch"
    visited = {step["op"] for step in data["steps"]}
    assert not visited & set(scan["members"])  # the scan's ops are not steps of their own
    assert all(data["display"][op_id] == "cluster_scan_0" for op_id in scan["members"])


@pytest.mark.parametrize("method", ["hillis-steele", "blelloch", "blocked"])
@pytest.mark.parametrize("steps", [1, 2, 5, 8, 13])
def test_scan_levels_combine_into_every_prefix(method, steps):
    levels = scan_levels(method, steps)["levels"]
    made = {(position, position) for position in range(steps + 1)}
    for level in levels:
        for a, b, c, d in level:
            assert (a, b) in made
            assert (c, d) in made
            assert b + 1 == c
        made |= {(a, d) for a, _, _, d in level}
    assert all((0, last) in made for last in range(steps + 1))


def test_a_chain_scanned_by_auto_shows_the_scan_auto_chose():
    """auto picks a scan and a block size per chain; the page steps through that scan's
    levels (it once showed "unknown" for every chain auto scanned)."""

    class PinnedAuto(tg.scheduler.AutoScheduler):
        def gate(self, graph, full=False):
            return True, "pinned by the test"

        def worth_checking(self, steps, ops_per_step, state_shape, kind=None):
            return True

        def choose(self, segment):
            return "blocked", 2

    loss = viz.examples.rnn(steps=8)
    data = page_json(viz.html(loss, scheduler=PinnedAuto()))
    (scan,) = [node for node in data["nodes"] if node["kind"] == "scan"]
    assert scan["label"] == "auto scan"
    steps = len(scan["anchors"]) - 1
    assert scan["levels"] == scan_levels("blocked", steps, 2)
    assert scan["levels"] != scan_levels("blocked", steps)  # not the registered block size


def test_scan_levels_of_a_scheduler_without_one_method_say_so():
    assert "does not say" in scan_levels("auto", 8)["unknown"]


def test_module_calls_collapse_into_one_node_each():
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=6, calls=calls)
    data = page_json(viz.html(loss, groups=calls, depth=0))
    titles = [node["label"] for node in data["nodes"] if node["kind"] == "call"]
    assert sorted(titles) == sorted(
        [f"cell: RNNCell{' #' + str(i) if i else ''}" for i in range(6)]
    )
    for step in data["steps"]:
        assert step["node"] in {node["id"] for node in data["nodes"]}


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="takes a Tensor"):
        viz.html(np.ones(3))
    with pytest.raises(TypeError, match="ModuleCalls"):
        viz.html(viz.examples.mlp(), groups=[1])


def test_layout_puts_producers_above_consumers():
    positions = layered_layout(
        {"a": 30, "b": 30, "c": 30, "d": 30}, [("a", "c"), ("b", "c"), ("c", "d")]
    )
    assert positions["a"][1] == positions["b"][1] < positions["c"][1] < positions["d"][1]


def test_page_data_takes_any_record():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    loss = (x * 3).sum()
    record = viz.backward(loss, retain_graph=True)
    assert [step["op"] for step in page_data(loss, record)["steps"]] == ["op1", "op0"]


def test_the_graph_command_writes_the_page(tmp_path, capsys):
    path = tmp_path / "walk.html"
    assert (
        main(["graph", "rnn", "--steps", "5", "--scheduler", "blelloch", "--html", str(path)]) == 0
    )
    assert f"wrote {path}" in capsys.readouterr().out
    data = page_json(viz.HtmlPage(path.read_text(encoding="utf-8"), None))
    assert data["scheduler"] == "blelloch"
    assert any(node["kind"] == "scan" for node in data["nodes"])


def test_docs_show_the_screenshot_that_make_pictures_makes():
    root = Path(__file__).resolve().parent.parent
    assert "(images/html_walk.png)" in (root / "docs" / "viz.md").read_text(encoding="utf-8")
    assert (root / "docs" / "images" / "html_walk.png").is_file()
    script = (root / "docs" / "images" / "make_pictures.py").read_text(encoding="utf-8")
    assert '"html_walk.png"' in script


def test_the_rule_is_shown_with_the_operands_labels():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    x.name = "x"
    data = page_json(viz.html((x * 3).sum()))
    mul = next(node for node in data["nodes"] if node["label"] == "Mul")
    # One labelling for the page and step_backward (viz/rules.py): a constant's
    # derivative is left as the docstring writes it.
    assert mul["labelled_rule"] == "t1 = t0 x * 3;  d(t0 x) = g * 3, db = g * t0 x"


def test_a_rule_naming_its_operands_by_forward_s_parameters_is_labelled_too():
    x = tg.Tensor([[1.0, 2.0]], requires_grad=True)
    weight = tg.Tensor([[1.0, 2.0]], requires_grad=True)
    data = page_json(viz.html(tg.functional.linear(x, weight).sum()))
    linear = next(node for node in data["nodes"] if node["label"] == "Linear")
    # x and W are Linear's operands; "(out, in)" names W's dims, not the output.
    assert linear["labelled_rule"] == (
        "y = t0 t1ᵀ + b (t1 is (out, in));  d t0 = g t1, d t1 = gᵀ t0, db = sum of g "
        "(batch dims summed)"
    )


def test_a_long_run_of_calls_folds_into_one_node():
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=12, calls=calls)
    data = page_json(viz.html(loss, groups=calls, depth=0, fold=2))
    calls_drawn = [node for node in data["nodes"] if node["kind"] == "call"]
    assert len(calls_drawn) == 5  # calls 0, 1, the fold of 2-9, 10, 11
    (fold,) = [node for node in calls_drawn if node["id"].startswith("fold_")]
    assert fold["label"] == "cell × 8: RNNCell calls #2 … #9"
    assert fold["calls"] == [f"g{number}" for number in range(2, 10)]
    inputs = [node["label"] for node in data["nodes"] if node["kind"] == "input"]
    assert len([label for label in inputs if label.startswith("x[")]) == 4  # x_t of 8 folded


def test_values_the_backward_released_are_still_shown():
    # Backward frees the arrays of big tensors a released graph held (ReleasedTensor):
    # the page reads them from the trace it took before backward.
    x = tg.Tensor(np.full((64, 64), 0.5), dtype=np.float64, requires_grad=True)
    weight = tg.Tensor(np.full((64, 64), 0.1), dtype=np.float64)
    data = page_json(viz.html(((x @ weight).tanh() * 2).sum()))
    tanh = next(node for node in data["nodes"] if node["label"] == "Tanh")
    assert tanh["operands"][0]["value"]["mean"] == pytest.approx(3.2)
    assert tanh["value"]["shape"] == "64×64"


class _Stacked(tg.nn.Module):
    """Two RNN cells stacked, unrolled by hand: each cell is called once per step."""

    def __init__(self):
        super().__init__()
        self.layers = tg.nn.ModuleList([tg.nn.RNNCell(3, 4), tg.nn.RNNCell(4, 4)])

    def forward(self, sequence):
        states = [None, None]
        for x in sequence:
            for number, cell in enumerate(self.layers):
                states[number] = cell(x if number == 0 else states[0], states[number])
        return states[-1]


def _grouped(name):
    """(loss, calls, depth) of one of the models the folding test draws."""
    tg.nn.manual_seed(0)
    if name == "rnn":
        calls = viz.ModuleCalls()
        return viz.examples.rnn(steps=12, calls=calls), calls, 0
    if name == "mlp":
        model = tg.nn.MLP(4, [8, 8], 3, norm="layer", dropout=0.1)
        inputs, depth = tg.randn(5, 4, seed=0), 1
    elif name == "cnn":
        model = tg.nn.SmallCNN((1, 8, 8), 3, width=2)
        inputs, depth = tg.randn(2, 64, seed=0), 1
    else:
        model, inputs, depth = _Stacked(), tg.randn(10, 2, 3, seed=0), 1
    with viz.module_calls(model) as calls:
        loss = model(inputs).sum()
    return loss, calls, depth


@pytest.mark.parametrize("name", ["mlp", "rnn", "stacked-rnn", "cnn"])
def test_the_page_and_the_picture_fold_the_same_calls(name):
    # One display model: what the DOT picture collapses and folds, the page does too.
    loss, calls, depth = _grouped(name)
    source = viz.draw(loss, groups=calls, depth=depth, max_nodes=None).source
    picture = {
        match.group(1): int(match.group(2) or 1)
        for match in re.finditer(r"\t+((?:call|fold)_g\d+) \[label=<<b>[^<]*?(?:× (\d+))?<", source)
    }
    data = page_json(viz.html(loss, groups=calls, depth=depth, max_nodes=None))
    page = {node["id"]: len(node["calls"]) for node in data["nodes"] if node["kind"] == "call"}
    assert page == picture
    assert page  # something was collapsed or folded
    if name in ("rnn", "stacked-rnn"):
        assert any(node_id.startswith("fold_") for node_id in page)
