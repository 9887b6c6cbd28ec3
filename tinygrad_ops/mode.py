"""Grad mode and anomaly mode: the two switches every layer above reads.

`no_grad` / `enable_grad` turn the recording of operations off and on; `detect_anomaly`
makes backward check every gradient for NaN and inf. Both are thread-local. This module
imports nothing of the package: it is the lowest layer.

It also holds the engine's one seam for watchers of a whole computation (`Trace`, below):
tg.compile's capture is one; by default nobody watches and every call is a no-op.
"""

import concurrent.futures
import contextlib
import functools
import gc
import threading


class Trace:
    """The seam: what the engine tells a watcher of the whole computation, at its choke
    points. This class is the no-op default; tg.compile's capture (jit/capture.py)
    implements the same calls to write its program. The engine calls, and nothing else:

        op(node, operands, options, out, given)  Op.apply: an op's forward ran
        read(value, what)       values_read: Python is about to read `value`'s numbers
        write(tensor, source)   values_written: `source`'s values went into `tensor`'s array
        call(method, owner, args, kwargs, whole)  a method marked `replayed_whole`
                                (whole: an optimizer's step) or `watched` (Module.__call__)
        graph(graph_class, *arguments)  run_backward: the pass's graph (a watcher's
                                subclass of BackwardGraph sees the rules and leaf writes)

    Work that is not the caller's computation (a scheduler's timing experiments) runs
    in a thread of its own (`in_fresh_thread`): every switch, this one too, is per thread.
    """

    active = False  # True for a watcher that records (tg.compile's capture)

    def op(self, node, operands, options, out, given):
        pass

    def read(self, value, what):
        pass

    def write(self, tensor, source, what=None):
        pass

    def call(self, method, owner, args, kwargs, whole):
        return method(owner, *args, **kwargs)

    def graph(self, graph_class, *arguments):
        return graph_class(*arguments)


class _State(threading.local):
    """The switches, one set per thread (as PyTorch's grad mode is thread-local): a
    `no_grad` block in one thread never turns recording off in another. A new thread
    starts with recording on and anomaly detection off (the class attributes)."""

    grad_enabled = True
    anomaly = False
    tracer = Trace()  # the watcher of the computation (the no-op default: see Trace)


STATE = _State()


def is_grad_enabled() -> bool:
    """True when operations are being recorded for backward.

    >>> import tinygrad_ops as tg
    >>> tg.is_grad_enabled()
    True
    >>> with tg.no_grad():
    ...     tg.is_grad_enabled()
    False
    """
    return STATE.grad_enabled


class _GradMode:
    """Context manager and decorator that sets grad mode, restoring the old one on exit."""

    enabled = True

    def __enter__(self):
        self.previous = STATE.grad_enabled
        STATE.grad_enabled = self.enabled

    def __exit__(self, *exc_info):
        STATE.grad_enabled = self.previous

    def __call__(self, function):
        enabled = self.enabled  # (this instance's mode: `inference_mode(False)` records)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with _GradModeSetter(enabled):
                return function(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):  # noqa: N801 (PyTorch's name)
    """Record nothing inside: results do not require grad.

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> with tg.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    enabled = False


class enable_grad(_GradMode):  # noqa: N801 (PyTorch's name)
    """Turn recording back on inside a `no_grad` block.

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([1.0], requires_grad=True)
    >>> with tg.no_grad(), tg.enable_grad():
    ...     (x * 2).requires_grad
    True
    """

    enabled = True


class inference_mode(no_grad):  # noqa: N801 (PyTorch's name)
    """PyTorch's `inference_mode()` for evaluation loops: here the same as `no_grad`.

    >>> import tinygrad_ops as tg
    >>> with tg.inference_mode():
    ...     (tg.Tensor([1.0], requires_grad=True) * 2).requires_grad
    False
    """

    def __init__(self, mode=True):
        self.enabled = not mode


class set_grad_enabled(_GradMode):  # noqa: N801 (PyTorch's name)
    """Turn recording on or off at once (`tg.set_grad_enabled(False)`), or inside a `with`
    block, restoring the previous mode at its end, as PyTorch's.

    >>> import tinygrad_ops as tg
    >>> with tg.set_grad_enabled(False):
    ...     tg.is_grad_enabled()
    False
    >>> tg.is_grad_enabled()
    True
    """

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled: mode must be a bool, got {type(mode).__name__}")
        self.enabled = mode
        self.previous = STATE.grad_enabled
        STATE.grad_enabled = mode

    def __enter__(self):
        pass  # (set already, by the call)

    def __call__(self, function):
        """As a decorator: the mode holds inside `function` only (the call's change undone)."""
        STATE.grad_enabled = self.previous
        return super().__call__(function)


class detect_anomaly:  # noqa: N801 (PyTorch's name)
    """Inside this context a backward rule that produces NaN or inf raises a RuntimeError
    naming the op and the line of the forward pass that created it.

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([0.0], requires_grad=True)
    >>> with tg.detect_anomaly():
    ...     y = x.sqrt().sum()
    ...     try:
    ...         y.backward()
    ...     except RuntimeError as error:
    ...         print(str(error).splitlines()[0])
    Function 'Sqrt' returned inf or nan values in its gradient for input 0.
    """

    def __enter__(self):
        self.previous = STATE.anomaly
        STATE.anomaly = True
        return self

    def __exit__(self, *exc_info):
        STATE.anomaly = self.previous


class _GradModeSetter(_GradMode):
    def __init__(self, enabled):
        self.enabled = enabled


def replayed_whole(method):
    """Mark a method that a compiled step replays by calling it again, as one kernel
    (an optimizer's `step`, `zero_grad`, `Module.train`): a watcher (`Trace.call`) runs it
    unrecorded inside and notes the call. Otherwise it is `method` itself, plus one call."""
    return _reported(method, whole=True)


def watched(method):
    """Mark a method whose work a watcher records as it runs, told who runs it
    (`Module.__call__`: tg.compile guards the module's flag and members)."""
    return _reported(method, whole=False)


def _reported(method, whole):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        return STATE.tracer.call(method, self, args, kwargs, whole)

    return wrapper


def in_fresh_thread(function, *args):
    """`function(*args)` in a new thread, where grad mode, anomaly mode and the watcher of
    the computation are their defaults: work that is not the caller's computation (a
    scheduler's timing experiments, even while tg.compile captures the caller's step)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(function, *args).result()


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector paused inside the block, then as it was: for work that
    makes many objects which all live on (a capture, a chain finder's lists, a timing),
    where its passes would re-scan them for nothing."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
