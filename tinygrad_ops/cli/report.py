"""What a training run shows: its progress lines, the loss/accuracy plot and the graph."""

from __future__ import annotations

import importlib
import os
import sys

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..tensor import Tensor


def describe(model):
    """The layers of a model in one line: "Linear(64->128) > ReLU > Linear(128->10)"."""
    layers = []
    for layer in model.children():
        name = type(layer).__name__
        if name == "Linear":
            layers.append(f"Linear({layer.in_features}->{layer.out_features})")
        else:
            layers.append(name)
    return " > ".join(layers)


def is_terminal():
    """Whether both stdout and stderr are terminals: only then are progress frames drawn
    (piped into a file or `| cat`, they would interleave with the epoch lines)."""
    return sys.stdout.isatty() and sys.stderr.isatty()


def epoch_line(epoch, epochs, history):
    """The line printed after an epoch: training and validation loss and accuracy."""
    return (
        f"epoch {epoch:3d}/{epochs}  loss {history['train_loss'][-1]:.4f}  "
        f"train acc {100 * history['train_accuracy'][-1]:5.1f}%  "
        f"val loss {history['validation_loss'][-1]:.4f}  "
        f"val acc {100 * history['validation_accuracy'][-1]:5.1f}%"
    )


class Progress:
    """One tqdm bar over every batch of the run, showing the running loss and accuracy,
    with the per-epoch lines printed above it; just the lines with --no-progress, when
    the output is not a terminal, or without tqdm installed."""

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

    def epoch(self, epoch, epochs, history):
        line = epoch_line(epoch, epochs, history)
        if self.bar is None:
            self.log(line)
            return
        self.bar.set_description(f"epoch {epoch}/{epochs}", refresh=False)
        self.bar.set_postfix(
            loss=f"{history['train_loss'][-1]:.4f}",
            acc=f"{history['train_accuracy'][-1]:.3f}",
            val_acc=f"{history['validation_accuracy'][-1]:.3f}",
        )
        with self.bar.external_write_mode():
            self.log(line)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def plot_history(history, path, title=""):
    """Write the loss and accuracy curves (training and validation, per epoch) to a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9, 3.5))
    FigureCanvasAgg(figure)  # the Agg backend: no display needed
    loss_axes, accuracy_axes = figure.subplots(1, 2)
    epochs = range(1, len(history["train_loss"]) + 1)
    loss_axes.plot(epochs, history["train_loss"], label="train")
    loss_axes.plot(epochs, history["validation_loss"], label="validation")
    loss_axes.set(xlabel="epoch", ylabel="cross-entropy", title="loss")
    accuracy_axes.plot(epochs, history["train_accuracy"], label="train")
    accuracy_axes.plot(epochs, history["validation_accuracy"], label="validation")
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
