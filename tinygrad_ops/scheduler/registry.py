"""Names -> schedulers, and the default: what the engine asks to find a scheduler.

This module imports no scheduler implementation (the implementations register themselves
when the `scheduler` package is imported), so the engine below them can use it.
"""

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
    >>> tg.available_schedulers()
    ['auto', 'blelloch', 'blocked', 'hillis-steele', 'sequential']
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
