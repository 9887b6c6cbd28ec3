"""The scripts in examples/ run (with few epochs) and write what they promise."""

import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name, monkeypatch, *arguments):
    """As `python examples/NAME`: the script's folder first on sys.path (the digits examples
    import digits_training.py from beside them)."""
    monkeypatch.setattr(sys, "argv", [name, *arguments])
    monkeypatch.syspath_prepend(str(EXAMPLES))
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")


def test_mlp_moons_draws_its_decision_boundary(tmp_path, monkeypatch, capsys):
    run_example("mlp_moons.py", monkeypatch, "--epochs", "3", "--out", str(tmp_path))
    assert (tmp_path / "moons_boundary.png").read_bytes()[:4] == b"\x89PNG"
    assert "test accuracy" in capsys.readouterr().out


def test_mlp_digits_trains_saves_and_reloads(tmp_path, monkeypatch, capsys):
    run_example("mlp_digits.py", monkeypatch, "--epochs", "1", "--out", str(tmp_path))
    assert (tmp_path / "digits_mlp.npz").exists()
    assert "the reloaded model scores the same" in capsys.readouterr().out


def test_gradcheck_example_passes_the_right_op_and_catches_the_broken_one(monkeypatch, capsys):
    run_example("gradcheck_custom_op.py", monkeypatch)
    printed = capsys.readouterr().out
    assert "gradcheck(Softplus): True" in printed
    assert "gradcheck(BrokenSoftplus): False" in printed


@pytest.mark.parametrize(
    "name", ["mlp_moons.py", "mlp_digits.py", "cnn_digits.py", "gradcheck_custom_op.py"]
)
def test_each_example_explains_how_to_run_it(name):
    text = (EXAMPLES / name).read_text()
    assert f"python examples/{name}" in text


def test_cnn_digits_trains_and_reports_its_accuracy(monkeypatch, capsys):
    run_example("cnn_digits.py", monkeypatch, "--epochs", "1")
    assert "final test accuracy" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["mlp_moons.py", "mlp_digits.py", "cnn_digits.py"])
def test_each_training_example_pins_blas_threads_before_numpy(name):
    # As `tinygrad-ops train` does: a second OpenBLAS thread competes with Python's for the
    # cores and slows these small models several times. It must be set before numpy loads.
    text = (EXAMPLES / name).read_text()
    pin = text.index('os.environ.setdefault(_variable, "1")')
    assert '"OPENBLAS_NUM_THREADS"' in text[:pin]
    assert pin < text.index("import numpy")
    assert pin < text.index("import tinygrad_ops")
