"""`tinygrad-ops predict`: use a trained run: its accuracy on a split, or predictions for rows.

tinygrad-ops predict --checkpoint runs/demo/checkpoint.npz            # the held-out test set
tinygrad-ops predict --checkpoint runs/demo/best.npz --split validation
tinygrad-ops predict --checkpoint runs/moons/checkpoint.npz --row 0.5,-0.3 --row 1.5,-0.4
"""

from __future__ import annotations

import math

import numpy as np

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from ..mode import no_grad
from ..tensor import Tensor
from .build import split_data
from .checkpoint import load_model
from .options import UsageError
from .train import evaluate

SPLITS = ("test", "validation", "train")
FLOAT32_MAX = float(np.finfo(np.float32).max)


def add_arguments(parser):
    """The options of `tinygrad-ops predict`."""
    parser.add_argument(
        "--checkpoint",
        required=True,
        metavar="PATH",
        help="a run's checkpoint.npz or best.npz, written by `tinygrad-ops train`",
    )
    parser.add_argument(
        "--split",
        choices=SPLITS,
        default="test",
        help="which part of the run's data set to measure (default: the held-out test set)",
    )
    parser.add_argument(
        "--row",
        action="append",
        metavar="V,V,...",
        help="predict the class of one example given as comma-separated features "
        "(repeat for more rows); instead of measuring a split",
    )


def _parse_row(number, text, width):
    try:
        values = [float(value) for value in text.split(",")]
    except ValueError:
        raise UsageError(f"--row {number}: {text!r} is not comma-separated numbers") from None
    if len(values) != width:
        raise UsageError(f"--row {number}: {len(values)} values; the model takes {width}")
    # The model computes in float32: a float64 beyond its range would be inf there.
    if not all(math.isfinite(value) and abs(value) <= FLOAT32_MAX for value in values):
        raise UsageError(
            f"--row {number}: {text!r} holds a value that is not a finite number "
            f"(nan, inf, or beyond float32's range of ±{FLOAT32_MAX:.3g}); give finite features"
        )
    return values


def predict_rows(model, rows):
    """(class, probability) of each row (a list of feature lists) under `model`.

    >>> import tinygrad_ops as tg
    >>> tg.manual_seed(0)
    >>> [label for label, _ in predict_rows(tg.nn.MLP(2, [4], 3), [[0.0, 1.0], [1.0, 0.0]])]
    [2, 2]
    """
    with no_grad():
        probabilities = F.softmax(model(Tensor(np.asarray(rows, dtype=np.float32))), axis=-1)
    best = probabilities.data.argmax(axis=1)
    return [(int(label), float(probabilities.data[i, label])) for i, label in enumerate(best)]


def run(args):
    """Measure a split or predict rows with the run at `args.checkpoint`; the exit code."""
    model, checkpoint = load_model(args.checkpoint)
    splits = split_data(checkpoint["config"])
    width = splits.train_x.shape[1]
    where = f"{args.checkpoint} (epoch {checkpoint['epoch']})"
    if args.row:
        rows = [_parse_row(number, text, width) for number, text in enumerate(args.row, 1)]
        print(f"{where}: predictions")
        for number, (label, probability) in enumerate(predict_rows(model, rows), 1):
            print(f"row {number}: class {label}  (probability {probability:.3f})")
        return 0
    features = getattr(splits, f"{args.split}_x")
    labels = getattr(splits, f"{args.split}_y")
    loss, accuracy = evaluate(model, features, labels)
    print(
        f"{where}: {args.split} accuracy {100 * accuracy:.2f}% ({len(labels)} examples of "
        f"{checkpoint['config']['dataset']}), loss {loss:.4f}"
    )
    return 0
