"""Backward schedulers: how the engine walks the graph and accumulates gradients.

The engine builds a `BackwardGraph` (nodes in topological order, the seed gradients, and
`visit` to run one node) and hands it to a scheduler's `run`. `sequential` walks it one
node at a time and is the reference every other scheduler is tested against.

A scheduler is any object with `name` and `run(graph)`; pass it to `backward(scheduler=...)`
or register it under a name with `register_scheduler`.
"""

from .auto import AutoScheduler
from .scan_scheduler import ScanScheduler
from .sequential import SequentialScheduler

_REGISTRY = {}
_DEFAULT = {"name": "sequential"}


def register_scheduler(name, scheduler):
    """Make `scheduler` (an object with `run(graph)`) available under `name`.

    A scheduler object works without registering too; registering lets `backward` and
    `set_default_scheduler` take it by name:

    >>> import tinygrad_ops as tg
    >>> class Walk:  # the reference walk, as a user-written scheduler
    ...     name = "walk"
    ...     def run(self, graph):
    ...         graph.run_sequential()
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward(scheduler=Walk())
    >>> x.grad.numpy()
    array([2., 4.], dtype=float32)
    """
    if not callable(getattr(scheduler, "run", None)):
        raise TypeError(f"a scheduler needs a run(graph) method, got {type(scheduler).__name__}")
    _REGISTRY[name] = scheduler
    return scheduler


def available_schedulers() -> list:
    """The names `backward(scheduler=...)` accepts.

    >>> import tinygrad_ops as tg
    >>> {"sequential", "hillis-steele", "blelloch", "blocked", "auto"} <= set(
    ...     tg.available_schedulers()
    ... )
    True
    """
    return sorted(_REGISTRY)


def resolve_scheduler(scheduler):
    """A scheduler object from a name, an object, or None (the default)."""
    if scheduler is None:
        scheduler = _DEFAULT["name"]
    if isinstance(scheduler, str):
        try:
            return _REGISTRY[scheduler]
        except KeyError:
            raise ValueError(
                f"unknown scheduler {scheduler!r}; known schedulers: "
                f"{', '.join(available_schedulers())}"
            ) from None
    if not callable(getattr(scheduler, "run", None)):
        raise TypeError(
            f"scheduler must be a name or an object with run(graph), got {type(scheduler).__name__}"
        )
    return scheduler


def set_default_scheduler(name):
    """Make `name` the scheduler used when backward is given none; returns the old default.

    >>> import tinygrad_ops as tg
    >>> previous = tg.set_default_scheduler("sequential")
    >>> tg.get_default_scheduler()
    'sequential'
    """
    resolve_scheduler(name)  # validates
    previous = _DEFAULT["name"]
    _DEFAULT["name"] = name
    return previous


def get_default_scheduler():
    """The name of the scheduler backward uses when given none.

    >>> import tinygrad_ops as tg
    >>> tg.get_default_scheduler()
    'sequential'
    """
    return _DEFAULT["name"]


register_scheduler("sequential", SequentialScheduler())
register_scheduler("hillis-steele", ScanScheduler("hillis-steele"))
register_scheduler("blelloch", ScanScheduler("blelloch"))
register_scheduler("blocked", ScanScheduler("blocked", block_size=256))
register_scheduler("auto", AutoScheduler())

from .plan import backward_plan as backward_plan  # noqa: E402 (reads the registry above)
