"""`tinygrad-ops graph` (cli/graph.py): named examples and saved models, to a file."""

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops.cli import main


def test_named_example_to_a_dot_file(tmp_path, capsys):
    path = tmp_path / "mlp.dot"
    assert main(["graph", "mlp", "-o", str(path)]) == 0
    source = path.read_text(encoding="utf-8")
    assert source.startswith("digraph tinygrad_ops {")
    assert "layer1.weight" in source
    assert "MatMul" in source
    assert f"wrote {path}" in capsys.readouterr().out


def test_backward_numbers_and_printed_tape(tmp_path, capsys):
    path = tmp_path / "softmax.gv"
    code = main(
        ["graph", "softmax", "--backward", "--show", "shape|grad", "--print", "-o", str(path)]
    )
    assert code == 0
    source = path.read_text(encoding="utf-8")
    assert "<b>#1</b>" in source
    assert "∇" in source
    out = capsys.readouterr().out
    assert "backward, in the order the sequential walk visits" in out


def test_rnn_grouped_collapsed_and_folded(tmp_path):
    path = tmp_path / "rnn.dot"
    code = main(
        [
            "graph",
            "rnn",
            "--steps",
            "20",
            "--group",
            "--depth",
            "0",
            "--format",
            "dot",
            "-o",
            str(path),
        ]
    )
    assert code == 0
    source = path.read_text(encoding="utf-8")
    assert "cell  × 14" in source  # 20 steps: 3 first, 3 last, 14 folded
    assert "call_g0" in source
    assert "call_g19" in source


@pytest.mark.skipif(__import__("shutil").which("dot") is None, reason="needs Graphviz dot")
def test_saved_state_dict_to_png(tmp_path):
    from tinygrad_ops import nn

    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    tg.save(model.state_dict(), tmp_path / "model.npz")
    path = tmp_path / "model.png"
    assert (
        main(["graph", "--checkpoint", str(tmp_path / "model.npz"), "--group", "-o", str(path)])
        == 0
    )
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_saved_state_dict_keeps_its_names(tmp_path):
    state = {
        "encoder.weight": np.ones((4, 3), dtype=np.float32),
        "encoder.bias": np.zeros(4, dtype=np.float32),
        "head.weight": np.ones((2, 4), dtype=np.float32),
    }
    tg.save(state, tmp_path / "state.npz")
    path = tmp_path / "state.dot"
    assert main(["graph", "--checkpoint", str(tmp_path / "state.npz"), "-o", str(path)]) == 0
    source = path.read_text(encoding="utf-8")
    assert "encoder.weight" in source
    assert "head.weight" in source
    assert "Linear layers only" in source


def test_mistakes_are_one_line_errors(tmp_path, capsys):
    assert main(["graph", "-o", str(tmp_path / "x.svg")]) == 2
    assert "name an example" in capsys.readouterr().err
    assert main(["graph", "mlp", "--checkpoint", "x.npz"]) == 2
    assert main(["graph", "nonsense"]) == 2
    assert main(["graph", "mlp", "--max-nodes", "0", "-o", str(tmp_path / "x.svg")]) == 2
    assert main(["graph", "--checkpoint", str(tmp_path / "missing.npz")]) == 1
    assert "missing.npz" in capsys.readouterr().err


def test_without_dot_the_command_writes_dot_text_and_says_how_to_install(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["graph", "layernorm", "-o", str(tmp_path / "norm.svg")]) == 1
    assert "apt-get install graphviz" in capsys.readouterr().err
    assert (tmp_path / "norm.dot").read_text(encoding="utf-8").startswith("digraph")


def _trained(tmp_path, name, *options):
    """The checkpoint of a one-epoch `tinygrad-ops train` run with `options`."""
    out = tmp_path / name
    given = ["train", "--dataset", "digits", "--epochs", "1", "--no-progress"]
    assert main([*given, *options, "--graph-format", "dot", "--out", str(out)]) == 0
    return out / "checkpoint.npz"


# Every model `train` makes: the MLP, with each norm and dropout, and the CNN.
TRAINED = {
    "mlp": ("--hidden", "8"),
    "mlp-batchnorm-dropout": ("--hidden", "8", "--norm", "batch", "--dropout", "0.2"),
    "mlp-layernorm": ("--hidden", "8", "8", "--norm", "layer", "--activation", "tanh"),
    "cnn": ("--model", "cnn"),
}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    return {name: _trained(folder, name, *options) for name, options in TRAINED.items()}


@pytest.mark.parametrize("name", sorted(TRAINED))
def test_every_model_train_makes_is_drawn_and_stepped(name, checkpoints, tmp_path, capsys):
    path = checkpoints[name]
    dot = tmp_path / "model.dot"
    assert main(["graph", "--checkpoint", str(path), "--group", "-o", str(dot)]) == 0
    source = dot.read_text(encoding="utf-8")
    # The CNN's first layer reshapes its rows into images (no op: they need no gradient).
    assert ("4×1×8×8" if name == "cnn" else "x (4 test rows)") in source
    assert ("Conv2d" if name == "cnn" else "Linear") in source
    if __import__("shutil").which("dot") is not None:  # the picture itself, laid out
        picture = tmp_path / "model.png"
        assert main(["graph", "--checkpoint", str(path), "-o", str(picture)]) == 0
        assert max(png_size(picture)) <= 2000
    page = tmp_path / "model.html"
    assert main(["graph", "--checkpoint", str(path), "--html", str(page)]) == 0
    assert "backward steps" in capsys.readouterr().out
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_a_bare_state_dict_with_convolutions_is_refused_by_name(tmp_path, capsys):
    from tinygrad_ops import nn

    tg.save(nn.SmallCNN((1, 8, 8), 10, width=2).state_dict(), tmp_path / "cnn.npz")
    assert main(["graph", "--checkpoint", str(tmp_path / "cnn.npz"), "-o", "x.svg"]) == 2
    error = capsys.readouterr().err
    assert "cnn.npz" in error
    assert "4-D" in error
    assert len(error.strip().splitlines()) == 1


@pytest.mark.parametrize("steps", [30, 200])
def test_a_long_rnn_is_grouped_by_default(steps, tmp_path, capsys):
    path = tmp_path / "rnn.dot"
    assert main(["graph", "rnn", "--steps", str(steps), "-o", str(path)]) == 0
    assert "drawn with module calls 0 deep" in capsys.readouterr().out
    source = path.read_text(encoding="utf-8")
    assert f"cell  × {steps - 4}" in source  # the first and last two calls, then a fold
    assert source.count("->") < 100
    unfolded = tmp_path / "all.dot"
    assert main(["graph", "rnn", "--steps", "30", "--no-group", "-o", str(unfolded)]) == 0
    assert "× 26" not in unfolded.read_text(encoding="utf-8")


@pytest.mark.skipif(__import__("shutil").which("dot") is None, reason="needs Graphviz dot")
@pytest.mark.parametrize("steps", [30, 200])
def test_a_long_rnn_picture_finishes(steps, tmp_path):
    path = tmp_path / "rnn.png"
    assert main(["graph", "rnn", "--steps", str(steps), "-o", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_picture_graphviz_cannot_lay_out_in_seconds_is_refused(tmp_path, capsys):
    code = main(["graph", "rnn", "--max-nodes", "5000", "-o", str(tmp_path / "rnn.png")])
    assert code == 2
    assert "--max-nodes 5000" in capsys.readouterr().err
    path = tmp_path / "rnn.dot"  # DOT text needs no layout
    assert main(["graph", "rnn", "--max-nodes", "5000", "-o", str(path)]) == 0
    assert main(["graph", "rnn", "--steps", "100000", "-o", str(path)]) == 2
    assert "--steps 100000" in capsys.readouterr().err
    page = tmp_path / "rnn.html"
    assert main(["graph", "rnn", "--max-nodes", "5000", "--html", str(page)]) == 2
    assert "a browser opens a page" in capsys.readouterr().err


def png_size(path):
    """(width, height) of a PNG, from its header."""
    header = path.read_bytes()[:24]
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


# The README's examples as it runs them, and the long RNNs grouped by default.
DEFAULT_PICTURES = [["mlp"], ["rnn"], ["softmax"], ["layernorm"], ["rnn", "--steps", "30"]]


@pytest.mark.skipif(__import__("shutil").which("dot") is None, reason="needs Graphviz dot")
@pytest.mark.parametrize("given", DEFAULT_PICTURES, ids=" ".join)
def test_default_pictures_fit_2000_pixels_each_way(given, tmp_path):
    path = tmp_path / "graph.png"
    assert main(["graph", *given, "-o", str(path)]) == 0
    width, height = png_size(path)
    assert width <= 2000
    assert height <= 2000
