"""`tinygrad-ops graph`: draw the compute graph of a named example or of a saved model.

    tinygrad-ops graph mlp -o mlp.svg
    tinygrad-ops graph rnn --steps 100 --group --depth 0 -o rnn.png
    tinygrad-ops graph softmax --backward --show "shape|grad" -o softmax.svg
    tinygrad-ops graph --checkpoint runs/demo/checkpoint.npz -o model.svg
    tinygrad-ops graph mlp --html walk.html   (the backward walk, to step through in a browser)

The dispatcher (`cli/dispatch.py`) calls `add_arguments(parser)` and `run(args)`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import tinygrad_ops as tg

from .. import functional as F  # noqa: N812 (the PyTorch convention)
from .. import nn
from ..viz import examples
from ..viz.files import FORMATS, GraphvizNotFoundError, render
from ..viz.groups import ModuleCalls, module_calls
from ..viz.html import html
from ..viz.record import backward as recorded_backward
from ..viz.trace import print_tape
from .options import UsageError
from .train import build_model


def add_arguments(parser):
    """The options of `tinygrad-ops graph`."""
    parser.add_argument(
        "example",
        nargs="?",
        choices=sorted(examples.EXAMPLES),
        help="a named example graph (or give --checkpoint instead)",
    )
    parser.add_argument(
        "--checkpoint",
        metavar="PATH",
        help="draw the forward pass (and loss) of a model saved by `tinygrad-ops train` "
        "(checkpoint.npz) or a tg.save'd state_dict of Linear layers",
    )
    parser.add_argument(
        "-o",
        "--output",
        default="graph.svg",
        metavar="PATH",
        help="the file to write (default: graph.svg)",
    )
    parser.add_argument(
        "--format", choices=FORMATS, help="svg, png, pdf or dot (default: from --output)"
    )
    parser.add_argument(
        "--show",
        default="shape",
        help="what tensor nodes show: shape, value, grad, joined by '|' (default: shape)",
    )
    parser.add_argument(
        "--rankdir",
        choices=("auto", "LR", "TB"),
        default="auto",
        help="layout direction: LR (left to right), TB (top to bottom), or auto: TB for a "
        "graph much deeper than wide, so that it reads without zooming (default: auto)",
    )
    parser.add_argument(
        "--backward",
        action="store_true",
        help="run backward and number the ops in the order it visits them, with the "
        "gradient on every edge",
    )
    parser.add_argument(
        "--scheduler", default=None, help="the backward scheduler to record (with --backward)"
    )
    parser.add_argument(
        "--max-nodes", type=int, default=400, help="draw at most this many nodes (default 400)"
    )
    parser.add_argument(
        "--group", action="store_true", help="one box per layer / module call (or RNN step)"
    )
    parser.add_argument(
        "--depth", type=int, default=None, help="with --group: collapse calls below this depth"
    )
    parser.add_argument(
        "--fold",
        type=int,
        default=3,
        help="with --group: of a module called many times, draw the first and last N calls",
    )
    parser.add_argument(
        "--compact", action="store_true", help="leave out intermediate tensor nodes"
    )
    parser.add_argument("--steps", type=int, default=4, help="time steps of the rnn example")
    parser.add_argument(
        "--print", action="store_true", help="also print the tape as text (execution/backward)"
    )
    parser.add_argument(
        "--html",
        metavar="PATH",
        help="instead of a picture, run backward (--scheduler) and write a self-contained "
        "page that steps through it (with --group/--depth: module calls as one node each)",
    )


def _example_loss(name, args, calls):
    if name == "rnn":
        if args.steps < 1:
            raise UsageError(f"--steps {args.steps}: give at least 1")
        return examples.rnn(steps=args.steps, calls=calls)
    if name == "mlp":
        return examples.mlp(calls=calls)
    return examples.EXAMPLES[name]()


def _checkpoint_loss(path, group):
    """The loss of one small forward pass of the model saved at `path`, and its calls."""
    saved = tg.load(path)
    if isinstance(saved, dict) and "model" in saved and "config" in saved:
        state, config = saved["model"], saved["config"]
    elif isinstance(saved, dict):
        state, config = saved, None
    else:
        raise UsageError(f"--checkpoint {path}: expected a state_dict, got {type(saved)}")
    weights = [
        (key, value)
        for key, value in state.items()
        if key.endswith("weight") and np.ndim(value) == 2
    ]
    if not weights:
        raise UsageError(
            f"--checkpoint {path}: no Linear weights (2-D '*.weight' entries) found among "
            f"its keys {sorted(state)[:8]}"
        )
    in_features = int(np.shape(weights[0][1])[1])
    classes = int(np.shape(weights[-1][1])[0])
    if config is not None:
        model = build_model(in_features, classes, config)
    else:
        # A bare state_dict does not say which activations sat between the layers: draw
        # the Linear layers it holds, in order (the picture's title says so).
        layers = []
        names = []
        for key, weight in weights:
            prefix = key[: -len("weight")]
            bias = state.get(prefix + "bias")
            rows, columns = np.shape(weight)
            layer = nn.Linear(int(columns), int(rows), bias=bias is not None)
            layer.weight.data = np.asarray(weight, dtype=np.float32)
            names.append((layer.weight, key))
            if bias is not None:
                layer.bias.data = np.asarray(bias, dtype=np.float32)
                names.append((layer.bias, prefix + "bias"))
            layers.append(layer)
        model = nn.Sequential(*layers)
        for parameter, name in names:
            parameter.name = name  # the checkpoint's own names, not the Sequential's
    if config is not None:
        model.load_state_dict(state)
    model.eval()
    features = tg.randn(4, in_features, seed=0)
    features.name = "x (random)"
    labels = tg.Tensor(np.arange(4) % classes, dtype=np.int64)
    if group:
        with module_calls(model) as calls:
            loss = F.cross_entropy(model(features), labels)
    else:
        calls = None
        loss = F.cross_entropy(model(features), labels)
    title = f"{Path(path).name}" + ("" if config else " (Linear layers only)")
    return loss, calls, title


def run(args):
    """Draw the chosen graph to `args.output`; returns the exit code."""
    if (args.example is None) == (args.checkpoint is None):
        raise UsageError("name an example (mlp, rnn, softmax, layernorm) or give --checkpoint")
    if args.max_nodes is not None and args.max_nodes < 1:
        raise UsageError(f"--max-nodes {args.max_nodes}: give at least 1")
    if args.checkpoint is not None:
        loss, calls, title = _checkpoint_loss(args.checkpoint, args.group)
    else:
        calls = ModuleCalls() if args.group else None
        loss = _example_loss(args.example, args, calls)
        title = args.example
    if args.print:
        print_tape(loss)
    if args.html is not None:
        page = html(
            loss,
            args.html,
            scheduler=args.scheduler,
            groups=calls,
            depth=args.depth,
            fold=args.fold if args.fold and args.fold > 0 else None,
        )
        print(f"wrote {page.path} ({len(page.record)} backward steps)")
        return 0
    record = recorded_backward(loss, scheduler=args.scheduler) if args.backward else None
    try:
        written = render(
            loss,
            args.output,
            format=args.format,
            show=args.show,
            rankdir=args.rankdir,
            max_nodes=args.max_nodes,
            backward=record,
            groups=calls,
            depth=args.depth,
            fold=args.fold,
            compact=args.compact,
            title=title,
        )
    except GraphvizNotFoundError as error:
        print(f"tinygrad-ops graph: {error}", file=sys.stderr)
        return 1
    print(f"wrote {written}")
    return 0
