"""viz.render: real pictures with the Graphviz `dot` program, and DOT text without it."""

import shutil
import struct
import xml.etree.ElementTree as ElementTree

import pytest

import tinygrad_ops as tg
from tinygrad_ops import viz

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")


def small_loss():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    x.name = "x"
    return (x * x).sum()


@needs_dot
def test_svg_is_valid_xml_with_the_op_and_tensor_labels(tmp_path):
    loss = viz.examples.mlp()
    record = viz.backward(loss)
    path = viz.render(loss, tmp_path / "mlp.svg", show="shape|grad", backward=record)
    assert path == tmp_path / "mlp.svg"
    root = ElementTree.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = [element.text for element in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "MatMul" in texts
    assert "layer1.weight" in texts
    assert "#1" in texts
    titles = {element.text for element in root.iter("{http://www.w3.org/2000/svg}title")}
    assert {"op0", "t0", "t0->op0"} <= titles  # nodes and edges keep their DOT ids
    assert not list(tmp_path.glob("*.partial"))


@needs_dot
def test_png_has_the_png_header_and_a_sensible_size(tmp_path):
    path = viz.render(viz.examples.rnn(steps=3), tmp_path / "rnn.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert 200 < width < 20_000
    assert 100 < height < 20_000


@needs_dot
def test_pdf_and_an_explicit_format(tmp_path):
    path = viz.render(small_loss(), tmp_path / "graph.out", format="pdf")
    assert path.read_bytes()[:5] == b"%PDF-"


def test_dot_format_needs_no_graphviz(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    path = viz.render(small_loss(), tmp_path / "graph.dot")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("digraph tinygrad_ops {")
    assert "Mul" in text
    # A Digraph from draw() renders too, as it is.
    picture = viz.draw(small_loss(), rankdir="TB")
    assert "rankdir=TB" in viz.render(picture, tmp_path / "again.gv").read_text()


def test_without_dot_the_dot_text_is_written_and_the_error_says_how_to_install(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no `dot` on PATH
    assert viz.dot_program() is None
    with pytest.raises(viz.GraphvizNotFoundError) as error:
        viz.render(small_loss(), tmp_path / "pictures" / "graph.png")
    message = str(error.value)
    assert "apt-get install graphviz" in message
    assert "brew install graphviz" in message
    dot_file = tmp_path / "pictures" / "graph.dot"
    assert str(dot_file) in message
    assert dot_file.read_text(encoding="utf-8").startswith("digraph tinygrad_ops {")
    assert not (tmp_path / "pictures" / "graph.png").exists()
    assert isinstance(error.value, RuntimeError)


def test_a_finished_digraph_takes_no_draw_options(tmp_path):
    with pytest.raises(TypeError, match="draw options"):
        viz.render(viz.draw(small_loss()), tmp_path / "graph.dot", rankdir="TB")


def test_unknown_format_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="format='jpg2'"):
        viz.render(small_loss(), tmp_path / "graph.jpg2")


@needs_dot
def test_every_combination_of_options_gives_dot_that_graphviz_accepts():
    import itertools
    import subprocess

    from tinygrad_ops import nn

    nn.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(3, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh()), nn.Linear(4, 2)
    )
    with viz.module_calls(model) as model_calls:
        model_loss = model(tg.randn(2, 3, seed=0)).sum()  # an unnamed input, nested modules
    rnn_calls = viz.ModuleCalls()
    rnn_loss = viz.examples.rnn(steps=9, calls=rnn_calls)
    for loss, calls in ((model_loss, model_calls), (rnn_loss, rnn_calls)):
        record = viz.backward(loss, retain_graph=True)
        options = itertools.product(
            [None, 0, 1], [None, 1], [False, True], [None, 7], [None, record], ["", "shape|grad"]
        )
        for depth, fold, compact, max_nodes, backward, show in options:
            picture = viz.draw(
                loss,
                groups=calls,
                depth=depth,
                fold=fold,
                compact=compact,
                max_nodes=max_nodes,
                backward=backward,
                show=show,
            )
            result = subprocess.run(
                ["dot", "-Tsvg"], input=picture.source.encode(), capture_output=True, check=False
            )
            assert result.returncode == 0, (depth, fold, compact, max_nodes, result.stderr)
            assert result.stderr == b"", (depth, fold, compact, max_nodes, result.stderr)
