"""The `tinygrad-ops` command (also `python -m tinygrad_ops`).

- `commands`: the subcommand table; a new command is one entry there and one module.
- `dispatch`: the parser and `main`.
- `options`: the option types and `train`'s options.
- `build`: what a run's settings build (data splits, model, optimizer, schedule).
- `train`: the training run; `report`: its progress lines, plot and graph picture;
  `checkpoint`: what a run's checkpoint holds, written and read back checked.
- `predict`: a trained run's accuracy, or its predictions for given rows.
- `graph`: `tinygrad-ops graph`.
"""

from .checkpoint import load_model
from .commands import COMMANDS, Command
from .dispatch import build_parser, main
from .options import UsageError

__all__ = ["COMMANDS", "Command", "UsageError", "build_parser", "load_model", "main"]
