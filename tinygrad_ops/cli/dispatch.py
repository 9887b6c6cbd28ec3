"""Parsing and dispatch: the parser built from `COMMANDS`, and `main`.

Every mistake on the command line is one line on stderr and a non-zero exit code (2 for
bad options, 1 for a run that fails, such as an unreadable checkpoint), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .commands import COMMANDS
from .options import RunError, UsageError


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line ("prog: error: ..."), exit code 2."""

    def error(self, message):
        if message.endswith("expected one argument"):
            # `--row -0.5,1` reads -0.5,1 as an option: say how to give such a value.
            message += " (a value that starts with '-' is written --option=VALUE)"
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
    """The parser with every subcommand; a subcommand's module is imported (and its
    options known) only when it is `selected`."""
    parser = Parser(
        prog="tinygrad-ops",
        description="A small reverse-mode autograd engine on numpy: train toy networks, "
        "draw compute graphs, benchmark backward schedulers.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, command in COMMANDS.items():
        subparser = subparsers.add_parser(name, help=command.help, description=command.help)
        if name == selected:
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
    return _run(args)


def _run(args):
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
    except (RunError, OSError, ValueError, ImportError) as error:
        # A diverged run, checkpoint problems (tg.CheckpointError is a ValueError),
        # unwritable folders, missing extras: a run-time failure, reported in one line.
        print(f"tinygrad-ops {args.command}: error: {error}", file=sys.stderr)
        return 1
