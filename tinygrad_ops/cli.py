"""The `tinygrad-ops` command (also `python -m tinygrad_ops`).

Subcommands live in one table, `COMMANDS` (at the end of this file): a name, a one-line
help, and either the two functions `add_arguments(parser)` / `run(args)`, or the name of
a module that defines them, imported only when that subcommand is used (so `train` works
without the graph extras installed, and adding a subcommand is one entry).

Every mistake on the command line is one line on stderr and a non-zero exit code (2 for
bad options, 1 for a run that fails, such as an unreadable checkpoint), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from dataclasses import dataclass

from . import data, nn, optim
from . import functional as F  # noqa: N812 (the PyTorch convention)
from .autograd import no_grad
from .serialize import load, save
from .tensor import Tensor

# scikit-learn (data sets), matplotlib (the plot), tqdm (the progress bar) and viz (the
# graph) are imported where they are used: `--help` and option errors stay fast.

# ----------------------------------------------------------------------------------------------
# Parsing and dispatch


@dataclass
class Command:
    """A subcommand: its help line, and where its `add_arguments`/`run` come from."""

    help: str
    add_arguments: object = None  # function(parser), or None when `module` provides it
    run: object = None  # function(args) -> exit code
    module: str | None = None  # imported lazily: must define add_arguments(parser), run(args)


class UsageError(Exception):
    """A bad option found after parsing (checked against files or a checkpoint)."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line ("prog: error: ..."), exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _load_command_module(name, command):
    try:
        return importlib.import_module(command.module)
    except ImportError as error:
        raise UsageError(
            f"the '{name}' command is not available ({error}); install the extras: "
            "pip install 'tinygrad_ops[all]'"
        ) from None


def build_parser(selected=None):
    """The parser with every subcommand; a lazily imported subcommand's module is loaded
    only when it is `selected` (its options are then known)."""
    parser = Parser(
        prog="tinygrad-ops",
        description="A small reverse-mode autograd engine on numpy: train toy networks, "
        "draw compute graphs, benchmark backward schedulers.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, command in COMMANDS.items():
        subparser = subparsers.add_parser(name, help=command.help, description=command.help)
        if command.module is None:
            command.add_arguments(subparser)
            subparser.set_defaults(run=command.run)
        elif name == selected:
            module = _load_command_module(name, command)
            module.add_arguments(subparser)
            subparser.set_defaults(run=module.run)
    return parser


def main(argv=None):
    """Entry point of `tinygrad-ops`; returns the exit code (also used by the tests)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    selected = next((word for word in argv if not word.startswith("-")), None)
    try:
        parser = build_parser(selected)
    except UsageError as error:
        print(f"tinygrad-ops {selected}: error: {error}", file=sys.stderr)
        return 1
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else 2
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.run(args) or 0
    except UsageError as error:
        print(f"tinygrad-ops {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"\ntinygrad-ops {args.command}: interrupted"
            + ("; continue with --resume" if args.command == "train" else ""),
            file=sys.stderr,
        )
        return 130
    except (OSError, ValueError, ImportError) as error:
        # Checkpoint problems (tg.CheckpointError is a ValueError), unwritable folders,
        # missing extras: a run-time failure, reported in one line.
        print(f"tinygrad-ops {args.command}: error: {error}", file=sys.stderr)
        return 1


# ----------------------------------------------------------------------------------------------
# train: options


ACTIVATIONS = ("relu", "tanh", "gelu", "sigmoid")
NORMS = ("none", "layer", "batch", "rms")
OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULERS = ("none", "step", "cosine")
# Tuned for these small data sets with the cosine schedule (PyTorch's Adam default, 1e-3,
# needs many more epochs on digits).
DEFAULT_LR = {"adam": 0.01, "adamw": 0.01, "sgd": 0.1}
CHECKPOINT = "checkpoint.npz"
PLOT = "training.png"
GRAPH = "graph"
# The settings a checkpoint must share with a --resume run: all but --epochs (they define
# the data, the model and the meaning of the optimizer's and the scheduler's state).
RESUME_MUST_MATCH = (
    "dataset",
    "test_fraction",
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
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
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


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows "(default: ...)" after each option's help, except for flags and None."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def add_train_arguments(parser):
    parser.formatter_class = _HelpFormatter
    parser.description = (
        "Train a multi-layer perceptron on a small real data set with tinygrad_ops. Writes "
        "a checkpoint after every epoch (continue with --resume), and at the end prints "
        "the test accuracy and writes a loss/accuracy plot and the model's compute graph "
        "into --out."
    )
    data = parser.add_argument_group("data")
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
        help="share of the data held out for testing (stratified split)",
    )
    model = parser.add_argument_group("model")
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
        default=0.0,
        metavar="P",
        help="dropout probability after each hidden activation (0 for none)",
    )
    training = parser.add_argument_group("training")
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
        "--seed",
        type=_int,
        default=0,
        help="seed of the split, the initial weights, the shuffling and dropout",
    )
    output = parser.add_argument_group("output")
    output.add_argument(
        "--out",
        default=os.path.join("runs", "train"),
        metavar="DIR",
        help=f"folder for {CHECKPOINT}, {PLOT} and the graph (created if needed)",
    )
    output.add_argument(
        "--resume",
        action="store_true",
        help=f"continue from DIR/{CHECKPOINT} (same settings; --epochs may grow)",
    )
    output.add_argument(
        "--graph-format",
        choices=("svg", "png", "pdf", "dot"),
        default="svg",
        help="file format of the compute graph picture",
    )
    output.add_argument(
        "--no-progress", action="store_true", help="no progress bar (the per-epoch lines remain)"
    )


# ----------------------------------------------------------------------------------------------
# train: the run


def config_from_args(args):
    """The settings of a run as a plain dict (stored in the checkpoint)."""
    lr = args.lr if args.lr is not None else DEFAULT_LR[args.optimizer]
    return {
        "dataset": args.dataset,
        "test_fraction": args.test_fraction,
        "hidden": list(args.hidden),
        "activation": args.activation,
        "norm": args.norm,
        "dropout": args.dropout,
        "optimizer": args.optimizer,
        "lr": lr,
        "momentum": args.momentum,
        "weight_decay": args.weight_decay,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "scheduler": args.scheduler,
        "seed": args.seed,
    }


def build_model(in_features, classes, config):
    """Linear -> [norm] -> activation -> [dropout], per hidden size, then a Linear head."""
    activations = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU, "sigmoid": nn.Sigmoid}
    norms = {"layer": nn.LayerNorm, "batch": nn.BatchNorm1d, "rms": nn.RMSNorm}
    layers = []
    width = in_features
    for size in config["hidden"]:
        layers.append(nn.Linear(width, size))
        if config["norm"] != "none":
            layers.append(norms[config["norm"]](size))
        layers.append(activations[config["activation"]]())
        if config["dropout"] > 0:
            layers.append(nn.Dropout(config["dropout"]))
        width = size
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def build_optimizer(parameters, config):
    name = config["optimizer"]
    if name == "sgd":
        return optim.SGD(
            parameters,
            lr=config["lr"],
            momentum=config["momentum"],
            weight_decay=config["weight_decay"],
        )
    optimizer_class = optim.Adam if name == "adam" else optim.AdamW
    return optimizer_class(parameters, lr=config["lr"], weight_decay=config["weight_decay"])


def build_scheduler(optimizer, config):
    if config["scheduler"] == "step":
        return optim.StepLR(optimizer, step_size=max(1, config["epochs"] // 3), gamma=0.1)
    if config["scheduler"] == "cosine":
        return optim.CosineAnnealingLR(optimizer, T_max=config["epochs"])
    return None


def _checkpoint(config, epoch, model, optimizer, scheduler, loader, history):
    """Everything a resumed run needs to continue exactly as an uninterrupted one would:
    the weights, the optimizer's moments, the schedule's position, and the random
    generators' states (initialisation and dropout draw from `nn`'s, shuffling from the
    loader's)."""
    return {
        "config": config,
        "epoch": epoch,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "rng": {"init": nn.get_rng_state(), "loader": loader.state_dict()},
        "history": history,
    }


def _resume(path, config, model, optimizer, scheduler, loader):
    """Restore a run from its checkpoint; returns (epoch, history)."""
    if not os.path.exists(path):
        raise UsageError(f"--resume: no checkpoint at {path} (train without --resume first)")
    checkpoint = load(path)
    for key in RESUME_MUST_MATCH:
        saved = checkpoint["config"].get(key)
        if saved != config[key]:
            option = "--" + key.replace("_", "-")
            raise UsageError(
                f"--resume: the checkpoint {path} was trained with {option} {saved}, not "
                f"{config[key]}; use the same settings (or another --out)"
            )
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    if scheduler is not None and checkpoint["scheduler"] is not None:
        scheduler.load_state_dict(checkpoint["scheduler"])
    nn.set_rng_state(checkpoint["rng"]["init"])
    loader.load_state_dict(checkpoint["rng"]["loader"])
    return int(checkpoint["epoch"]), checkpoint["history"]


def evaluate(model, features, labels):
    """(mean cross-entropy, accuracy) of `model` on a whole data set, in eval mode."""
    was_training = model.training
    model.eval()
    with no_grad():
        logits = model(Tensor(features))
        loss = F.cross_entropy(logits, Tensor(labels)).item()
    model.train(was_training)
    accuracy = float((logits.data.argmax(axis=1) == labels).mean())
    return loss, accuracy


def run_epoch(model, loader, optimizer, progress):
    """One pass over the training data: forward, loss, backward, step, per batch.
    Returns (mean loss, accuracy) over the examples seen."""
    model.train()
    total_loss = 0.0
    total_correct = 0
    seen = 0
    for inputs, targets in loader:
        logits = model(inputs)
        loss = F.cross_entropy(logits, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        count = len(targets.data)
        total_loss += loss.item() * count
        total_correct += int((logits.data.argmax(axis=1) == targets.data).sum())
        seen += count
        progress.batch(loss=f"{total_loss / seen:.4f}", acc=f"{total_correct / seen:.3f}")
    return total_loss / seen, total_correct / seen


def train(config, out, resume=False, progress=True, graph_format="svg", log=print):
    """Run a training as the `train` command does; returns a summary dict."""
    started = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    checkpoint_path = os.path.join(out, CHECKPOINT)
    features, labels = data.load_dataset(config["dataset"], seed=config["seed"])
    train_x, test_x, train_y, test_y = data.train_test_split(
        features, labels, config["test_fraction"], seed=config["seed"]
    )
    classes = int(labels.max()) + 1
    nn.manual_seed(config["seed"])
    model = build_model(features.shape[1], classes, config)
    optimizer = build_optimizer(model.parameters(), config)
    scheduler = build_scheduler(optimizer, config)
    loader = data.DataLoader(
        train_x, train_y, config["batch_size"], shuffle=True, seed=config["seed"]
    )
    history = {"train_loss": [], "train_accuracy": [], "test_loss": [], "test_accuracy": []}
    start_epoch = 0
    if resume:
        start_epoch, history = _resume(checkpoint_path, config, model, optimizer, scheduler, loader)
        log(f"resumed from {checkpoint_path} after epoch {start_epoch}")
    log(
        f"{config['dataset']}: {len(train_y)} training and {len(test_y)} test examples, "
        f"{classes} classes; model {_describe(model)}"
    )
    epochs = config["epochs"]
    progress = Progress(progress, (epochs - start_epoch) * len(loader), log)
    try:
        for epoch in range(start_epoch, epochs):
            train_loss, train_accuracy = run_epoch(model, loader, optimizer, progress)
            if scheduler is not None:
                scheduler.step()
            test_loss, test_accuracy = evaluate(model, test_x, test_y)
            history["train_loss"].append(train_loss)
            history["train_accuracy"].append(train_accuracy)
            history["test_loss"].append(test_loss)
            history["test_accuracy"].append(test_accuracy)
            checkpoint = _checkpoint(
                config, epoch + 1, model, optimizer, scheduler, loader, history
            )
            save(checkpoint, checkpoint_path)
            progress.epoch(
                f"epoch {epoch + 1}/{epochs}",
                f"epoch {epoch + 1:3d}/{epochs}  loss {train_loss:.4f}  "
                f"train acc {100 * train_accuracy:5.1f}%  test loss {test_loss:.4f}  "
                f"test acc {100 * test_accuracy:5.1f}%",
                loss=f"{train_loss:.4f}",
                acc=f"{train_accuracy:.3f}",
                test_acc=f"{test_accuracy:.3f}",
            )
    finally:
        progress.close()
    test_loss, test_accuracy = evaluate(model, test_x, test_y)
    plot_path = os.path.join(out, PLOT)
    plot_history(history, plot_path, title=f"{config['dataset']}: {_describe(model)}")
    graph_path = draw_graph(
        model, train_x[:4], train_y[:4], os.path.join(out, GRAPH), graph_format, log
    )
    elapsed = time.perf_counter() - started
    log(f"test accuracy: {100 * test_accuracy:.2f}% ({len(test_y)} examples), {elapsed:.1f} s")
    log(f"wrote {checkpoint_path}, {plot_path}" + (f", {graph_path}" if graph_path else ""))
    return {
        "test_accuracy": test_accuracy,
        "test_loss": test_loss,
        "history": history,
        "model": model,
        "checkpoint": checkpoint_path,
        "plot": plot_path,
        "graph": graph_path,
        "seconds": elapsed,
    }


def _describe(model):
    layers = []
    for layer in model.children():
        name = type(layer).__name__
        if name == "Linear":
            layers.append(f"Linear({layer.in_features}->{layer.out_features})")
        else:
            layers.append(name)
    return " > ".join(layers)


class Progress:
    """One tqdm bar over every batch of the run, showing the running loss and accuracy,
    with the per-epoch lines printed above it; just the lines with --no-progress (or
    without tqdm installed)."""

    def __init__(self, enabled, total, log):
        self.log = log
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self.bar = tqdm(total=total, unit="batch", dynamic_ncols=True)

    def batch(self, **postfix):
        if self.bar is not None:
            # Drawn at tqdm's own pace (refresh=False): redrawing every batch costs more
            # than the batch.
            self.bar.set_postfix(postfix, refresh=False)
            self.bar.update()

    def epoch(self, description, line, **postfix):
        if self.bar is None:
            self.log(line)
            return
        self.bar.set_description(description, refresh=False)
        self.bar.set_postfix(postfix)
        with self.bar.external_write_mode():
            self.log(line)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def plot_history(history, path, title=""):
    """Write the loss and accuracy curves (train and test, per epoch) to a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9, 3.5))
    FigureCanvasAgg(figure)  # the Agg backend: no display needed
    loss_axes, accuracy_axes = figure.subplots(1, 2)
    epochs = range(1, len(history["train_loss"]) + 1)
    loss_axes.plot(epochs, history["train_loss"], label="train")
    loss_axes.plot(epochs, history["test_loss"], label="test")
    loss_axes.set(xlabel="epoch", ylabel="cross-entropy", title="loss")
    accuracy_axes.plot(epochs, history["train_accuracy"], label="train")
    accuracy_axes.plot(epochs, history["test_accuracy"], label="test")
    accuracy_axes.set(xlabel="epoch", ylabel="accuracy", title="accuracy")
    for axes in (loss_axes, accuracy_axes):
        axes.legend()
        axes.grid(alpha=0.3)
    if title:
        figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    return path


def draw_graph(model, features, labels, path, graph_format, log=print):
    """Render the compute graph of one small forward pass and its loss through viz, if
    installed; returns the written file's path, or None (with a note) when it is not."""
    try:
        viz = importlib.import_module("tinygrad_ops.viz")
    except ImportError as error:
        log(f"note: compute graph not drawn (tinygrad_ops.viz unavailable: {error})")
        return None
    was_training = model.training
    model.eval()  # no dropout and running statistics: the graph of the model as it predicts
    path = f"{path}.{graph_format}"
    try:
        # One box per layer where viz can group the ops by module call.
        with viz.module_calls(model) as calls:
            loss = F.cross_entropy(model(Tensor(features)), Tensor(labels))
        written = viz.render(loss, path, format=graph_format, groups=calls)
    except Exception as error:  # a drawing problem must not lose a finished training
        log(f"note: compute graph not drawn ({type(error).__name__}: {error})")
        return None
    finally:
        model.train(was_training)
    return os.fspath(written) if isinstance(written, (str, os.PathLike)) else path


def run_train(args):
    config = config_from_args(args)
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"--out {args.out} is a file; give a folder")
    train(
        config,
        args.out,
        resume=args.resume,
        progress=not args.no_progress,
        graph_format=args.graph_format,
    )
    return 0


# ----------------------------------------------------------------------------------------------
# The subcommand table: to add a command, add a line (its module defines add_arguments/run).


COMMANDS = {
    "train": Command(
        help="train an MLP on a small real data set (digits or moons)",
        add_arguments=add_train_arguments,
        run=run_train,
    ),
    "graph": Command(
        help="draw the compute graph of an expression or a model",
        module="tinygrad_ops.viz.cli",
    ),
    "bench": Command(
        help="run the benchmarks (this engine vs hand-written numpy and PyTorch)",
        module="tinygrad_ops.bench",
    ),
}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
