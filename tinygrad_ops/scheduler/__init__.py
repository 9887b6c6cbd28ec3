"""Backward schedulers: how the engine walks the graph and accumulates gradients.

The engine builds a `BackwardGraph` (nodes in topological order, the seed gradients, and
`visit` to run one node) and hands it to a scheduler's `run`. `sequential` walks it one
node at a time and is the reference every other scheduler is tested against.

A scheduler is any object with `name` and `run(graph)`; pass it to `backward(scheduler=...)`
or register it under a name with `register_scheduler`.
"""

from .auto import AutoScheduler
from .registry import (
    available_schedulers,
    get_default_scheduler,
    register_scheduler,
    resolve_scheduler,
    set_default_scheduler,
)
from .scan_scheduler import ScanScheduler
from .sequential import SequentialScheduler

register_scheduler("sequential", SequentialScheduler())
register_scheduler("hillis-steele", ScanScheduler("hillis-steele"))
register_scheduler("blelloch", ScanScheduler("blelloch"))
register_scheduler("blocked", ScanScheduler("blocked", block_size=256))
register_scheduler("auto", AutoScheduler())

from .plan import backward_plan as backward_plan  # noqa: E402 (reads the registry above)

__all__ = [
    "AutoScheduler",
    "ScanScheduler",
    "SequentialScheduler",
    "available_schedulers",
    "backward_plan",
    "get_default_scheduler",
    "register_scheduler",
    "resolve_scheduler",
    "set_default_scheduler",
]
