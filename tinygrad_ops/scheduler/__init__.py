"""Backward schedulers: how the engine walks the graph and accumulates gradients.

The engine builds a `BackwardGraph` (nodes in topological order, the seed gradients, and
`visit` to run one node) and hands it to a scheduler's `run`; the schedulers register
here under the names `backward(scheduler=...)` takes (registry.py).
"""

# (`name as name`: re-exported, the public names of this package besides the classes)
from .auto import AutoScheduler
from .registry import available_schedulers as available_schedulers
from .registry import get_default_scheduler as get_default_scheduler
from .registry import register_scheduler
from .registry import resolve_scheduler as resolve_scheduler
from .registry import set_default_scheduler as set_default_scheduler
from .scan_scheduler import ScanScheduler
from .sequential import SequentialScheduler

register_scheduler("sequential", SequentialScheduler())
register_scheduler("hillis-steele", ScanScheduler("hillis-steele"))
register_scheduler("blelloch", ScanScheduler("blelloch"))
register_scheduler("blocked", ScanScheduler("blocked", block_size=256))
register_scheduler("auto", AutoScheduler())

from .plan import backward_plan as backward_plan  # noqa: E402 (reads the registry above)
