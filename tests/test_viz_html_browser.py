"""viz.html's page in a real browser: headless Chromium, driven by selenium.

The step buttons move the highlighted node through exactly the engine's backward order,
the numbers shown are the engine's gradients, and the page logs no error. Nothing is
downloaded: the installed `chromium` and `chromedriver` are used (`make test` installs
them where it may, as it installs Graphviz); without them these tests skip.
"""

import numpy as np
import pytest
from browser import INSTALL_HINT, chromium, chromium_available

import tinygrad_ops as tg
from tinygrad_ops import viz


@pytest.fixture(scope="module")
def browser():
    if not chromium_available():
        print(INSTALL_HINT)
        pytest.skip(INSTALL_HINT)
    with chromium() as driver:
        yield driver


def open_page(browser, page, tmp_path):
    path = tmp_path / "walk.html"
    path.write_text(page.text, encoding="utf-8")
    browser.get_log("browser")  # forget what an earlier page logged
    browser.get(path.as_uri())
    return browser


def errors_logged(browser):
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def current_node(browser):
    highlighted = browser.find_elements("css selector", "g.node.current")
    return [element.get_attribute("data-node") for element in highlighted]


def shown_numbers(box):
    """min, mean, max and the listed values of a value box on the panel, as floats."""
    fields = {}
    for key in ("min", "mean", "max", "norm"):
        found = box.find_elements("css selector", f"[data-field={key}]")
        if found:
            fields[key] = float(found[0].text)
    values = box.find_elements("css selector", "[data-field=values]")
    if values:
        fields["values"] = [float(item) for item in values[0].text.strip("[]").split(",")]
    return fields


def click(browser, element_id):
    browser.find_element("id", element_id).click()


def small_mlp():
    """A 3-2-2 MLP on two rows: every gradient is small enough to show its numbers."""
    rng = np.random.default_rng(0)
    x = tg.Tensor(rng.standard_normal((2, 3)), dtype=np.float64)
    w1 = tg.Tensor(rng.standard_normal((3, 2)), dtype=np.float64, requires_grad=True)
    b1 = tg.Tensor(np.zeros(2), dtype=np.float64, requires_grad=True)
    w2 = tg.Tensor(rng.standard_normal((2, 2)), dtype=np.float64, requires_grad=True)
    for tensor, name in ((x, "x"), (w1, "W1"), (b1, "b1"), (w2, "W2")):
        tensor.name = name
    logits = (x @ w1 + b1).tanh() @ w2
    loss = tg.functional.cross_entropy(logits, tg.Tensor([0, 1], dtype=np.int64))
    return loss, (w1, b1, w2)


def open_small_mlp(browser, tmp_path):
    """The small MLP's page, open in the browser: (page, its trace, the parameters)."""
    loss, parameters = small_mlp()
    page = viz.html(loss)
    open_page(browser, page, tmp_path)
    return page, viz.trace(loss), parameters


def engine_gradient(node_id):
    """The gradient of the loss at tensor `node_id` of a fresh, identical small MLP, from
    `tg.grad` (not from the recorder that fed the page)."""
    loss, _ = small_mlp()
    tensor = viz.trace(loss).tensors[node_id].tensor
    (grad,) = tg.grad(loss, [tensor])
    return grad.numpy()


def test_the_step_buttons_follow_the_engines_order(browser, tmp_path):
    page, graph, _ = open_small_mlp(browser, tmp_path)
    engine_order = [graph.op_ids[id(op)] for op in page.record.visit_order]
    assert engine_order == graph.backward_order()  # the sequential walk's order
    assert current_node(browser) == []  # step 0: before backward
    seen = []
    for _ in engine_order:
        click(browser, "next")
        (node,) = current_node(browser)
        seen.append(node)
    assert seen == engine_order
    click(browser, "next")  # past the end: stays on the last step
    assert current_node(browser) == [engine_order[-1]]
    click(browser, "prev")
    click(browser, "prev")
    assert current_node(browser) == [engine_order[-3]]
    click(browser, "first")
    assert current_node(browser) == []
    assert errors_logged(browser) == []


def test_the_gradients_shown_are_the_engines(browser, tmp_path):
    page, graph, parameters = open_small_mlp(browser, tmp_path)
    for op in page.record.visit_order:
        click(browser, "next")
        output_id = graph.ops[graph.op_ids[id(op)]].output
        shown = shown_numbers(browser.find_element("css selector", "#panel [data-field=grad]"))
        expected = engine_gradient(output_id)
        got = [shown["min"], shown["mean"], shown["max"]]
        np.testing.assert_allclose(
            got, [expected.min(), expected.mean(), expected.max()], rtol=1e-5, atol=1e-12
        )
        np.testing.assert_allclose(shown["values"], expected.ravel(), rtol=1e-5, atol=1e-12)
    for parameter in parameters:  # each leaf's panel shows the .grad backward wrote
        node_id = graph.node_id(parameter)
        browser.find_element("css selector", f'g.node[data-node="{node_id}"]').click()
        box = browser.find_element("css selector", "#panel [data-field=grad]")
        np.testing.assert_allclose(
            shown_numbers(box)["values"], parameter.grad.numpy().ravel(), rtol=1e-5, atol=1e-12
        )
    assert errors_logged(browser) == []


def test_each_node_carries_its_order_number(browser, tmp_path):
    page, graph, _ = open_small_mlp(browser, tmp_path)
    for step, op in enumerate(page.record.visit_order, start=1):
        node = browser.find_element("css selector", f'g.node[data-node="{graph.op_ids[id(op)]}"]')
        assert node.find_element("css selector", "[data-field=order]").text == str(step)


def test_a_scanned_chain_steps_through_its_levels(browser, tmp_path):
    page = viz.html(viz.examples.rnn(steps=8), scheduler="blelloch")
    open_page(browser, page, tmp_path)
    browser.find_element("css selector", 'g.node[data-node="cluster_scan_0"]').click()
    levels = browser.find_element("css selector", "#panel [data-field=level]")
    assert levels.text.strip().startswith("level 0 of")
    total = int(levels.text.split(" of ")[1].split()[0])
    for _ in range(total):
        browser.find_element("xpath", "//button[text()='level ▶']").click()
    combines = browser.find_elements("css selector", "#panel [data-field=combine]")
    assert combines  # the last level's combines, named by the chain's anchors
    assert all("→ g(" in combine.text for combine in combines)
    assert errors_logged(browser) == []


def test_collapsed_module_calls_are_highlighted_as_their_ops_run(browser, tmp_path):
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=20, calls=calls)
    page = viz.html(loss, groups=calls, depth=0)
    open_page(browser, page, tmp_path)
    click(browser, "last")
    (node,) = current_node(browser)
    assert node.startswith("call_")
    assert errors_logged(browser) == []


def test_the_notebook_view_works_in_its_iframe(browser, tmp_path):
    loss, _ = small_mlp()
    page = viz.html(loss)
    host = tmp_path / "notebook.html"
    host.write_text(f"<!DOCTYPE html><html><body>{page._repr_html_()}</body></html>", "utf-8")
    browser.get_log("browser")
    browser.get(host.as_uri())
    browser.switch_to.frame(browser.find_element("tag name", "iframe"))
    try:
        click(browser, "next")
        assert current_node(browser) == [viz.trace(loss).op_ids[id(page.record.visit_order[0])]]
    finally:
        browser.switch_to.default_content()
    assert errors_logged(browser) == []


# ---- the drawing, measured in the browser ---------------------------------------------------

BOXES = """
return Array.from(document.querySelectorAll(arguments[0])).filter(
  (element) => getComputedStyle(element).display !== "none"
).map((element) => {
  const box = element.getBoundingClientRect();
  return [box.left, box.top, box.right, box.bottom];
});
"""


def boxes(browser, selector):
    """(left, top, right, bottom) of every displayed element matching `selector`."""
    return browser.execute_script(BOXES, selector)


def overlapping(first, second, slack=0.5):
    return (
        first[0] < second[2] - slack
        and second[0] < first[2] - slack
        and first[1] < second[3] - slack
        and second[1] < first[3] - slack
    )


def pairs_overlapping(found):
    return [(a, b) for i, a in enumerate(found) for b in found[i + 1 :] if overlapping(a, b)]


def readme_examples():
    """The graphs the README shows (tinygrad-ops graph mlp / rnn), as pages."""
    return {"mlp": viz.html(viz.examples.mlp()), "rnn": viz.html(viz.examples.rnn())}


@pytest.mark.parametrize("name", ["mlp", "rnn"])
def test_no_two_edge_labels_overlap(browser, tmp_path, name):
    open_page(browser, readme_examples()[name], tmp_path)
    click(browser, "last")  # every gradient has arrived: every label is shown
    labels = boxes(browser, "g.edge text")
    assert len(labels) > 8
    assert pairs_overlapping(labels) == []
    # Nor does a label cover a node.
    nodes = boxes(browser, "g.node rect")
    assert [label for label in labels if any(overlapping(label, node) for node in nodes)] == []
    assert errors_logged(browser) == []


MARKERS = """
return Array.from(document.querySelectorAll("g.edge path")).map(
  (path) => getComputedStyle(path).markerEnd);
"""
MARKER_SIZES = """
return Array.from(document.querySelectorAll("marker")).map((marker) => [marker.id,
  marker.getAttribute("markerUnits"), marker.getAttribute("markerWidth"),
  marker.getAttribute("markerHeight")]);
"""


def test_arrowheads_are_one_size_in_every_state(browser, tmp_path):
    page, _, _ = open_small_mlp(browser, tmp_path)
    markers = browser.execute_script(MARKER_SIZES)
    # Sized in user units: a thick edge (the current step's) gets no bigger arrowhead.
    assert {tuple(marker[1:]) for marker in markers} == {("userSpaceOnUse", "9", "9")}
    names = {f'url("#{marker[0]}")' for marker in markers}
    for _ in range(len(page.record.visit_order) + 1):
        used = browser.execute_script(MARKERS)
        assert used
        assert set(used) <= names
        click(browser, "next")


def test_an_edge_that_carries_no_gradient_is_never_highlighted(browser, tmp_path):
    page, graph, _ = open_small_mlp(browser, tmp_path)
    x_id = next(node_id for node_id, node in graph.tensors.items() if node.name == "x")
    from_x = f'g.edge[data-from="{x_id}"]'
    assert browser.find_elements("css selector", from_x)
    lit = []
    for _ in page.record.visit_order:
        click(browser, "next")
        lit += browser.find_elements("css selector", f"{from_x}.arrived, {from_x}.sending")
        # The edges that do carry one light up once their gradient has been sent.
        assert browser.find_elements("css selector", "g.edge.sending")
    assert lit == []


LABELS_AND_BADGES = """
return Array.from(document.querySelectorAll("g.node")).map((group) => {
  const box = (element) => {
    if (!element) return null;
    const found = element.getBoundingClientRect();
    return [found.left, found.top, found.right, found.bottom];
  };
  return [group.getAttribute("data-node"), group.getAttribute("class"),
    box(group.querySelector("rect")), box(group.querySelector("[data-field=label]")),
    box(group.querySelector(".badge")),
    group.querySelector("[data-field=label]").textContent];
});
"""


def grouped_rnn_page(steps=100):
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=steps, calls=calls)
    return viz.html(loss, groups=calls, depth=0)


@pytest.mark.parametrize("make", [grouped_rnn_page, lambda: viz.html(viz.examples.mlp())])
def test_every_label_is_visible_beside_its_step_badge(browser, tmp_path, make):
    open_page(browser, make(), tmp_path)
    click(browser, "last")
    found = browser.execute_script(LABELS_AND_BADGES)
    rects = [rect for _, _, rect, _, _, _ in found]
    calls = [item for item in found if " call" in item[1]]
    if "cell" in found[0][5] or any(calls):
        assert len(calls) == 7  # 3 calls, the fold of the middle 94, 3 calls
    for node_id, _, rect, label, badge, text in found:
        assert text, node_id
        inside = rect[0] <= label[0] and label[2] <= rect[2]
        assert inside, (node_id, text, "runs out of its box")
        if badge is not None:
            assert not overlapping(label, badge), (node_id, text, "covered by its badge")
        others = [other for other in rects if other is not rect]
        assert not any(overlapping(label, other) for other in others), (node_id, text)
    assert pairs_overlapping(rects) == []
    assert errors_logged(browser) == []


def test_every_scan_level_is_labelled(browser, tmp_path):
    page = viz.html(viz.examples.rnn(steps=8), scheduler="blelloch")
    open_page(browser, page, tmp_path)
    browser.find_element("css selector", 'g.node[data-node="cluster_scan_0"]').click()
    total = int(browser.find_element("css selector", "#panel [data-field=level]").text.split()[3])
    names = browser.find_elements("css selector", "#panel [data-field=level-name]")
    assert [name.text for name in names] == [f"level {n}" for n in range(1, total + 1)]
    positions = boxes(browser, "#panel [data-field=position]")
    assert len(positions) >= 3
    bars = boxes(browser, "#panel svg.levels rect")
    texts = boxes(browser, "#panel svg.levels text")
    assert pairs_overlapping(texts) == []
    assert [text for text in texts if any(overlapping(text, bar) for bar in bars)] == []


class Softplus(tg.Function):
    """out = log(1 + exp(x));  dx = g * sigmoid(x)"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.relu() + ((-x.abs()).exp() + 1).log()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * x.sigmoid()


def test_a_custom_functions_rule_is_on_the_page(browser, tmp_path):
    x = tg.Tensor([-1.0, 0.5], requires_grad=True)
    x.name = "x"
    page = viz.html(Softplus.apply(x).sum())
    open_page(browser, page, tmp_path)
    graph_ops = page_json_nodes(page)
    softplus = next(node for node in graph_ops if node["label"] == "Softplus")
    browser.find_element("css selector", f'g.node[data-node="{softplus["id"]}"]').click()
    rule = browser.find_element("css selector", "#panel [data-field=rule]").text
    assert rule == "out = log(1 + exp(x));  dx = g * sigmoid(x)"
    labelled = browser.find_element("css selector", "#panel [data-field=labelled-rule]").text
    assert labelled == "t1 = log(1 + exp(t0 x));  d(t0 x) = g * sigmoid(t0 x)"


def page_json_nodes(page):
    import json
    import re

    found = re.search(r'id="tg-data">(.*?)</script>', page.text, re.S)
    return json.loads(found.group(1))["nodes"]


def test_a_10000_node_graph_opens_folded(browser, tmp_path):
    calls = viz.ModuleCalls()
    loss = viz.examples.rnn(steps=910, calls=calls)
    assert len(viz.trace(loss)) > 10_000
    page = viz.html(loss, groups=calls, depth=0)
    open_page(browser, page, tmp_path)
    drawn = browser.find_elements("css selector", "g.node")
    assert len(drawn) < 60  # 3 calls, the fold of 904, 3 calls, their inputs, the loss
    click(browser, "last")
    assert current_node(browser) == ["call_g0"]
    assert errors_logged(browser) == []


def test_an_ungrouped_10000_node_graph_opens_with_the_nodes_nearest_the_loss(browser, tmp_path):
    loss = viz.examples.rnn(steps=910)
    page = viz.html(loss)
    open_page(browser, page, tmp_path)
    drawn = browser.find_elements("css selector", "g.node")
    # max_nodes=1000 (constants among them are shown in their op's panel) and the "… more"
    # node, besides the copies of the shared weights.
    kept = [node for node in drawn if "_use" not in node.get_attribute("data-node")]
    assert 900 < len(kept) <= 1001
    elided = browser.find_element("css selector", 'g.node[data-node="elided"]')
    assert "more nodes" in elided.get_attribute("textContent")
    click(browser, "last")  # the steps of ops not drawn are the "… more" node's
    assert current_node(browser) == ["elided"]
    assert errors_logged(browser) == []
