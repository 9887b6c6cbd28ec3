"""The `tinygrad-ops` command (also `python -m tinygrad_ops`).

- `commands`: the subcommand table; a new command is one entry there and one module.
- `dispatch`: the parser and `main`.
- `options`: the option types and `train`'s options.
- `train`: the training run; `report`: its progress lines, plot and graph picture.
- `graph`: `tinygrad-ops graph`.
"""

from .commands import COMMANDS, Command
from .dispatch import build_parser, main
from .options import UsageError

__all__ = ["COMMANDS", "Command", "UsageError", "build_parser", "main"]
