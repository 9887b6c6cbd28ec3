"""The tape: grad mode, the `Op` base class every primitive derives from, and the engine.

How the tape is recorded
    Every primitive is an `Op` subclass with `forward(*arrays)` and `backward(grad_output)`.
    `Op.apply(*operands)` runs `forward` on the operands' numpy arrays; when grad mode is on
    and an operand requires grad, the op instance itself becomes the *node* of the tape and
    is stored on the output tensor (`out._ctx`). Leaves have no node; `no_grad` records nothing.

How higher-order gradients work (decided once, here)
    Backward rules are written with operations that numpy arrays and Tensors both support
    (`+ - * / ** @`, `.sum`, `.reshape`, `.swapaxes`, comparisons) plus the few helpers in
    `ops/dispatch.py` (`where`, `log`, `scatter_add`, ...). A plain backward passes numpy
    arrays through the rules: fast, nothing recorded. `create_graph=True` passes Tensors
    instead, with grad mode on, so the backward pass is itself recorded and can be
    differentiated again (Hessian-vector products). One rule, two uses.

The engine
    `run_backward` computes a topological order iteratively (no recursion limit), hands a
    `BackwardGraph` to the chosen scheduler (the seam described in SCAN.md) and then releases
    the saved buffers unless `retain_graph`. Broadcasting is undone in exactly one place
    (`unbroadcast`) and every gradient's shape is checked against its input there.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import operator
import traceback
from sys import getrefcount

import numpy as np

from . import tensor as tensor_module

# ----------------------------------------------------------------------------------------------
# Grad mode and anomaly mode


class _State:
    """Process-wide switches (the engine is single-threaded, like the numpy it runs on)."""

    grad_enabled = True
    anomaly = False


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
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with self.__class__():
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


# ----------------------------------------------------------------------------------------------
# Ops: the nodes of the tape


_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or to read saved values after "
    "they were freed) in {op}. Saved intermediate values of the graph are freed when you "
    "call .backward() or tg.grad(). Pass retain_graph=True to the first call if you need "
    "to backward through the graph a second time."
)


class Op:
    """Base class of every primitive: `forward` on numpy arrays, `backward` on gradients.

    Subclasses implement `forward(self, *arrays, **options) -> array` and
    `backward(self, grad_output) -> tuple` (one gradient per operand, None where the
    operand needs none). In `forward` they call `self.save_for_backward(...)` with the
    arrays the backward rule needs. `self.needs_input_grad` is known before `forward`,
    so an op saves only what its backward will read.

    Saved inputs and the saved output are recognised by identity after `forward`: their
    version counters are recorded (an in-place change makes backward raise), and a
    `create_graph` backward gets them back as Tensors so that it is itself recorded.
    """

    __slots__ = (
        "inputs",
        "needs_input_grad",
        "saved",
        "sources",
        "sequence",
        "graph_mode",
        "graph_output",
        "forward_trace",
        "__weakref__",
    )
    # Ops whose output is a numpy view of their input share the input's version counter.
    is_view = False

    def forward(self, *arrays, **options):  # pragma: no cover - every op overrides it
        raise NotImplementedError

    def backward(self, grad_output):  # pragma: no cover - every op overrides it
        raise NotImplementedError

    def save_for_backward(self, *values):
        """Keep `values` (input arrays, the output array, or any other array) for backward."""
        self.saved = values

    @property
    def saved_tensors(self) -> tuple:
        """The saved values: numpy arrays, or Tensors for inputs/output in a create_graph pass."""
        saved = self.saved
        if saved is None:
            raise RuntimeError(_FREED_MESSAGE.format(op=type(self).__name__))
        sources = self.sources
        if sources is None:
            return saved
        for _, _, version_box, version in sources:
            if version_box[0] != version:
                raise RuntimeError(
                    f"one of the tensors needed for the gradient of {type(self).__name__} "
                    f"has been modified by an in-place operation: it is at version "
                    f"{version_box[0]}, expected version {version}. Use the out-of-place op "
                    "(e.g. x.relu() instead of x.relu_()) or copy the tensor first."
                )
        if not self.graph_mode:
            return saved
        values = list(saved)
        output = getattr(self, "graph_output", None)
        for index, source, _, _ in sources:
            if source is not None:
                values[index] = source
            elif output is not None and output.data is saved[index]:
                values[index] = output
            else:  # the output, unknown here: a constant (its own dependence is lost)
                values[index] = Tensor._make(saved[index], False, None)
        return tuple(values)

    def release(self):
        """Free the saved buffers; a later backward through this node raises."""
        if self.saved:
            self.saved = None
            self.sources = None

    @classmethod
    def apply(cls, *operands, **options):
        """Run the op on Tensors (or plain numbers/arrays, taken as constants) and record it."""
        node = cls()
        node.saved = ()
        # One pass over the operands: their arrays and which of them need a gradient.
        arrays = []
        needs_input_grad = []
        recording = False
        for operand in operands:
            if isinstance(operand, Tensor):
                arrays.append(operand.data)
                needs = operand._requires_grad
                recording |= needs
                needs_input_grad.append(needs)
            else:
                arrays.append(operand)
                needs_input_grad.append(False)
        if recording and not STATE.grad_enabled:
            recording = False
            needs_input_grad = [False] * len(operands)
        # Known before forward, so that forward saves only what backward will read.
        node.needs_input_grad = needs_input_grad
        out_data = node.forward(*arrays, **options)
        if type(out_data) is not np.ndarray:
            out_data = np.asarray(out_data)
        out = Tensor._make(out_data, recording, node if recording else None)
        if cls.is_view and out_data.base is not None and isinstance(operands[0], Tensor):
            out._version = operands[0]._version
        if recording:
            node.inputs = operands
            node.sequence = next(_SEQUENCE)
            node.graph_mode = False
            node.sources = node._find_sources(operands, out_data, out) if node.saved else None
            if STATE.anomaly:
                node.forward_trace = "".join(traceback.format_stack()[:-1])
        return out

    def _find_sources(self, operands, out_data, out):
        """Which saved values are input Tensors or the output, with their current versions.

        The output is not held (that would make a reference cycle, output -> node ->
        output): a create_graph pass gets it from the engine, which knows which tensor it
        is visiting (`graph_output` holds it then).
        """
        sources = []
        for index, value in enumerate(self.saved):
            if value is None:
                continue
            if value is out_data:  # (a view's output shares its base's counter: read it)
                version = out._version
                sources.append((index, None, version, version[0]))
                continue
            for operand in operands:
                if isinstance(operand, Tensor) and value is operand.data:
                    version = operand._version
                    sources.append((index, operand, version, version[0]))
                    break
        return sources or None


# Creation order of the nodes: a node is always created after the nodes of its inputs, so
# sorting by it gives a topological order (PyTorch's engine orders by a sequence number too).
_SEQUENCE = itertools.count()


# ----------------------------------------------------------------------------------------------
# The engine


def node_name(node) -> str:
    """The op's name for messages: the user's class for a custom Function's node."""
    function = getattr(node, "function", None)
    return function.__name__ if function is not None else type(node).__name__


def as_recorded(operand, node):
    """The tensor `node` consumed as `operand`, with the history it had then.

    An in-place op on a tensor that requires grad gives that tensor a new node, created
    after every node that consumed it before; its old history moves to a 'shadow' tensor,
    the in-place node's first input. So a node whose input's history is younger than the
    node itself follows it back to that shadow: `y = x * 2; z = y * 3; y.mul_(5)` still
    sends z's gradient to x through `x * 2` alone, as in PyTorch.
    """
    history = operand._ctx
    while history is not None and history.sequence > node.sequence:
        operand = history.inputs[0]
        history = operand._ctx
    return operand


def recorded_inputs(node):
    """`node.inputs`, each Tensor as `node` consumed it (see `as_recorded`)."""
    return [
        as_recorded(operand, node) if isinstance(operand, Tensor) else operand
        for operand in node.inputs
    ]


def unbroadcast(grad, shape: tuple, op, index: int):
    """Sum `grad` down to `shape`: the one place where broadcasting is undone.

    Broadcasting prepends dims and stretches size-1 dims; the gradient of a stretched
    input is the sum over the stretched dims (every copy received part of it).
    `op` (a node or a name) and `index` name the input in the error for a wrong shape.
    """
    grad_shape = grad.shape
    if grad_shape == shape:
        return grad
    extra = len(grad_shape) - len(shape)
    if extra >= 0:
        axes = tuple(range(extra)) + tuple(
            extra + axis
            for axis, size in enumerate(shape)
            if size == 1 and grad_shape[extra + axis] != 1
        )
        if axes:
            grad = grad.sum(axis=axes, keepdims=True)
        if extra:
            grad = grad.reshape(grad.shape[extra:])
    if grad.shape != shape:
        op_name = op if isinstance(op, str) else node_name(op)
        raise RuntimeError(
            f"{op_name}: the backward rule returned a gradient of shape {tuple(grad_shape)} "
            f"for input {index}, which has shape {shape}"
        )
    return grad


class BackwardGraph:
    """What the engine hands a scheduler: the graph, the gradients so far, and `visit`,
    which runs one tensor's backward step.

    `order` lists every tensor that requires grad and reaches a wanted input, parents before
    children (so `reversed(order)` is a valid backward order); it is computed on first use.
    `grads` maps `id(tensor)` to the gradient accumulated so far. A scheduler must see that
    every tensor that received a gradient is visited once, after all its consumers; `visit`
    does the rest. `run_sequential` is the reference walk (and the fallback of every
    scheduler): it visits whatever gradients are pending, in a valid order.

    Gradient arrays that a backward rule has just created are *owned* by the walk (`owned`
    holds their ids): a second gradient for the same tensor is added into them in place and
    a leaf takes them without a copy. Arrays that may be shared (the upstream gradient passed
    straight through, views, user data) are never written to.
    """

    def __init__(self, roots, wanted, create_graph, accumulate_into_leaves):
        self.roots = roots
        self.wanted = wanted  # ids of the tensors whose gradient tg.grad returns, else None
        self.grads = {}
        self.tensors = {}  # id -> tensor, for every tensor that has received a gradient
        self.owned = set()
        self.create_graph = create_graph
        self.capture = wanted
        self.captured = {}
        self.accumulate_into_leaves = accumulate_into_leaves
        self.visited = []  # nodes whose backward ran, to release afterwards
        self.scanned_segments = []  # (scheduler name, [tensors]) noted by scan schedulers
        self._order = None
        # With wanted inputs, only tensors on a path to one of them need a gradient.
        self.relevant = None
        if wanted is not None:
            self.relevant = {id(tensor) for tensor in self.order}

    @property
    def order(self):
        if self._order is None:
            self._order = topological_order(self.roots, self.wanted)
        return self._order

    def pop_grad(self, tensor):
        """Remove and return the pending gradient of `tensor` (None if none arrived)."""
        return self.grads.pop(id(tensor), None)

    def send(self, tensor, grad, owned=False):
        """Accumulate `grad` into `tensor`'s pending gradient."""
        key = id(tensor)
        if self.relevant is not None and key not in self.relevant:
            return
        grads = self.grads
        previous = grads.get(key)
        if previous is None:
            grads[key] = grad
            self.tensors[key] = tensor
            # Ownership describes the array stored now (an earlier one may have been popped).
            if owned:
                self.owned.add(key)
            else:
                self.owned.discard(key)
        elif self.create_graph:
            grads[key] = previous + grad
        elif key in self.owned:
            np.add(previous, grad, out=previous)
        else:
            # asarray: two 0-d arrays add to a numpy scalar, which `out=` cannot write into.
            grads[key] = np.asarray(previous + grad)
            self.owned.add(key)

    def visit(self, tensor, grad):
        """Deliver the total gradient of `tensor`: hooks, capture, leaf write, or the op's
        backward rule, whose results are unbroadcast, checked, and sent to the parents."""
        key = id(tensor)
        owned = key in self.owned
        if owned:
            self.owned.discard(key)
        if tensor._hooks:
            grad = _run_hooks(tensor, grad, self.create_graph)
            owned = False
        if self.capture is not None and key in self.capture:
            self.captured[key] = grad
            owned = False
        node = tensor._ctx
        if node is None:
            if self.accumulate_into_leaves:
                _accumulate_leaf(tensor, grad, self.create_graph, owned)
            return
        self.visited.append(node)
        for parent, parent_grad, parent_owned in self.input_grads(node, grad, tensor):
            self.send(parent, parent_grad, parent_owned)

    def run_sequential(self):
        """Visit every tensor with a pending gradient, one node at a time.

        The next node is always the pending one created last (a max-heap on the nodes'
        creation numbers): all its consumers were created after it, so their gradients
        have all arrived. Leaves have no backward rule; they are visited at the end.
        """
        grads = self.grads
        tensors = self.tensors
        owned = self.owned
        input_grads = self.input_grads
        visited = self.visited
        heappop = heapq.heappop
        heappush = heapq.heappush
        # The plain case (no tg.grad capture, no create_graph, no anomaly mode) is inlined:
        # it is the hot loop of every training step.
        plain = self.capture is None and not self.create_graph and not STATE.anomaly
        heap = []
        leaves = []

        def queue(tensor, key):
            """Schedule a tensor that has just received its first gradient (a tensor is
            in `grads` exactly while it is queued and not yet visited)."""
            if tensor._ctx is None:
                leaves.append(tensor)
            else:
                heappush(heap, (-tensor._ctx.sequence, key))

        for key in list(grads):  # the dict's order: leaves are then visited in a fixed order
            queue(tensors[key], key)
        while heap:
            key = heappop(heap)[1]
            tensor = tensors[key]
            node = tensor._ctx
            grad = grads.pop(key)
            if plain and not tensor._hooks:
                owned.discard(key)
                visited.append(node)
                for parent, parent_grad, parent_owned in input_grads(node, grad):
                    parent_key = id(parent)
                    previous = grads.get(parent_key)
                    if previous is None:  # first gradient for parent: queue it
                        grads[parent_key] = parent_grad
                        tensors[parent_key] = parent
                        if parent_owned:
                            owned.add(parent_key)
                        else:
                            owned.discard(parent_key)
                        queue(parent, parent_key)
                    elif parent_key in owned:
                        np.add(previous, parent_grad, out=previous)
                    else:
                        grads[parent_key] = np.asarray(previous + parent_grad)  # 0-d stays an array
                        owned.add(parent_key)
                continue
            # The general case: the parents that had no pending gradient before the visit
            # and have one after it are queued now.
            waiting = {}
            for parent in recorded_inputs(node):
                if id(parent) not in grads:
                    waiting[id(parent)] = parent
            self.visit(tensor, grad)
            for parent_key, parent in waiting.items():
                if parent_key in grads:
                    queue(parent, parent_key)
        for leaf in leaves:
            grad = grads.pop(id(leaf), None)
            if grad is not None:
                self.visit(leaf, grad)

    def input_grads(self, node, grad, output=None):
        """Run `node`'s backward rule on `grad`; return (input, checked gradient, owned)
        for every input that needs a gradient. `output` is the tensor `node` produced
        (a create_graph pass needs it when the rule reads the saved output)."""
        if self.create_graph:
            return self._recorded_input_grads(node, grad, output)
        grads = node.backward(grad)
        results = []
        needs_input_grad = node.needs_input_grad
        anomaly = STATE.anomaly
        for index, operand in enumerate(node.inputs):
            input_grad = grads[index]
            if input_grad is None or not needs_input_grad[index]:
                continue
            history = operand._ctx
            if history is not None and history.sequence > node.sequence:
                operand = as_recorded(operand, node)  # modified in place after node consumed it
            data = operand.data
            if type(input_grad) is not np.ndarray:
                input_grad = np.asarray(input_grad)
            dtype = input_grad.dtype
            if dtype is not data.dtype and dtype != data.dtype:  # (builtin dtypes are shared)
                input_grad = input_grad.astype(data.dtype)
            if input_grad.shape != data.shape:
                # A sum makes a new array, so the reduced gradient is always the walk's own.
                input_grad = unbroadcast(input_grad, data.shape, node, index)
                owned = True
            else:
                # Owned: an array (not a view) that nothing but this loop refers to: the
                # `grads` tuple, the local name and getrefcount's argument make 3. The
                # upstream gradient passed through, an array returned for two inputs, or
                # one the rule also keeps all count more.
                owned = input_grad.base is None and getrefcount(input_grad) <= 3
            if anomaly:
                _check_finite(node, index, input_grad)
            results.append((operand, input_grad, owned))
        return results

    def _recorded_input_grads(self, node, grad, output):
        """`input_grads` for create_graph: the rule runs on Tensors and is recorded."""
        node.graph_mode = True
        node.graph_output = output
        try:
            with enable_grad():
                grads = node.backward(grad)
        finally:
            node.graph_mode = False
            node.graph_output = None
        results = []
        for index, operand in enumerate(node.inputs):
            input_grad = grads[index]
            if input_grad is None or not node.needs_input_grad[index]:
                continue
            operand = as_recorded(operand, node)
            if input_grad.dtype != operand.data.dtype:  # a Tensor's astype is recorded too
                input_grad = input_grad.astype(operand.data.dtype)
            if input_grad.shape != operand.data.shape:
                input_grad = unbroadcast(input_grad, operand.data.shape, node, index)
            if STATE.anomaly:
                _check_finite(node, index, input_grad)
            results.append((operand, input_grad, False))
        return results


def _check_finite(node, index, grad):
    values = grad.data if isinstance(grad, Tensor) else grad
    if not np.all(np.isfinite(values)):
        trace = getattr(node, "forward_trace", None)
        where = (
            f"\nThe forward call that created it:\n{trace}"
            if trace
            else "\n(the op was created outside detect_anomaly(), so its forward trace is unknown)"
        )
        raise RuntimeError(
            f"Function '{node_name(node)}' returned inf or nan values in its gradient "
            f"for input {index}.{where}"
        )


def _run_hooks(tensor, grad, create_graph):
    for hook in list(tensor._hooks.values()):
        wrapped = grad if isinstance(grad, Tensor) else Tensor._make(grad, False, None)
        result = hook(wrapped)
        if result is not None:
            if not isinstance(result, Tensor):
                raise TypeError(f"a hook must return a Tensor or None, got {type(result).__name__}")
            if result.shape != tensor.shape:
                raise RuntimeError(
                    f"hook returned a gradient of shape {result.shape} for a tensor of shape "
                    f"{tensor.shape}"
                )
            grad = result if create_graph else result.data
    return grad


def _accumulate_leaf(tensor, grad, create_graph, owned=False):
    if create_graph:
        grad_tensor = grad if isinstance(grad, Tensor) else Tensor._make(grad, False, None)
        tensor.grad = grad_tensor if tensor.grad is None else tensor.grad + grad_tensor
        return
    if isinstance(grad, Tensor):
        grad = grad.data
        owned = False
    if tensor.grad is None:
        # The leaf must own its gradient array: later calls add into it in place.
        tensor.grad = Tensor._make(grad if owned else np.array(grad, copy=True), False, None)
    elif tensor.grad.data.flags.writeable and tensor.grad.data.shape == grad.shape:
        np.add(tensor.grad.data, grad, out=tensor.grad.data)
        tensor.grad._version[0] += 1
    else:
        tensor.grad.data = tensor.grad.data + grad


_sequence_of = operator.attrgetter("_ctx.sequence")


def topological_order(roots, wanted=None):
    """Tensors that require grad reachable from `roots`, parents before children.

    An iterative search collects the tensors (no recursion limit); sorting the non-leaves
    by their node's creation number orders them, since a node is always created after
    the nodes of its inputs. Leaves come first. With `wanted` (a set of ids), only tensors
    on a path to a wanted tensor are kept: the rest need no gradient.
    """
    seen = set()
    leaves = []
    interior = []
    stack = []
    for root in roots:
        if id(root) not in seen:
            seen.add(id(root))
            stack.append(root)
    while stack:
        tensor = stack.pop()
        node = tensor._ctx
        if node is None:
            leaves.append(tensor)
            continue
        interior.append(tensor)
        for operand, needs in zip(recorded_inputs(node), node.needs_input_grad):
            if needs and id(operand) not in seen:
                seen.add(id(operand))
                stack.append(operand)
    interior.sort(key=_sequence_of)
    order = leaves + interior
    if wanted is None:
        return order
    reaching = set()
    kept = []
    for tensor in order:
        node = tensor._ctx
        key = id(tensor)
        if key in wanted or (
            node is not None
            and any(
                needs and id(operand) in reaching
                for operand, needs in zip(recorded_inputs(node), node.needs_input_grad)
            )
        ):
            reaching.add(key)
            kept.append(tensor)
    return kept


def run_backward(
    roots,
    seeds,
    inputs=None,
    retain_graph=False,
    create_graph=False,
    scheduler=None,
):
    """The engine: gradients of `roots` (seeded with `seeds`) into leaves or `inputs`.

    With `inputs=None` gradients accumulate into every reachable leaf's `.grad`
    (`Tensor.backward`); otherwise they are returned for `inputs`, in order (`tg.grad`).
    """
    wanted = None if inputs is None else {id(tensor) for tensor in inputs}
    graph = BackwardGraph(roots, wanted, create_graph, accumulate_into_leaves=inputs is None)
    for root, seed in zip(roots, seeds):
        if create_graph and not isinstance(seed, Tensor):
            seed = Tensor._make(np.asarray(seed), False, None)
        graph.send(root, seed)
    try:
        schedulers = _scheduler_package()
        if scheduler is None and schedulers.get_default_scheduler() == "sequential":
            graph.run_sequential()  # the common case, without the registry look-up
        else:
            schedulers.resolve_scheduler(scheduler).run(graph)
    finally:
        if not retain_graph:
            for node in graph.visited:
                node.release()
    if inputs is None:
        return None
    return [graph.captured.get(id(tensor)) for tensor in inputs]


_schedulers = None  # the scheduler package, imported on first use (it imports this module)


def _scheduler_package():
    global _schedulers
    if _schedulers is None:
        from . import scheduler

        _schedulers = scheduler
    return _schedulers


def _seed_for(root, gradient, argument_name):
    if gradient is None:
        if root.data.size != 1:
            raise RuntimeError(
                f"grad can be implicitly created only for scalar outputs; the output has shape "
                f"{root.shape}: pass {argument_name} with that shape"
            )
        data = root.data
        seed = np.array(1, dtype=data.dtype)  # (np.ones costs 0.6 us more, in Python)
        return seed if data.ndim == 0 else seed.reshape(data.shape)
    seed = gradient.data if isinstance(gradient, Tensor) else np.asarray(gradient)
    if seed.shape != root.shape:
        raise RuntimeError(
            f"{argument_name} has shape {seed.shape} but the output has shape {root.shape}"
        )
    if isinstance(gradient, Tensor):
        return gradient if gradient.requires_grad else seed.astype(root.data.dtype, copy=False)
    return seed.astype(root.data.dtype, copy=False)


def tensor_backward(root, gradient=None, retain_graph=False, create_graph=False, scheduler=None):
    """`Tensor.backward`: accumulate d(root)/d(leaf) into every leaf's `.grad`."""
    if not root._requires_grad:
        raise RuntimeError(
            "backward() called on a tensor that does not require grad and has no grad_fn: "
            "make an input with requires_grad=True (and compute outside tg.no_grad())"
        )
    seed = _seed_for(root, gradient, "gradient")
    run_backward([root], [seed], None, retain_graph or create_graph, create_graph, scheduler)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    allow_unused=False,
    scheduler=None,
):
    """Gradients of `outputs` with respect to `inputs`, returned (leaves' `.grad` untouched).

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor(3.0, requires_grad=True)
    >>> (dx,) = tg.grad(x * x, [x])
    >>> float(dx.item())
    6.0
    """
    single_output = isinstance(outputs, Tensor)
    outputs = [outputs] if single_output else list(outputs)
    inputs_list = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor) or not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    if len(grad_outputs) != len(outputs):
        raise ValueError(
            f"grad_outputs has {len(grad_outputs)} entries but there are {len(outputs)} outputs"
        )
    for index, tensor in enumerate(inputs_list):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"inputs[{index}] is a {type(tensor).__name__}, not a Tensor")
        if not tensor._requires_grad:
            raise RuntimeError(f"inputs[{index}] does not require grad")
    seeds = []
    for output, grad_output in zip(outputs, grad_outputs):
        if not output._requires_grad:
            raise RuntimeError(
                "one of the outputs does not require grad and has no grad_fn: it does not "
                "depend on any input that requires grad"
            )
        seeds.append(_seed_for(output, grad_output, "grad_outputs"))
    if retain_graph is None:
        retain_graph = create_graph
    results = run_backward(outputs, seeds, inputs_list, retain_graph, create_graph, scheduler)
    wrapped = []
    for index, result in enumerate(results):
        if result is None:
            if not allow_unused:
                raise RuntimeError(
                    f"inputs[{index}] was not used to compute the outputs; pass "
                    "allow_unused=True to get None for it"
                )
            wrapped.append(None)
        elif isinstance(result, Tensor):
            wrapped.append(result)
        else:
            # A copy: the engine may hand out arrays shared with other gradients.
            wrapped.append(Tensor._make(np.array(result, copy=True), False, None))
    return tuple(wrapped)


# ----------------------------------------------------------------------------------------------
# User-defined functions, as torch.autograd.Function


class FunctionCtx:
    """The `ctx` of a user `Function`: save tensors in forward, read them in backward."""

    def __init__(self):
        self._saved = ()
        self._versions = ()
        self.needs_input_grad = ()
        self._freed = False

    def save_for_backward(self, *tensors):
        for tensor in tensors:
            if tensor is not None and not isinstance(tensor, Tensor):
                raise TypeError(
                    f"save_for_backward takes Tensors (or None), got {type(tensor).__name__}"
                )
        self._saved = tensors
        self._versions = tuple(t._version[0] if t is not None else 0 for t in tensors)

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(_FREED_MESSAGE.format(op="a custom Function"))
        for tensor, version in zip(self._saved, self._versions):
            if tensor is not None and tensor._version[0] != version:
                raise RuntimeError(
                    f"a tensor saved by a custom Function (shape {tensor.shape}) was modified "
                    f"by an in-place operation: version {tensor._version[0]}, expected {version}"
                )
        return self._saved


class _CustomFunctionNode(Op):
    """The tape node of a user `Function`: calls its static `backward` with Tensors."""

    __slots__ = ("function", "ctx")

    def backward(self, grad_output):
        if self.ctx._freed:
            raise RuntimeError(_FREED_MESSAGE.format(op=self.function.__name__))
        wrapped = (
            grad_output
            if isinstance(grad_output, Tensor)
            else Tensor._make(grad_output, False, None)
        )
        with _GradModeSetter(self.graph_mode):
            results = self.function.backward(self.ctx, wrapped)
        if not isinstance(results, tuple):
            results = (results,)
        if len(results) != len(self.inputs):
            raise RuntimeError(
                f"{self.function.__name__}.backward returned {len(results)} gradients but "
                f"forward took {len(self.inputs)} inputs"
            )
        grads = []
        for index, result in enumerate(results):
            if result is None:
                grads.append(None)
                continue
            if not isinstance(result, Tensor):
                result = Tensor(np.asarray(result, dtype=self.inputs[index].data.dtype))
            if not self.graph_mode:
                result = result.data
            grads.append(result)
        return tuple(grads)

    def release(self):
        self.ctx._saved = ()
        self.ctx._freed = True


class _GradModeSetter(_GradMode):
    def __init__(self, enabled):
        self.enabled = enabled


class Function:
    """A user-defined op, as `torch.autograd.Function`.

    Subclass it with static `forward(ctx, *inputs)` and `backward(ctx, grad_output)`;
    call it as `MyOp.apply(*inputs)`. `forward` runs without recording; `backward`
    returns one gradient per input (None for inputs that need none).

    >>> import tinygrad_ops as tg
    >>> class Cube(tg.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x * x
    ...     @staticmethod
    ...     def backward(ctx, grad_output):
    ...         (x,) = ctx.saved_tensors
    ...         return grad_output * 3 * x * x
    >>> x = tg.Tensor([2.0], requires_grad=True)
    >>> Cube.apply(x).sum().backward()
    >>> x.grad.numpy()
    array([12.], dtype=float32)
    """

    @staticmethod
    def forward(ctx, *inputs):  # pragma: no cover - user code overrides it
        raise NotImplementedError("a Function subclass must define forward(ctx, *inputs)")

    @staticmethod
    def backward(ctx, *grad_outputs):  # pragma: no cover - user code overrides it
        raise NotImplementedError("a Function subclass must define backward(ctx, grad_output)")

    @classmethod
    def apply(cls, *inputs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(
            isinstance(value, Tensor) and value._requires_grad for value in inputs
        )
        with no_grad():
            result = cls.forward(ctx, *inputs)
        if not isinstance(result, Tensor):
            result = Tensor(result)
        requires_grad = STATE.grad_enabled and any(ctx.needs_input_grad)
        if not requires_grad:
            return Tensor._make(result.data, False, None)
        node = _CustomFunctionNode()
        node.function = cls
        node.ctx = ctx
        node.saved = ()
        node.inputs = inputs
        node.needs_input_grad = ctx.needs_input_grad
        node.graph_mode = False
        node.sources = None
        node.sequence = next(_SEQUENCE)
        if STATE.anomaly:
            node.forward_trace = "".join(traceback.format_stack()[:-1])
        return Tensor._make(result.data, True, node)


Tensor = tensor_module.Tensor
