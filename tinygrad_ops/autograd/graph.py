"""The backward graph: pending gradients, their ownership, the walk, and the leaf writes.

`BackwardGraph` is what the engine hands a scheduler. `unbroadcast` is the one place
broadcasting is undone, and every gradient's shape is checked against its input there.
"""

from __future__ import annotations

import heapq
from typing import NamedTuple

import numpy as np

from ..mode import STATE, enable_grad
from ..ops.base import LAST_CHANGE, bump_version, is_tensor, new_tensor, node_name
from .order import as_recorded, topological_order


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


class ScannedSegment(NamedTuple):
    """A chain segment whose gradients a scan scheduler computed at once: the scheduler's
    name, the chain's tensors (lowest first), and the scan it ran with its block size
    (`auto` picks them per segment; viz steps through that scan's levels)."""

    scheduler: str
    tensors: list
    method: str
    block_size: int


class PendingGrads:
    """The ledger of pending gradients: each tensor's gradient so far (`grads`, keyed by
    id) and which of those arrays the holder *owns* (`owned`: may add into in place, or
    hand to a leaf without a copy). One ownership rule, in `send`: the eager walk's (a
    `BackwardGraph` is a ledger of arrays), and followed once by tg.compile's code
    generator over its slots (jit/codegen.py: its `sum` writes a line).

    A first gradient is kept as it is, owned if its sender says so (`made_by_rule`); a
    later one is added into the pending array in place when that is owned, else into a
    new array; either way the sum is owned. A taken gradient leaves with its ownership.
    """

    def __init__(self):
        self.grads = {}
        self.tensors = {}  # id -> tensor, for every tensor that has received a gradient
        self.owned = set()
        self.relevant = None  # the ids kept (None: all; tg.grad keeps those on a path to one)
        self.heap = None  # while a walk runs, where `send` queues a tensor (BackwardGraph)

    def send(self, tensor, grad, owned=False) -> bool:
        """Accumulate `grad` into `tensor`'s pending gradient; True for the first (which a
        running walk queues)."""
        key = id(tensor)
        if self.relevant is not None and key not in self.relevant:
            return False
        previous = self.grads.get(key)
        if previous is not None:
            self.grads[key] = self.sum(key, previous, grad, key in self.owned)
            self.owned.add(key)
            return False
        self.grads[key] = grad
        self.tensors[key] = tensor
        if owned:  # (a taken gradient's key has left `owned`: see take and pop)
            self.owned.add(key)
        if self.heap is not None:  # the walk is running: queue the tensor
            node = tensor._ctx
            if node is None:
                self.leaves.append(tensor)
            else:
                heapq.heappush(self.heap, (-node.sequence, key))
        return True

    @staticmethod
    def sum(key, previous, grad, in_place):
        """previous + grad: into `previous` itself when `in_place` (it is owned)."""
        if in_place:
            np.add(previous, grad, out=previous)
            return previous
        # asarray: two 0-d arrays add to a numpy scalar, which `out=` cannot write into.
        return np.asarray(previous + grad)

    def take(self, key):
        """Remove `key`'s pending gradient: (the gradient or None, whether it was owned)."""
        owned = key in self.owned
        self.owned.discard(key)
        return self.grads.pop(key, None), owned

    def pop(self, key):
        """Remove and return `key`'s pending gradient (None if none arrived)."""
        self.owned.discard(key)
        return self.grads.pop(key, None)


class BackwardGraph(PendingGrads):
    """What the engine hands a scheduler: the graph, the gradients so far, and `visit`,
    which runs one tensor's backward step.

    `order` lists every tensor that requires grad and reaches a wanted input, parents before
    children (so `reversed(order)` is a valid backward order); it is computed on first use.
    `grads` maps `id(tensor)` to the gradient accumulated so far. A scheduler must see that
    every tensor that received a gradient is visited once, after all its consumers; `visit`
    does the rest. `run_sequential` is the reference walk (and the fallback of every
    scheduler): it visits whatever gradients are pending, in a valid order.

    Ownership (`PendingGrads`, keyed by id(tensor)): the walk adds a second gradient into
    the first one in place, and a leaf takes its gradient without a copy, only when the
    walk owns the array. The rule is `made_by_rule`: an array a backward rule has just made
    (or a sum the walk made) is owned; the upstream gradient passed through, a view, a
    read-only array, or one the node keeps are not, and are never written to. The walk asks
    the rule only where it saves a copy, for a gradient sent to a leaf; for the others the
    first sum makes a new array (which the walk then owns).

    Observers watch a backward pass without changing it (viz's recorder and
    `step_backward`): objects in `observers` with `visiting(tensor, grad)`, called as the
    walk delivers a tensor's total gradient, and `rule_ran(node, grad, results)`, called
    after a node's backward rule with its (input, gradient, owned) results.
    """

    def __init__(self, roots, wanted, create_graph, accumulate_into_leaves):
        super().__init__()
        self.roots = roots
        self.wanted = wanted  # ids of the tensors whose gradient tg.grad returns, else None
        self.create_graph = create_graph
        if create_graph:  # the gradients are Tensors: every sum is recorded, none in place
            self.sum = _recorded_sum
        self.capture = wanted
        self.captured = {}
        self.accumulate_into_leaves = accumulate_into_leaves
        self.visited = []  # nodes whose backward ran, to release afterwards
        self.scanned_segments = []  # ScannedSegment records noted by scan schedulers
        self.observers = []
        # The modes, read once per pass (each read of the thread-local switches costs ~35 ns).
        self.anomaly = STATE.anomaly
        # While `run_sequential` walks: the pending tensors, queued as they receive a first
        # gradient (`send`): nodes in `heap`, a max-heap on their creation numbers (the
        # walk pops the newest), leaves in arrival order (visited last). None otherwise,
        # so a scan scheduler's sends queue nothing.
        self.leaves = None
        self._order = None
        # With wanted inputs, only tensors on a path to one of them need a gradient.
        if wanted is not None:
            self.relevant = {id(tensor) for tensor in self.order}

    @property
    def order(self):
        if self._order is None:
            self._order = topological_order(self.roots, self.wanted)
        return self._order

    def pop_grad(self, tensor):
        """Remove and return the pending gradient of `tensor` (None if none arrived)."""
        return self.pop(id(tensor))

    def visit(self, tensor, grad, owned=False):
        """Deliver the total gradient of `tensor`: hooks, capture, leaf write, or the op's
        backward rule, whose results are unbroadcast, checked, and sent to the parents.
        `owned`: whether the walk owns `grad` (a leaf then takes it without a copy)."""
        for observer in self.observers:
            observer.visiting(tensor, grad)
        if tensor._hooks:
            grad = _run_hooks(tensor, grad, self.create_graph)
        if self.capture is not None and id(tensor) in self.capture:
            self.captured[id(tensor)] = grad  # (tg.grad: leaves' .grad are left alone)
        node = tensor._ctx
        if node is None:
            if self.accumulate_into_leaves:
                # Without a copy if the walk owns it (never a hook's result, held elsewhere).
                accumulate_leaf(tensor, grad, self.create_graph, owned and not tensor._hooks)
            return
        self.visited.append(node)
        for parent, parent_grad, parent_owned in self.input_grads(node, grad, tensor):
            self.send(parent, parent_grad, parent_owned)

    def scan_watched(self, runner, method, block_size) -> bool:
        """A scan scheduler is about to scan `runner`'s chain: True when a watcher of the
        computation (tg.compile's capture, a subclass) ran it instead."""
        return False

    def run_sequential(self):
        """The reference walk: pop the pending node created last, run its rule, accumulate
        into its inputs; repeat. Leaves have no rule; they are visited at the end.

        All the consumers of a node were created after it, so when it is the newest pending
        node their gradients have all arrived (`send` queues it on `heap`).
        """
        heap = self.heap = []
        self.leaves = []
        for key in list(self.grads):  # sent before the walk (the seeds, what a scan left):
            self.send(self.tensors[key], *self.take(key))  # sent again, so that `send` queues them
        while heap:
            key = heapq.heappop(heap)[1]  # the pending node created last
            self.visit(self.tensors[key], self.pop(key))  # (a rule never writes into it)
        for leaf in self.leaves:
            grad, owned = self.take(id(leaf))
            if grad is not None:
                self.visit(leaf, grad, owned)  # (a leaf takes `grad` without a copy if owned)
        self.heap = self.leaves = None  # the walk is over

    def input_grads(self, node, grad, output=None):
        """Run `node`'s backward rule on `grad`; return (input, gradient, owned) for every
        input that needs a gradient: the gradient as an array of the input's dtype and shape
        (unbroadcast), and whether the walk owns it (`made_by_rule`). `output` is the tensor
        `node` produced (a create_graph pass needs it when the rule reads the saved output)."""
        if self.create_graph:
            results = self._recorded_input_grads(node, grad, output)
        else:
            grads = node.backward(grad)
            results = []
            # Whether anything changed in place since `node` was recorded (see bump_version):
            # an input that did has a new history, and `node` read the one before it.
            changed = LAST_CHANGE[0] > node.sequence
            for index, operand in enumerate(node.inputs):
                input_grad = grads[index]
                if input_grad is None or not node.needs_input_grad[index]:
                    continue
                if changed:
                    operand = as_recorded(operand, node)
                data = operand._data
                if type(input_grad) is not np.ndarray:
                    input_grad = np.asarray(input_grad)
                if input_grad.dtype is not data.dtype and input_grad.dtype != data.dtype:
                    input_grad = input_grad.astype(data.dtype)  # (builtin dtypes are shared)
                if input_grad.shape != data.shape:  # a sum makes a new array: the walk owns it
                    input_grad, owned = unbroadcast(input_grad, data.shape, node, index), True
                else:  # (asked only where it saves a copy: a leaf's .grad takes its first
                    # gradient when owned; a second one is added into the first, owned or not)
                    owned = (
                        operand._ctx is None
                        and id(operand) not in self.grads
                        and made_by_rule(input_grad, grad, grads, node)
                    )
                if self.anomaly:
                    _check_finite(node, index, input_grad)
                results.append((operand, input_grad, owned))
        for observer in self.observers:
            observer.rule_ran(node, grad, results)
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
        for index, operand, input_grad in needed_grads(node, grads):
            if input_grad.dtype != operand.data.dtype:  # a Tensor's astype is recorded too
                input_grad = input_grad.astype(operand.data.dtype)
            if input_grad.shape != operand.data.shape:
                input_grad = unbroadcast(input_grad, operand.data.shape, node, index)
            if self.anomaly:
                _check_finite(node, index, input_grad)
            results.append((operand, input_grad, False))
        return results


def _recorded_sum(key, previous, grad, in_place):
    return previous + grad


def needed_grads(node, grads):
    """(index, the input as `node` read it, its gradient) for each input whose gradient
    the rule gave and the node needs (the walk's own loop, `input_grads`, is inlined)."""
    for index, operand in enumerate(node.inputs):
        grad = grads[index]
        if grad is not None and node.needs_input_grad[index]:
            yield index, as_recorded(operand, node), grad


def made_by_rule(array, upstream, grads, node) -> bool:
    """The ownership rule: may the walk add into `array` (one of `grads`, what `node`'s rule
    returned for the upstream gradient `upstream`) in place?

    Yes for an array the rule has just made; no for the upstream gradient passed through
    (Add, Neg's input...), a view (Reshape, Transpose, a broadcast) or a read-only array (a
    cached constant). An op promises the rest with `fresh_gradients` (see `Op`): its rule
    never returns an array it saved, nor one array for two inputs. A node whose rule may
    return arrays it keeps elsewhere says `fresh_gradients = False` (a user's tg.Function).
    The test suite checks every op's promise on every rule it runs (tests/conftest.py).
    """
    return (
        array is not upstream
        and array.base is None
        and node.fresh_gradients
        and array.flags.writeable
    )


def _check_finite(node, index, grad):
    values = grad.data if is_tensor(grad) else grad
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
        wrapped = grad if is_tensor(grad) else new_tensor(grad, False, None)
        result = hook(wrapped)
        if result is not None:
            _check_hook_result(hook, tensor, result)
            grad = result if create_graph else result._data
    return grad


def _check_hook_result(hook, tensor, result):
    """A hook may replace a gradient, never change its shape or dtype (as PyTorch)."""
    name = getattr(hook, "__name__", type(hook).__name__)
    if not is_tensor(result):
        raise TypeError(f"hook '{name}' must return a Tensor or None, got {type(result).__name__}")
    if result.shape != tensor.shape:
        raise RuntimeError(
            f"hook '{name}' has changed the size of value: it returned a gradient of shape "
            f"{result.shape} for a tensor of shape {tensor.shape}"
        )
    if result.dtype != tensor.dtype:
        raise RuntimeError(
            f"hook '{name}' has changed the type of value: it returned a gradient of dtype "
            f"{result.dtype} for a tensor of dtype {tensor.dtype}"
        )


def accumulate_leaf(tensor, grad, create_graph, owned=False):
    """tensor.grad (+)= grad; the leaf takes `grad` without a copy when the walk owns it.

    The engine's gradients have the leaf's shape and dtype already, so this writes the slot
    `_grad`, past the checks of the `grad` property."""
    if create_graph:
        grad_tensor = grad if is_tensor(grad) else new_tensor(grad, False, None)
        tensor._grad = grad_tensor if tensor._grad is None else tensor._grad + grad_tensor
        return
    if type(grad) is not np.ndarray and is_tensor(grad):
        grad = grad._data
        owned = False
    leaf_grad = tensor._grad
    if leaf_grad is None:
        # The leaf must own its gradient array: later calls add into it in place.
        tensor._grad = new_tensor(grad if owned else np.array(grad, copy=True))
    elif leaf_grad._data.flags.writeable and leaf_grad._data.shape == grad.shape:
        np.add(leaf_grad._data, grad, out=leaf_grad._data)
        bump_version(leaf_grad)
    else:
        leaf_grad._data = leaf_grad._data + grad


def clear_leaf_grad(tensor, set_to_none=True):
    """What `zero_grad` does to one parameter: `.grad` becomes None (PyTorch's default), or
    with `set_to_none=False` its values become zeros in place, the gradient tensor cut from
    any graph that made it (as PyTorch's `grad.detach_(); grad.zero_()`)."""
    grad = tensor._grad
    if set_to_none or grad is None:
        tensor._grad = None
        return
    grad._ctx = None
    grad._requires_grad = False
    if grad._data.flags.writeable:
        grad._data[...] = 0
        bump_version(grad)
    else:  # an array the engine must not write into (one the user assigned, read-only)
        grad._data = np.zeros_like(grad._data)


class HookHandle:
    """Returned by `register_hook`; `remove()` unregisters the hook."""

    _next_key = 0

    def __init__(self, hooks):
        self.hooks = hooks
        self.key = HookHandle._next_key
        HookHandle._next_key += 1

    def remove(self):
        self.hooks.pop(self.key, None)
