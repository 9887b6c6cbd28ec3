"""`tinygrad-ops train`: a multi-layer perceptron trained on a small real data set.

The data is split three ways: training, validation (measured after every epoch, to watch
the run and pick the best epoch) and a held-out test set, measured once at the end. After
every epoch the run is written to `checkpoint.npz` (continue with `--resume`), and to
`best.npz` when the validation loss is the lowest so far. What the run prints and draws is
in `report`.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import dataclass

from .. import data, nn
from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..jit import compile as compile_function
from ..mode import no_grad
from ..serialize import save
from ..tensor import Tensor
from . import checkpoint as run_checkpoint
from .build import Splits, build_model, build_optimizer, build_scheduler, split_data
from .options import BEST, CHECKPOINT, GRAPH, PLOT, RunError, UsageError, config_from_args
from .options import add_train_arguments as add_arguments
from .report import Progress, describe, draw_graph, is_terminal, plot_history
from .svg_plot import plot_history_svg

# scikit-learn (data sets), matplotlib (the PNG plot), tqdm (the progress bar) and viz (the
# graph) are imported where they are used: `--help` and option errors stay fast.

__all__ = [
    "add_arguments",
    "build_model",
    "config_from_args",
    "evaluate",
    "run",
    "split_data",
    "train",
]


def evaluate(model, features, labels, forward=None):
    """(mean cross-entropy, accuracy) of `model` on a whole data set, in eval mode;
    `forward` (from `make_forward`) runs the pass, compiled or not."""
    was_training = model.training
    model.eval()
    with no_grad():
        logits, loss = (forward or make_forward(model, False))(Tensor(features), Tensor(labels))
        loss = loss.item()
    model.train(was_training)
    accuracy = float((logits.data.argmax(axis=1) == labels).mean())
    return loss, accuracy


def make_forward(model, compiled=True):
    """The evaluation pass over a data set: (logits, mean cross-entropy). With `compiled`,
    tg.compile captures it at the first epoch's validation and replays it at the others
    (eval mode and no_grad, set by `evaluate` around the call, are among its guards)."""

    def forward(features, labels):
        logits = model(features)
        return logits, F.cross_entropy(logits, labels)

    return compile_function(forward) if compiled else forward


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


@dataclass
class TrainingRun:
    """What one training run works on, from its settings to the epoch it has reached."""

    config: dict
    out: str
    splits: Splits
    model: object
    optimizer: object
    scheduler: object
    loader: object
    history: dict
    start_epoch: int = 0

    @property
    def checkpoint_path(self):
        return os.path.join(self.out, CHECKPOINT)

    @property
    def best_path(self):
        return os.path.join(self.out, BEST)


def _loader(config, splits, log):
    # BatchNorm1d cannot train on one example: leave out a last batch of one (PyTorch's
    # DataLoader(drop_last=True), for just the case that needs it).
    count, size = len(splits.train_y), config["batch_size"]
    drop_last = config["norm"] == "batch" and count % size == 1
    if drop_last:
        log(
            f"note: --norm batch cannot train on the last batch of one example "
            f"({count} = {count // size} x {size} + 1): it is left out of each epoch"
        )
    return data.DataLoader(
        splits.train_x, splits.train_y, size, shuffle=True, seed=config["seed"], drop_last=drop_last
    )


def prepare(config, out, resume=False, log=print):
    """Build (or, with `resume`, restore) the run `config` describes, writing into `out`."""
    if config["norm"] == "batch" and config["batch_size"] == 1:
        raise UsageError(
            "--norm batch needs --batch-size 2 or more: BatchNorm1d's statistics over one "
            "example are undefined"
        )
    splits = split_data(config)
    os.makedirs(out, exist_ok=True)
    nn.manual_seed(config["seed"])
    model = build_model(splits.train_x.shape[1], splits.classes, config)
    optimizer = build_optimizer(model.parameters(), config)
    training = TrainingRun(
        config=config,
        out=out,
        splits=splits,
        model=model,
        optimizer=optimizer,
        scheduler=build_scheduler(optimizer, config),
        loader=_loader(config, splits, log),
        history={key: [] for key in HISTORY},
    )
    if resume:
        _resume(training, log)
    log(
        f"{config['dataset']}: {len(splits.train_y)} training, {len(splits.validation_y)} "
        f"validation and {len(splits.test_y)} test examples, {splits.classes} classes; "
        f"model {describe(model)}"
    )
    return training


HISTORY = ("train_loss", "train_accuracy", "validation_loss", "validation_accuracy")


def _resume(training, log):
    epochs = training.config["epochs"]
    checkpoint = run_checkpoint.resume(
        training.checkpoint_path,
        training.config,
        training.model,
        training.optimizer,
        training.scheduler,
        training.loader,
    )
    done, planned = checkpoint["epoch"], checkpoint["config"].get("epochs")
    if epochs <= done:
        raise UsageError(
            f"--resume: the checkpoint {training.checkpoint_path} has {done} epochs done; "
            f"--epochs {epochs} leaves nothing to train (give more than {done})"
        )
    training.start_epoch, training.history = done, checkpoint["history"]
    log(f"resumed from {training.checkpoint_path} after epoch {done}")
    if training.scheduler is not None and planned != epochs:
        # The schedule is a function of the epoch and the run's length: it continues as an
        # `epochs`-long run's would from here (a jump in lr where the length changed).
        log(
            f"note: the run was planned for {planned} epochs; its {training.config['scheduler']} "
            f"schedule now continues as a {epochs}-epoch run's would from epoch {done} "
            f"(lr {training.scheduler.get_last_lr()[0]:.3g})"
        )


def train_epochs(training, progress=True, log=print, compiled=True):
    """Train from the run's epoch to its last, writing the checkpoints after each;
    `compiled` runs the steps under tg.compile (the same numbers as eager)."""
    epochs = training.config["epochs"]
    best = min(training.history["validation_loss"], default=math.inf)
    if not os.path.exists(training.best_path):
        best = math.inf
    progress = Progress(progress, (epochs - training.start_epoch) * len(training.loader), log)
    step = make_step(training.model, training.optimizer, compiled)
    forward = make_forward(training.model, compiled)
    try:
        for epoch in range(training.start_epoch, epochs):
            train_loss, train_accuracy = run_epoch(training.model, training.loader, step, progress)
            if training.scheduler is not None:
                training.scheduler.step()
            splits = training.splits
            validation = evaluate(training.model, splits.validation_x, splits.validation_y, forward)
            _check_finite(training, epoch + 1, train_loss, validation[0])
            for key, value in zip(HISTORY, (train_loss, train_accuracy, *validation)):
                training.history[key].append(value)
            checkpoint = run_checkpoint.make(
                training.config,
                epoch + 1,
                training.model,
                training.optimizer,
                training.scheduler,
                training.loader,
                training.history,
            )
            save(checkpoint, training.checkpoint_path)
            if validation[0] < best:
                best = validation[0]
                save(checkpoint, training.best_path)
            progress.epoch(epoch + 1, epochs, training.history)
    finally:
        progress.close()


def _check_finite(training, epoch, train_loss, validation_loss):
    """Stop a run whose loss is no longer a finite number, before it writes a checkpoint."""
    if math.isfinite(train_loss) and math.isfinite(validation_loss):
        return
    kept = (
        f"the last finite epoch is in {training.checkpoint_path}"
        if os.path.exists(training.checkpoint_path)
        else "no checkpoint was written"
    )
    raise RunError(
        f"the training diverged at epoch {epoch}: the training loss is {train_loss:.4g} and "
        f"the validation loss {validation_loss:.4g}; {kept}. Try a smaller --lr (it was "
        f"{training.config['lr']:g})"
    )


def finish(training, graph_format="svg", log=print, plot_format="svg"):
    """Measure the held-out test set once (last and best epoch), write the plot (SVG, or
    PNG through matplotlib) and the graph; returns the summary."""
    splits = training.splits
    test_loss, test_accuracy = evaluate(training.model, splits.test_x, splits.test_y)
    best_model, best_checkpoint = run_checkpoint.load_model(training.best_path)
    best_epoch = best_checkpoint["epoch"]
    _, best_accuracy = evaluate(best_model, splits.test_x, splits.test_y)
    plot_path = os.path.join(training.out, f"{PLOT}.{plot_format}")
    title = f"{training.config['dataset']}: {describe(training.model)}"
    draw = plot_history if plot_format == "png" else plot_history_svg
    draw(training.history, plot_path, title=title)
    graph_path = draw_graph(
        training.model,
        splits.train_x[:4],
        splits.train_y[:4],
        os.path.join(training.out, GRAPH),
        graph_format,
        log,
    )
    log(
        f"test accuracy: {100 * test_accuracy:.2f}% after the last epoch, "
        f"{100 * best_accuracy:.2f}% at the best (epoch {best_epoch}, lowest validation loss); "
        f"{len(splits.test_y)} held-out examples"
    )
    return {
        "test_accuracy": test_accuracy,
        "test_loss": test_loss,
        "best_test_accuracy": best_accuracy,
        "best_epoch": best_epoch,
        "history": training.history,
        "model": training.model,
        "checkpoint": training.checkpoint_path,
        "best": training.best_path,
        "plot": plot_path,
        "graph": graph_path,
    }


def train(
    config,
    out,
    resume=False,
    progress=True,
    graph_format="svg",
    log=print,
    compiled=True,
    plot_format="svg",
):
    """Run a training as the `train` command does; returns a summary dict. `compiled`
    runs the steps under tg.compile (the same numbers as eager)."""
    started = time.perf_counter()
    training = prepare(config, out, resume=resume, log=log)
    train_epochs(training, progress=progress, log=log, compiled=compiled)
    summary = finish(training, graph_format=graph_format, log=log, plot_format=plot_format)
    summary["seconds"] = time.perf_counter() - started
    written = [summary["checkpoint"], summary["best"], summary["plot"], summary["graph"]]
    log(f"wrote {', '.join(filter(None, written))} ({summary['seconds']:.1f} s)")
    return summary


def run(args):
    """Run `tinygrad-ops train` with the parsed options; returns the exit code."""
    config = config_from_args(args)
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"--out {args.out} is a file; give a folder")
    with blas_threads_for(config):
        train(
            config,
            args.out,
            resume=args.resume,
            # Progress frames only on a terminal: piped or logged output gets the epoch lines.
            progress=not args.no_progress and is_terminal(),
            graph_format=args.graph_format,
            compiled=not args.no_compile,
            plot_format=args.plot_format,
        )
    return 0


def blas_threads_for(config):
    """One BLAS thread while a model trains (`config` names it; every model gets one).

    The products of these small models are large enough for OpenBLAS to start a second
    thread, which then competes with the Python thread for the cores. On our shared
    2-core machine a 20-epoch digits run of the CNN took 74.7 s with OpenBLAS's default
    2 threads and 16.6 s with 1; for the MLP each validation pass (359 x 64 by 64 x 128)
    took 8-28 ms with 2 threads and 0.5 ms with 1, and its 20 training epochs 0.78-1.77 s
    against 0.32-0.44 s (`benchmarks`-style interleaved runs, load average 3-4).
    threadpoolctl comes with scikit-learn (the data sets); without it nothing changes."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn brings it
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
