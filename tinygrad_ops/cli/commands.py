"""The subcommand table of `tinygrad-ops`: to add a command, add one entry to `COMMANDS`.

Each entry names a module that defines `add_arguments(parser)` and `run(args)` (returning
the exit code). The module is imported only when its command is used, so `--help` stays
fast and a command whose extras are missing does not break the others.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Command:
    """A subcommand: its one-line help, and the module defining its add_arguments/run."""

    help: str
    module: str


COMMANDS = {
    "train": Command(
        help="train an MLP (or, on digits, a small CNN) on a small real data set (digits or moons)",
        module="tinygrad_ops.cli.train",
    ),
    "predict": Command(
        help="use a trained run: accuracy on its test set, or predictions for given rows",
        module="tinygrad_ops.cli.predict",
    ),
    "graph": Command(
        help="draw the compute graph of an expression or a model",
        module="tinygrad_ops.cli.graph",
    ),
    "exercises": Command(
        help="write exercises that check themselves (init DIR), and check them (check DIR)",
        module="tinygrad_ops.cli.exercises",
    ),
    "bench": Command(
        help="run the benchmarks (this engine vs hand-written numpy and PyTorch)",
        module="tinygrad_ops.bench",
    ),
}
