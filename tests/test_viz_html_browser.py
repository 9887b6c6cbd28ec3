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
    browser.find_element("css selector", 'g.node[data-node="scan0"]').click()
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
