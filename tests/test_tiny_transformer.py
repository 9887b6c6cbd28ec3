"""examples/tiny_transformer.py: a short run learns to sort, compiled and eager agree step
for step, and its graph is drawn grouped by module."""

import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "tiny_transformer.py"


@pytest.fixture(scope="module")
def example():
    return runpy.run_path(str(EXAMPLE), run_name="tiny_transformer")


def test_a_short_compiled_run_learns_to_sort(example):
    """150 steps (about 2 s): the loss of the sorted half falls from 2.4 to about 0.1 and
    the model, decoding greedily, sorts about 91% of new sequences exactly."""
    model, losses = example["train"](150, compiled=True, report_every=0)
    assert losses[0] > 2.0
    assert np.mean(losses[-10:]) < 0.2
    assert example["sorted_correctly"](model, count=200) >= 0.8


def test_compiled_steps_are_the_eager_steps(example):
    _, eager = example["train"](8, compiled=False, report_every=0)
    _, compiled = example["train"](8, compiled=True, report_every=0)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)


def test_the_graph_is_grouped_by_module(example, tmp_path):
    model = example["TinyGPT"]()
    path = example["draw_graph"](model, tmp_path / "tiny.dot")
    text = path.read_text()
    for title in ("blocks.0: TransformerEncoderLayer", "blocks.1.self_attn", "head: Linear"):
        assert title in text


def test_the_script_runs_and_explains_how(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["tiny_transformer.py", "--steps", "3", "--compile"])
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    assert "sorted correctly:" in capsys.readouterr().out
    assert "python examples/tiny_transformer.py" in EXAMPLE.read_text()
