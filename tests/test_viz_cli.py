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
