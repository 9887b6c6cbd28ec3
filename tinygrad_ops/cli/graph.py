"""`tinygrad-ops graph`: draw the compute graph of a named example or of a saved model.

    tinygrad-ops graph mlp -o mlp.svg
    tinygrad-ops graph rnn --steps 100 --group --depth 0 -o rnn.png
    tinygrad-ops graph softmax --backward --show "shape|grad" -o softmax.svg
    tinygrad-ops graph --checkpoint runs/demo/checkpoint.npz -o model.svg
    tinygrad-ops graph mlp --html walk.html   (the backward walk, to step through in a browser)

The dispatcher (`cli/dispatch.py`) calls `add_arguments(parser)` and `run(args)`.
"""

from __future__ import annotations

import argparse
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
from ..viz.trace import print_tape, trace
from . import checkpoint
from .build import split_data
from .options import UsageError

DOT = ("dot", "gv", ".dot", ".gv")  # DOT text: written without a layout


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
        "--max-nodes",
        type=int,
        default=400,
        help="draw at most this many nodes, those nearest the loss (default 400; at most "
        f"{PICTURE_NODE_LIMIT} in a picture, {PAGE_NODE_LIMIT} in a page)",
    )
    _add_grouping_arguments(parser)
    parser.add_argument(
        "--compact",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="leave out intermediate tensor nodes (the default for a picture that would be "
        "taller than 2,000 px)",
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


def _add_grouping_arguments(parser):
    """--group, --depth, --fold: module calls as boxes, collapsed, long runs folded."""
    parser.add_argument(
        "--group",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one box per layer / module call (or RNN step); the default for a graph of "
        f"more than {AUTO_GROUP_NODES} nodes",
    )
    parser.add_argument(
        "--depth", type=int, default=None, help="with --group: collapse calls below this depth"
    )
    parser.add_argument(
        "--fold",
        type=int,
        default=None,
        help="with --group: of a module called many times, draw the first and last N calls "
        "(default 3; 2 where the graph is grouped by default)",
    )


# Past this many traced nodes a picture is drawn one box per module call, the middle of a
# long run of calls folded (unless --no-group): unrolled, it would be metres long.
AUTO_GROUP_NODES = 200
# Graphviz lays out more nodes than this in minutes, not seconds (DOT text is instant).
PICTURE_NODE_LIMIT = 500
PAGE_NODE_LIMIT = 2000  # a browser opens a page of more nodes slowly
MAX_STEPS = 5000  # a longer rnn example takes long to build and trace before any drawing


def _example_loss(name, args):
    """The example's loss and its `ModuleCalls` (None for the examples without layers)."""
    if name == "rnn":
        if not 1 <= args.steps <= MAX_STEPS:
            raise UsageError(f"--steps {args.steps}: give 1 to {MAX_STEPS}")
        calls = ModuleCalls()
        return examples.rnn(steps=args.steps, calls=calls), calls
    if name == "mlp":
        calls = ModuleCalls()
        return examples.mlp(calls=calls), calls
    return examples.EXAMPLES[name](), None


def _linear_stack(path, state):
    """A bare state_dict's Linear layers, in order, under the state_dict's own names (it
    does not say which activations sat between them: the picture's title says so)."""
    for key, value in state.items():
        if key.endswith("weight") and np.ndim(value) > 2:
            raise UsageError(
                f"--checkpoint {path}: a bare state_dict whose '{key}' is {np.ndim(value)}-D "
                "(a convolution) does not say how its layers connect; give the "
                "checkpoint.npz that `tinygrad-ops train` wrote"
            )
    weights = [(key, value) for key, value in state.items() if key.endswith("weight")]
    weights = [(key, value) for key, value in weights if np.ndim(value) == 2]
    if not weights:
        raise UsageError(
            f"--checkpoint {path}: no Linear weights (2-D '*.weight' entries) found among "
            f"its keys {sorted(state)[:8]}"
        )
    layers, names = [], []
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
    return model


def _checkpoint_loss(path):
    """The loss of one small forward pass of the model saved at `path`, its calls and the
    picture's title. A run's checkpoint is rebuilt as `predict` rebuilds it (any model
    `train` makes) and fed four of its test rows; a bare state_dict four random rows."""
    saved = tg.load(path)
    if isinstance(saved, dict) and "model" in saved and "config" in saved:
        model, run_checkpoint = checkpoint.load_model(path)
        splits = split_data(run_checkpoint["config"])
        features = tg.Tensor(np.asarray(splits.test_x[:4], dtype=np.float32))
        labels = tg.Tensor(np.asarray(splits.test_y[:4]), dtype=np.int64)
        features.name = "x (4 test rows)"
        title = f"{Path(path).name}: {type(model).__name__}"
    elif isinstance(saved, dict):
        model = _linear_stack(path, saved)
        in_features, classes = model[0].in_features, model[len(model) - 1].out_features
        features = tg.randn(4, in_features, seed=0)
        labels = tg.Tensor(np.arange(4) % classes, dtype=np.int64)
        features.name = "x (random)"
        title = f"{Path(path).name} (Linear layers only)"
    else:
        raise UsageError(f"--checkpoint {path}: expected a state_dict, got {type(saved)}")
    model.eval()
    with module_calls(model) as calls:
        loss = F.cross_entropy(model(features), labels)
    return loss, calls, title


def _groups(args, loss, calls):
    """(calls, depth, fold) to group by: --group, --no-group, or by default past
    AUTO_GROUP_NODES, then with each outermost call as one node and the first and last two
    calls of a run drawn (unless --depth, --fold), so that the picture fits 2,000 px."""
    fold = 3 if args.fold is None else args.fold
    if calls is None or args.group is False:
        return None, args.depth, fold
    if args.group:
        return calls, args.depth, fold
    size = len(trace(loss))
    if size <= AUTO_GROUP_NODES:
        return None, args.depth, fold
    depth = 0 if args.depth is None else args.depth
    fold = 2 if args.fold is None else args.fold
    print(
        f"note: the graph has {size} nodes: drawn with module calls {depth} deep as one node "
        "each and the middle of a long run of calls folded (--no-group draws every op)"
    )
    return calls, depth, fold


def _check_size(args):
    """Refuse a drawing that would not finish promptly, saying why and what to do."""
    if args.max_nodes < 1:
        raise UsageError(f"--max-nodes {args.max_nodes}: give at least 1")
    if args.html is not None and args.max_nodes > PAGE_NODE_LIMIT:
        raise UsageError(
            f"--max-nodes {args.max_nodes}: a browser opens a page of more than "
            f"{PAGE_NODE_LIMIT} nodes slowly; draw fewer (--group, --depth)"
        )
    pictured = args.html is None and (args.format or Path(args.output).suffix) not in DOT
    if pictured and args.max_nodes > PICTURE_NODE_LIMIT:
        raise UsageError(
            f"--max-nodes {args.max_nodes}: Graphviz takes minutes to lay out more than "
            f"{PICTURE_NODE_LIMIT} nodes; write DOT text (-o graph.dot), or draw fewer "
            "(--group, --depth)"
        )


def run(args):
    """Draw the chosen graph to `args.output`; returns the exit code."""
    if (args.example is None) == (args.checkpoint is None):
        raise UsageError("name an example (mlp, rnn, softmax, layernorm) or give --checkpoint")
    _check_size(args)
    if args.checkpoint is not None:
        loss, calls, title = _checkpoint_loss(args.checkpoint)
    else:
        loss, calls = _example_loss(args.example, args)
        title = args.example
    calls, depth, fold = _groups(args, loss, calls)
    if args.print:
        print_tape(loss)
    if args.html is not None:
        page = html(
            loss,
            args.html,
            scheduler=args.scheduler,
            groups=calls,
            depth=depth,
            fold=fold if fold > 0 else None,
            max_nodes=args.max_nodes,
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
            depth=depth,
            fold=fold if fold > 0 else None,
            compact="auto" if args.compact is None else args.compact,
            title=title,
        )
    except GraphvizNotFoundError as error:
        print(f"tinygrad-ops graph: {error}", file=sys.stderr)
        return 1
    print(f"wrote {written}")
    return 0
