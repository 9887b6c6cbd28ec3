"""`tinygrad-ops train`: a multi-layer perceptron trained on a small real data set.

A checkpoint is written after every epoch; `--resume` continues from it and ends where an
uninterrupted run would. What the run prints and draws is in `report`.
"""

from __future__ import annotations

import os
import time

from .. import data, nn, optim
from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..autograd import no_grad
from ..jit import compile as compile_function
from ..serialize import save
from ..tensor import Tensor
from . import checkpoint as run_checkpoint
from .options import CHECKPOINT, GRAPH, PLOT, UsageError, config_from_args
from .options import add_train_arguments as add_arguments
from .report import Progress, describe, draw_graph, plot_history

# scikit-learn (data sets), matplotlib (the plot), tqdm (the progress bar) and viz (the
# graph) are imported where they are used: `--help` and option errors stay fast.

__all__ = ["add_arguments", "build_model", "config_from_args", "run", "train"]


def build_model(in_features, classes, config):
    """The model a run's settings describe: `nn.SmallCNN` over 8x8 images for --model cnn,
    else the `nn.MLP` (hidden sizes, activation, norm, dropout)."""
    if config.get("model", "mlp") == "cnn":
        return nn.SmallCNN((1, 8, 8), classes, dropout=config["dropout"])
    return nn.MLP(
        in_features,
        config["hidden"],
        classes,
        activation=config["activation"],
        norm=config["norm"],
        dropout=config["dropout"],
    )


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


def make_step(model, optimizer, compiled=True):
    """One training step on a batch: forward, loss, backward, update; returns (loss, logits).
    With `compiled`, tg.compile captures it on the first batch and replays it after."""

    def step(inputs, targets):
        logits = model(inputs)
        loss = F.cross_entropy(logits, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss, logits

    return compile_function(step) if compiled else step


def run_epoch(model, loader, step, progress):
    """One pass over the training data: `step` per batch. Returns (mean loss, accuracy)
    over the examples seen."""
    model.train()
    total_loss = 0.0
    total_correct = 0
    seen = 0
    for inputs, targets in loader:
        loss, logits = step(inputs, targets)
        count = len(targets.data)
        total_loss += loss.item() * count
        total_correct += int((logits.data.argmax(axis=1) == targets.data).sum())
        seen += count
        progress.batch(loss=f"{total_loss / seen:.4f}", acc=f"{total_correct / seen:.3f}")
    return total_loss / seen, total_correct / seen


def train(config, out, resume=False, progress=True, graph_format="svg", log=print, compiled=True):
    """Run a training as the `train` command does; returns a summary dict. `compiled`
    runs the steps under tg.compile (the same numbers as eager)."""
    started = time.perf_counter()
    if config["norm"] == "batch" and config["batch_size"] == 1:
        raise UsageError(
            "--norm batch needs --batch-size 2 or more: BatchNorm1d's statistics over one "
            "example are undefined"
        )
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
    # BatchNorm1d cannot train on one example: leave out a last batch of one (PyTorch's
    # DataLoader(drop_last=True), for just the case that needs it).
    drop_last = config["norm"] == "batch" and len(train_y) % config["batch_size"] == 1
    if drop_last:
        log(
            f"note: --norm batch cannot train on the last batch of one example "
            f"({len(train_y)} = {len(train_y) // config['batch_size']} x "
            f"{config['batch_size']} + 1): it is left out of each epoch"
        )
    loader = data.DataLoader(
        train_x,
        train_y,
        config["batch_size"],
        shuffle=True,
        seed=config["seed"],
        drop_last=drop_last,
    )
    history = {"train_loss": [], "train_accuracy": [], "test_loss": [], "test_accuracy": []}
    start_epoch = 0
    if resume:
        start_epoch, history = run_checkpoint.resume(
            checkpoint_path, config, model, optimizer, scheduler, loader
        )
        log(f"resumed from {checkpoint_path} after epoch {start_epoch}")
    log(
        f"{config['dataset']}: {len(train_y)} training and {len(test_y)} test examples, "
        f"{classes} classes; model {describe(model)}"
    )
    epochs = config["epochs"]
    progress = Progress(progress, (epochs - start_epoch) * len(loader), log)
    step = make_step(model, optimizer, compiled)
    try:
        for epoch in range(start_epoch, epochs):
            train_loss, train_accuracy = run_epoch(model, loader, step, progress)
            if scheduler is not None:
                scheduler.step()
            test_loss, test_accuracy = evaluate(model, test_x, test_y)
            history["train_loss"].append(train_loss)
            history["train_accuracy"].append(train_accuracy)
            history["test_loss"].append(test_loss)
            history["test_accuracy"].append(test_accuracy)
            checkpoint = run_checkpoint.make(
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
    plot_history(history, plot_path, title=f"{config['dataset']}: {describe(model)}")
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


def run(args):
    """Run `tinygrad-ops train` with the parsed options; returns the exit code."""
    config = config_from_args(args)
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"--out {args.out} is a file; give a folder")
    train(
        config,
        args.out,
        resume=args.resume,
        progress=not args.no_progress,
        graph_format=args.graph_format,
        compiled=not args.no_compile,
    )
    return 0
