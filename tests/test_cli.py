"""The `tinygrad-ops` command: a short training end to end, --resume, and bad options."""

import subprocess
import sys

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops import cli
from tinygrad_ops.cli import build, options
from tinygrad_ops.cli import checkpoint as checkpoint_module
from tinygrad_ops.cli import train as training

SMALL = ["--dataset", "moons", "--hidden", "16", "16", "--batch-size", "32", "--no-progress"]
# Batch norm, dropout, AdamW and a schedule: every piece of state a resume must restore.
STATEFUL = SMALL + [
    "--norm",
    "batch",
    "--dropout",
    "0.1",
    "--optimizer",
    "adamw",
    "--scheduler",
    "cosine",
    "--lr",
    "0.01",
]


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """One short run, shared by the tests that only read what it wrote."""
    out = tmp_path_factory.mktemp("run")
    code = cli.main(["train", *SMALL, "--epochs", "2", "--out", str(out)])
    return code, out


def test_a_short_run_writes_checkpoint_plot_and_graph(short_run, capsys):
    code, out = short_run
    assert code == 0
    plot = (out / "training.svg").read_text(encoding="utf-8")
    assert plot.startswith("<svg")
    assert plot.count("<polyline") == 4
    assert not (out / "training.png").exists()
    assert (out / "graph.svg").exists()
    checkpoint = tg.load(out / "checkpoint.npz")
    assert checkpoint["epoch"] == 2
    assert len(checkpoint["history"]["validation_accuracy"]) == 2
    assert tg.load(out / "best.npz")["epoch"] in (1, 2)
    assert checkpoint["config"]["hidden"] == [16, 16]
    assert "0.weight" in checkpoint["model"]
    assert set(checkpoint["rng"]) == {"init", "loader"}


def test_plot_format_png_draws_the_curves_with_matplotlib(tmp_path):
    code = cli.main(
        ["train", *SMALL, "--epochs", "1", "--plot-format", "png", "--out", str(tmp_path)]
    )
    assert code == 0
    assert (tmp_path / "training.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "training.svg").exists()


def test_the_run_reports_the_test_accuracy(tmp_path, capsys):
    code = cli.main(["train", *SMALL, "--epochs", "3", "--lr", "0.05", "--out", str(tmp_path)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "epoch   3/3" in printed
    accuracy = float(printed.split("test accuracy: ")[1].split("%")[0])
    assert accuracy > 80  # moons is easy: a short run already separates most points


def test_the_model_is_built_from_the_options():
    config = options.config_from_args(
        cli.build_parser("train").parse_args(
            [
                "train",
                "--hidden",
                "8",
                "4",
                "--norm",
                "layer",
                "--activation",
                "gelu",
                "--dropout",
                "0.5",
            ]
        )
    )
    model = training.build_model(64, 10, config)
    assert [type(layer).__name__ for layer in model] == [
        "Linear",
        "LayerNorm",
        "GELU",
        "Dropout",
        "Linear",
        "LayerNorm",
        "GELU",
        "Dropout",
        "Linear",
    ]
    assert (model[0].in_features, model[4].out_features, model[8].out_features) == (64, 4, 10)
    assert config["lr"] == options.DEFAULT_LR["adam"]


def _interrupt_after(epoch):
    def log(line):
        if line.startswith(f"epoch {epoch:3d}/"):
            raise KeyboardInterrupt

    return log


def test_resume_gives_the_same_result_as_an_uninterrupted_run(tmp_path):
    straight = tmp_path / "straight"
    assert cli.main(["train", *STATEFUL, "--epochs", "4", "--out", str(straight)]) == 0

    interrupted = tmp_path / "interrupted"
    args = cli.build_parser("train").parse_args(
        ["train", *STATEFUL, "--epochs", "4", "--out", str(interrupted)]
    )
    with pytest.raises(KeyboardInterrupt):
        training.train(
            options.config_from_args(args),
            str(interrupted),
            progress=False,
            log=_interrupt_after(2),
        )
    assert tg.load(interrupted / "checkpoint.npz")["epoch"] == 2
    resumed = ["train", *STATEFUL, "--epochs", "4", "--out", str(interrupted), "--resume"]
    assert cli.main(resumed) == 0

    expected = tg.load(straight / "checkpoint.npz")
    got = tg.load(interrupted / "checkpoint.npz")
    assert got["epoch"] == expected["epoch"] == 4
    assert got["history"] == expected["history"]
    for key, value in expected["model"].items():
        np.testing.assert_array_equal(got["model"][key].numpy(), value.numpy(), err_msg=key)
    assert got["optimizer"]["param_groups"] == expected["optimizer"]["param_groups"]


def test_an_interrupt_says_how_to_continue(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "train", interrupted)
    assert cli.main(["train", "--out", str(tmp_path)]) == 130
    assert "--resume" in capsys.readouterr().err


def _one_line_error(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "error:" in err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--epochs", "0"], "--epochs"),
        (["--epochs", "two"], "whole number"),
        (["--batch-size", "-3"], "--batch-size"),
        (["--lr", "-0.1"], "--lr"),
        (["--lr", "nan"], "--lr"),
        (["--dataset", "mnist"], "invalid choice"),
        (["--activation", "swish"], "--activation"),
        (["--norm", "group"], "--norm"),
        (["--optimizer", "rmsprop"], "--optimizer"),
        (["--scheduler", "linear"], "--scheduler"),
        (["--hidden", "0"], "--hidden"),
        (["--hidden"], "--hidden"),
        (["--dropout", "1.5"], "--dropout"),
        (["--momentum", "-1"], "--momentum"),
        (["--weight-decay", "x"], "--weight-decay"),
        (["--test-fraction", "1"], "--test-fraction"),
        (["--seed", "1.5"], "--seed"),
        (["--seed", "-1"], "argument --seed: must be between 0 and"),
        (["--seed", str(2**32)], "argument --seed: must be between 0 and"),
        (["--graph-format", "jpg"], "--graph-format"),
        (["--bogus"], "unrecognized"),
    ],
)
def test_each_bad_option_is_a_one_line_error(options, words, capsys, tmp_path):
    assert cli.main(["train", *options, "--out", str(tmp_path / "never")]) == 2
    assert words in _one_line_error(capsys)
    assert not (tmp_path / "never").exists()


def test_an_unknown_command_is_a_one_line_error(capsys):
    assert cli.main(["fly"]) == 2
    assert "invalid choice" in _one_line_error(capsys)


def test_out_must_be_a_folder(tmp_path, capsys):
    file = tmp_path / "file.txt"
    file.write_text("x")
    assert cli.main(["train", *SMALL, "--out", str(file)]) == 2
    assert "is a file" in _one_line_error(capsys)


def test_resume_without_a_checkpoint(tmp_path, capsys):
    assert cli.main(["train", *SMALL, "--out", str(tmp_path), "--resume"]) == 2
    assert "no checkpoint" in _one_line_error(capsys)


def test_resume_with_other_settings_names_the_option(short_run, capsys):
    _, out = short_run
    options = ["train", *SMALL, "--hidden", "32", "--out", str(out), "--resume"]
    assert cli.main(options) == 2
    assert "--hidden [16, 16], not [32]" in _one_line_error(capsys)


def test_resume_from_a_truncated_checkpoint(short_run, tmp_path, capsys):
    _, out = short_run
    data = (out / "checkpoint.npz").read_bytes()
    (tmp_path / "checkpoint.npz").write_bytes(data[: len(data) // 2])
    assert cli.main(["train", *SMALL, "--out", str(tmp_path), "--resume"]) == 1
    err = _one_line_error(capsys)
    assert "truncated" in err
    assert str(tmp_path / "checkpoint.npz") in err


def test_a_missing_subcommand_module_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.setitem(
        cli.COMMANDS, "ghost", cli.Command(help="not installed", module="tinygrad_ops.no_such")
    )
    assert cli.main(["ghost"]) == 1
    assert "'ghost' command is not available" in _one_line_error(capsys)
    # The other commands still work while one is missing.
    assert cli.main(["train", "--epochs", "0"]) == 2


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.build_parser("train").parse_args(["train", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    parser = cli.build_parser("train")
    train_parser = parser._subparsers._group_actions[0].choices["train"]
    for action in train_parser._actions:
        if action.option_strings:
            assert action.help, action.option_strings
            assert action.option_strings[-1] in text


def test_python_dash_m_runs_the_command():
    result = subprocess.run(
        [sys.executable, "-m", "tinygrad_ops", "train", "--epochs", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "--epochs" in result.stderr
    help_result = subprocess.run(
        [sys.executable, "-m", "tinygrad_ops", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert help_result.returncode == 0
    assert "train" in help_result.stdout
    assert "graph" in help_result.stdout


def test_the_progress_bar_shows_loss_and_accuracy(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(training, "is_terminal", lambda: True)
    options = [option for option in SMALL if option != "--no-progress"]
    assert cli.main(["train", *options, "--epochs", "1", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "epoch 1/1" in err
    assert "loss=" in err
    assert "acc=" in err


def test_the_graph_command_is_dispatched_to_viz(short_run, tmp_path, capsys):
    _, out = short_run
    picture = tmp_path / "model.svg"
    options = ["graph", "--checkpoint", str(out / "checkpoint.npz"), "--group", "-o", str(picture)]
    assert cli.main(options) == 0
    assert picture.read_text().lstrip().startswith("<?xml")
    assert cli.main(["graph"]) == 2
    assert "--checkpoint" in _one_line_error(capsys)


# -- --resume from files that are not a train checkpoint: one line, never a traceback ----------


@pytest.mark.parametrize(
    ("saved", "words"),
    [
        pytest.param({"0.weight": tg.ones(16, 2)}, "not a checkpoint of", id="state-dict"),
        pytest.param([1, 2, 3], "not a checkpoint of", id="a-list"),
        pytest.param(
            {
                "config": {},
                "epoch": "two",
                "model": {},
                "optimizer": {},
                "scheduler": None,
                "rng": {},
                "history": {},
            },
            "epoch",
            id="epoch-not-a-number",
        ),
    ],
)
def test_resume_from_a_foreign_file_is_one_line(tmp_path, capsys, saved, words):
    tg.save(saved, tmp_path / "checkpoint.npz")
    assert cli.main(["train", *SMALL, "--out", str(tmp_path), "--resume"]) in (1, 2)
    err = _one_line_error(capsys)
    assert words in err
    assert str(tmp_path / "checkpoint.npz") in err


def test_resume_from_a_checkpoint_with_damaged_contents_is_one_line(short_run, tmp_path, capsys):
    _, out = short_run
    checkpoint = tg.load(out / "checkpoint.npz")
    del checkpoint["model"]["0.weight"]
    checkpoint["optimizer"] = {"state": "gone"}
    tg.save(checkpoint, tmp_path / "checkpoint.npz")
    assert cli.main(["train", *SMALL, "--epochs", "3", "--out", str(tmp_path), "--resume"]) == 1
    err = _one_line_error(capsys)
    assert "0.weight" in err
    assert str(tmp_path / "checkpoint.npz") in err


def test_load_state_dict_of_a_non_mapping_is_a_type_error():
    model = tg.nn.Linear(2, 3)
    with pytest.raises(TypeError, match=r"load_state_dict.*list"):
        model.load_state_dict([model.weight, model.bias])


# -- --norm batch and a last batch of one example ----------------------------------------------


def test_batch_norm_drops_a_last_batch_of_one_and_says_so(tmp_path, capsys):
    # moons: 300 training examples = 13 batches of 23 and one of 1.
    options = ["--norm", "batch", "--batch-size", "23", "--epochs", "2"]
    assert cli.main(["train", *SMALL, *options, "--out", str(tmp_path)]) == 0
    assert "last batch of one example" in capsys.readouterr().out
    assert tg.load(tmp_path / "checkpoint.npz")["epoch"] == 2


def test_batch_norm_with_batches_of_one_is_refused_up_front(tmp_path, capsys):
    options = ["--norm", "batch", "--batch-size", "1"]
    assert cli.main(["train", *SMALL, *options, "--out", str(tmp_path / "never")]) == 2
    assert "--batch-size" in _one_line_error(capsys)
    assert not (tmp_path / "never").exists()


def test_no_progress_frames_when_the_output_is_not_a_terminal(tmp_path, capsys):
    options = [option for option in SMALL if option != "--no-progress"]
    assert cli.main(["train", *options, "--epochs", "1", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "loss=" not in captured.err
    assert "epoch   1/1" in captured.out


# -- validation every epoch, the test set once, the best checkpoint ----------------------------


def test_validation_per_epoch_test_once_and_the_best_checkpoint(tmp_path, capsys):
    assert cli.main(["train", *SMALL, "--epochs", "3", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("val loss") == 3
    assert printed.count("test accuracy") == 1
    assert "300 training, 100 validation and 100 test examples" in printed
    history = tg.load(tmp_path / "checkpoint.npz")["history"]
    best = tg.load(tmp_path / "best.npz")
    lowest = int(np.argmin(history["validation_loss"])) + 1
    assert best["epoch"] == lowest
    assert best["history"]["validation_loss"] == history["validation_loss"][:lowest]


def test_the_three_splits_are_disjoint_and_cover_the_data():
    config = {"dataset": "moons", "seed": 0, "test_fraction": 0.2, "validation_fraction": 0.3}
    splits = build.split_data(config)
    parts = [splits.train_x, splits.validation_x, splits.test_x]
    assert [len(part) for part in parts] == [250, 150, 100]
    rows = {tuple(row) for part in parts for row in part.tolist()}
    assert len(rows) == 500


# -- --resume with another --epochs ------------------------------------------------------------


def _config(*extra):
    return options.config_from_args(cli.build_parser("train").parse_args(["train", *SMALL, *extra]))


@pytest.mark.parametrize("scheduler", ["cosine", "step"])
def test_resuming_with_more_epochs_continues_the_longer_schedule(tmp_path, scheduler):
    quiet = {"progress": False, "log": lambda line: None}
    training.train(_config("--epochs", "3", "--scheduler", scheduler), str(tmp_path), **quiet)
    lines = []
    longer = training.prepare(
        _config("--epochs", "9", "--scheduler", scheduler), str(tmp_path), True, lines.append
    )
    fresh = training.prepare(
        _config("--epochs", "9", "--scheduler", scheduler), str(tmp_path / "fresh"), False, print
    )
    for _ in range(3):
        fresh.scheduler.step()
    assert longer.start_epoch == 3
    assert longer.scheduler.get_last_lr() == fresh.scheduler.get_last_lr()
    assert any("continues as a 9-epoch run's would from epoch 3" in line for line in lines)


def test_resuming_with_fewer_epochs_than_done_is_an_error(short_run, capsys):
    _, out = short_run
    before = (out / "checkpoint.npz").read_bytes()
    assert cli.main(["train", *SMALL, "--epochs", "1", "--out", str(out), "--resume"]) == 2
    assert "2 epochs done" in _one_line_error(capsys)
    assert (out / "checkpoint.npz").read_bytes() == before


# -- predict -----------------------------------------------------------------------------------


def test_predict_reports_the_test_accuracy_of_a_run(short_run, capsys):
    _, out = short_run
    capsys.readouterr()
    assert cli.main(["predict", "--checkpoint", str(out / "checkpoint.npz")]) == 0
    printed = capsys.readouterr().out
    assert "test accuracy" in printed
    assert "(100 examples of moons)" in printed


def test_predict_prints_a_class_per_row(short_run, capsys):
    _, out = short_run
    capsys.readouterr()
    rows = ["--row", "0.5,-0.3", "--row", "1.5,-0.4"]
    assert cli.main(["predict", "--checkpoint", str(out / "best.npz"), *rows]) == 0
    printed = capsys.readouterr().out
    assert "row 1: class" in printed
    assert "row 2: class" in printed


def test_predict_with_a_row_of_the_wrong_width_is_one_line(short_run, capsys):
    _, out = short_run
    capsys.readouterr()
    assert cli.main(["predict", "--checkpoint", str(out / "checkpoint.npz"), "--row", "1"]) == 2
    assert "the model takes 2" in _one_line_error(capsys)


def test_the_model_of_a_run_loads_as_in_pytorch(short_run):
    _, out = short_run
    model, checkpoint = cli.load_model(out / "checkpoint.npz")
    again = tg.nn.MLP(2, checkpoint["config"]["hidden"], 2)
    again.load_state_dict(checkpoint["model"])
    again.eval()
    x = tg.Tensor(np.ones((3, 2), dtype=np.float32))
    np.testing.assert_array_equal(model(x).numpy(), again(x).numpy())


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "1e39"])
def test_predict_with_a_row_that_is_not_finite_is_a_usage_error(short_run, capsys, value):
    _, out = short_run
    capsys.readouterr()
    row = f"--row={value},0"
    assert cli.main(["predict", "--checkpoint", str(out / "checkpoint.npz"), row]) == 2
    error = _one_line_error(capsys)
    assert error.startswith("tinygrad-ops predict: error: --row 1:")
    assert "not a finite number" in error


@pytest.mark.parametrize("setting", sorted(checkpoint_module.MODEL_SETTINGS))
def test_predict_on_a_config_lacking_a_setting_names_the_file_and_the_setting(
    short_run, tmp_path, capsys, setting
):
    _, out = short_run
    saved = tg.load(out / "checkpoint.npz")
    del saved["config"][setting]
    path = tmp_path / "old.npz"
    tg.save(saved, path)
    capsys.readouterr()
    assert cli.main(["predict", "--checkpoint", str(path)]) == 1
    error = _one_line_error(capsys)
    assert str(path) in error
    assert "--" + setting.replace("_", "-") in error


def test_predict_on_a_config_with_a_setting_of_the_wrong_type_is_one_line(
    short_run, tmp_path, capsys
):
    _, out = short_run
    saved = tg.load(out / "checkpoint.npz")
    saved["config"]["hidden"] = "16"
    path = tmp_path / "damaged.npz"
    tg.save(saved, path)
    capsys.readouterr()
    assert cli.main(["predict", "--checkpoint", str(path)]) == 1
    error = _one_line_error(capsys)
    assert str(path) in error
    assert "--hidden" in error


def test_a_diverged_run_says_so_and_exits_1(tmp_path, capsys):
    diverging = [*SMALL, "--optimizer", "sgd", "--lr", "1e6", "--epochs", "3"]
    with np.errstate(all="ignore"):  # numpy's overflow warnings on the way to nan
        assert cli.main(["train", *diverging, "--out", str(tmp_path)]) == 1
    error = _one_line_error(capsys)
    assert "the training diverged at epoch 1" in error
    assert "nan" in error
    assert "--lr" in error
    assert not (tmp_path / "checkpoint.npz").exists()


def test_a_run_that_diverges_later_keeps_the_last_finite_epoch(tmp_path, capsys, monkeypatch):
    real_epoch = training.run_epoch
    calls = []

    def diverging_second_epoch(*args):
        calls.append(1)
        loss, accuracy = real_epoch(*args)
        return (float("nan") if len(calls) == 2 else loss), accuracy

    monkeypatch.setattr(training, "run_epoch", diverging_second_epoch)
    assert cli.main(["train", *SMALL, "--epochs", "3", "--out", str(tmp_path)]) == 1
    error = _one_line_error(capsys)
    assert "diverged at epoch 2" in error
    assert str(tmp_path / "checkpoint.npz") in error
    assert tg.load(tmp_path / "checkpoint.npz")["epoch"] == 1


def test_train_help_names_both_models(capsys):
    assert cli.main(["train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "multi-layer perceptron or a small CNN" in text


def test_a_value_starting_with_a_minus_says_how_to_give_it(short_run, capsys):
    _, out = short_run
    capsys.readouterr()
    assert cli.main(["predict", "--checkpoint", str(out / "checkpoint.npz"), "--row", "-1,0"]) == 2
    assert "--option=VALUE" in _one_line_error(capsys)
    assert cli.main(["predict", "--checkpoint", str(out / "checkpoint.npz"), "--row=-1,0"]) == 0
