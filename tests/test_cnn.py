"""The CNN: `nn.SmallCNN` and `nn.Unflatten`, `tinygrad-ops train --model cnn`, and
examples/cnn_digits.py (short runs; the full run's accuracy is in the README's figures)."""

import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import tinygrad_ops as tg
from tinygrad_ops import cli, nn
from tinygrad_ops.cli import options
from tinygrad_ops.cli import train as training

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_small_cnn_matches_the_same_torch_layers():
    model = nn.SmallCNN((1, 8, 8), 10, width=4)
    model.eval()
    theirs = torch.nn.Sequential(
        torch.nn.Unflatten(1, (1, 8, 8)),
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(4, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(4, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Dropout(0.35),
        torch.nn.Linear(32, 10),
    ).eval()
    state = {key: torch.tensor(value.numpy()) for key, value in model.state_dict().items()}
    theirs.load_state_dict(state)
    x = np.random.default_rng(0).random((3, 64), dtype=np.float32)
    expected = theirs(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(model(tg.Tensor(x)).numpy(), expected, atol=1e-5)


def test_small_cnn_needs_images_that_two_pools_can_halve():
    with pytest.raises(ValueError, match="divide by 4"):
        nn.SmallCNN((1, 6, 6), 10)


def test_train_builds_the_cnn_with_its_own_defaults():
    args = cli.build_parser("train").parse_args(["train", "--model", "cnn"])
    config = options.config_from_args(args)
    assert (config["model"], config["lr"], config["dropout"]) == ("cnn", 0.003, 0.35)
    model = training.build_model(64, 10, config)
    assert isinstance(model, nn.SmallCNN)
    mlp_config = options.config_from_args(cli.build_parser("train").parse_args(["train"]))
    assert (mlp_config["model"], mlp_config["dropout"]) == ("mlp", 0.0)
    assert isinstance(training.build_model(64, 10, mlp_config), nn.MLP)


def test_cnn_on_moons_is_a_one_line_error(tmp_path, capsys):
    code = cli.main(
        ["train", "--model", "cnn", "--dataset", "moons", "--out", str(tmp_path / "never")]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "--model cnn" in err
    assert "Traceback" not in err


def test_a_short_cnn_run_trains_and_resumes(tmp_path, capsys):
    arguments = ["train", "--model", "cnn", "--no-progress", "--out", str(tmp_path)]
    arguments += ["--graph-format", "dot", "--batch-size", "128", "--test-fraction", "0.7"]
    arguments += ["--validation-fraction", "0.1"]
    assert cli.main([*arguments, "--epochs", "1"]) == 0
    assert cli.main([*arguments, "--epochs", "2", "--resume"]) == 0
    checkpoint = tg.load(tmp_path / "checkpoint.npz")
    assert checkpoint["epoch"] == 2
    assert checkpoint["config"]["model"] == "cnn"
    assert checkpoint["model"]["1.weight"].shape == (32, 1, 3, 3)
    assert "test accuracy" in capsys.readouterr().out
    mlp = ["train", "--no-progress", "--out", str(tmp_path), "--epochs", "3", "--resume"]
    assert cli.main(mlp) == 2  # the checkpoint is a cnn's: a clear error, not a crash
    assert "model" in capsys.readouterr().err


def test_the_example_runs_and_explains_how(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["cnn_digits.py", "--epochs", "1"])
    monkeypatch.syspath_prepend(str(EXAMPLES))  # as `python examples/cnn_digits.py` does
    runpy.run_path(str(EXAMPLES / "cnn_digits.py"), run_name="__main__")
    printed = capsys.readouterr().out
    accuracy = float(printed.split("final test accuracy ")[1].split("%")[0])
    assert accuracy > 80  # one epoch already gets most digits right (90% measured)
    assert "python examples/cnn_digits.py" in (EXAMPLES / "cnn_digits.py").read_text()


def test_the_models_train_with_one_blas_thread():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with training.blas_threads_for({"model": "cnn"}):
        blas = [info for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]
        assert all(info["num_threads"] == 1 for info in blas)
    with training.blas_threads_for({"model": "mlp"}):  # the MLP too (its validation pass)
        blas = [info for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]
        assert all(info["num_threads"] == 1 for info in blas)
