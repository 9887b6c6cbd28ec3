"""The Op contract: the base class of every primitive, its saved values, and the tape record.

How the tape is recorded
    Every primitive is an `Op` subclass with `forward(*arrays)` and `backward(grad_output)`.
    `Op.apply(*operands)` runs `forward` on the operands' numpy arrays; when grad mode is on
    and an operand requires grad, the op instance itself becomes the *node* of the tape and
    is stored on the output tensor (`out._ctx`). Leaves have no node; `no_grad` records nothing.

How higher-order gradients work (decided once, here)
    Backward rules are written with operations that numpy arrays and Tensors both support
    (`+ - * / ** @`, `.sum`, `.reshape`, `.swapaxes`, comparisons) plus the few helpers in
    `ops/dual.py` (`log`, `exp`, `broadcast_to`, ...) and beside the ops they record
    (`elementwise.where`, `shape.scatter_add`). A plain backward passes numpy
    arrays through the rules: fast, nothing recorded. `create_graph=True` passes Tensors
    instead, with grad mode on, so the backward pass is itself recorded and can be
    differentiated again (Hessian-vector products). One rule, two uses.

The binding to Tensor
    The ops sit below `tensor.py` (which calls them), yet `apply` must wrap its result in a
    Tensor. `tensor.py` hands its class to `bind_tensor` once, at import; this module (and the
    engine, through `new_tensor`/`is_tensor`) uses the bound class from then on.
"""

from __future__ import annotations

import functools
import itertools
import traceback

import numpy as np

from ..mode import STATE

Tensor = None  # the Tensor class, bound by tensor.py at import (see the module docstring)


def values_read(value, what):
    """Python is about to read `value`'s numbers (`.item()`, a comparison, an order, a
    mask, class indices, or, `what` GRAD_READ, which `.grad` a leaf has) and pass what it
    finds on as a constant: the report of that to the watcher of the computation
    (`mode.Trace.read`; tg.compile refuses it when they change from call to call, since a
    replay would reuse the first call's, or guards what it found)."""
    STATE.tracer.read(value, what)


GRAD_READ = "the .grad of"  # values_read's `what` for a read of `tensor.grad` by Python


def values_written(tensor, source, what=None):
    """`source`'s values were just copied into `tensor`'s own array (an in-place op,
    `copy_`); `source` None: written some other way (`what` says how). Reported to the
    watcher of the computation (`mode.Trace.write`)."""
    STATE.tracer.write(tensor, source, what)


def bind_tensor(tensor_class):
    """Called once by `tensor.py`: the class `apply` wraps its results in."""
    global Tensor
    Tensor = tensor_class


def is_tensor(value) -> bool:
    """True for a Tensor (the bound class), as `torch.is_tensor`.

    >>> import tinygrad_ops as tg
    >>> tg.is_tensor(tg.ones(2)), tg.is_tensor([1.0])
    (True, False)
    """
    return isinstance(value, Tensor)


def new_tensor(data, requires_grad=False, node=None):
    """A Tensor around `data` (no copy, no checks): how the engine makes tensors."""
    return Tensor._make(data, requires_grad, node)


def as_operand(value):
    """An operand for an op: Tensors and numbers as they are, numpy scalars as Python numbers.

    A numpy scalar such as np.float64(2) would upcast a float32 tensor under numpy's
    promotion rules; as a Python number it is 'weak' and keeps the tensor's dtype.
    """
    if isinstance(value, np.generic):  # first: np.float64 is also a Python float
        return value.item()
    if isinstance(value, (Tensor, np.ndarray, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return Tensor(value)
    return None


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

    Saved inputs and the saved output are recognised by identity when backward reads them:
    one changed in place after the node was recorded makes backward raise (see
    `bump_version`), and a `create_graph` backward gets them back as Tensors so that it is
    itself recorded.
    """

    __slots__ = (
        "inputs",
        "needs_input_grad",
        "saved",
        "saved_output",
        "sequence",
        "graph_mode",
        "graph_output",
        "forward_trace",
        "__weakref__",
    )
    # Ops whose output is a numpy view of their input share the input's version counter.
    is_view = False
    # The rule's results are arrays it has just made (or views, the upstream gradient, or
    # read-only arrays, which the walk recognises): never an array it saved, never one
    # array for two inputs, so the walk may add into them in place. False for a rule that
    # may return an array it keeps elsewhere (see made_by_rule).
    fresh_gradients = True
    # Ops that promote their operands' dtypes set a function of the operands (ops/dtypes.py).
    promotion = None

    def forward(self, *arrays, **options):  # pragma: no cover - every op overrides it
        raise NotImplementedError

    def backward(self, grad_output):  # pragma: no cover - every op overrides it
        raise NotImplementedError

    def jacobian_kind(self, index):
        """The kind of the Jacobian through input `index` ("diagonal", "dense") for an op
        that can sit on a scanned chain there; None: walked, not scanned (ops/jacobian.py)."""
        return None

    def jacobian(self, index):  # pragma: no cover - only ops with a jacobian_kind are asked
        """The Jacobian through input `index`, on a node whose saved values are stacked
        over the steps of a chain (ops/jacobian.py)."""
        raise NotImplementedError(f"{type(self).__name__} is walked, not scanned")

    @staticmethod
    def takes_per_step(index):
        """Whether input `index` may differ from step to step of a scanned chain, whose
        backward runs this op's rule once for all the steps (saved values stacked on a
        leading axis): True for an op whose rule broadcasts, which gives each step its own
        gradient; an op whose rule sums over an input's leading axes says False for it."""
        return True

    def save_for_backward(self, *values):
        """Keep `values` (input arrays, the output array, or any other array) for backward."""
        self.saved = values

    @property
    def saved_tensors(self) -> tuple:
        """The saved values: numpy arrays, or Tensors for inputs/output in a create_graph pass."""
        saved = self.saved
        if saved is None:
            raise RuntimeError(_FREED_MESSAGE.format(op=type(self).__name__))
        if LAST_CHANGE[0] > self.sequence and self.saved_output is not None:
            changed = self.changed_saved_box()  # something changed in place since: look
            if changed is not None:
                raise RuntimeError(
                    f"one of the tensors needed for the gradient of {type(self).__name__} "
                    f"has been modified by an in-place operation after the op recorded it: "
                    f"it is at version {changed[0]}. Use the out-of-place op (e.g. x.relu() "
                    "instead of x.relu_()) or copy the tensor first."
                )
        if not self.graph_mode:
            return saved
        output = getattr(self, "graph_output", None)
        values = list(saved)
        for index, value in enumerate(saved):
            source = self._saved_source(value)
            if source is None:
                continue
            if source is not self.saved_output:
                values[index] = source  # an input
            elif output is not None and output.data is value:
                values[index] = output
            else:  # the output, unknown here: a constant (its own dependence is lost)
                values[index] = Tensor._make(value, False, None)
        return tuple(values)

    def _saved_source(self, value):
        """Where saved `value` came from: the input Tensor whose array it is, `saved_output`
        for the output's array, or None (another array or a number: nothing to watch)."""
        if type(value) is not np.ndarray:
            return None
        output = self.saved_output
        if output is not None and value is output[0]:
            return output
        for operand in self.inputs:
            if isinstance(operand, Tensor) and value is operand._data:
                return operand
        return None

    def changed_saved_box(self):
        """The version box of a saved input or of the saved output that changed in place
        after this node was recorded (it holds a later stamp than the node's sequence
        number: see `bump_version`), or None."""
        for value in self.saved:
            source = self._saved_source(value)
            if source is None:
                continue
            box = source[1] if source is self.saved_output else source._version
            if box[1] > self.sequence:
                return box
        return None

    def release(self, husks=None):
        """Free the saved buffers (a later backward through this node raises) and let go of
        the input tensors' arrays (see `released_inputs`)."""
        self.saved = self.saved_output = None
        for operand in self.inputs:  # (most nodes of a small graph hold nothing worth freeing)
            kind = type(operand)
            if kind is Tensor:
                operand = operand._data
            elif kind is not np.ndarray:
                continue  # a number
            if operand.nbytes >= RELEASE_BYTES:
                self.inputs = released_inputs(self.inputs, {} if husks is None else husks)
                return

    @classmethod
    def apply(cls, *operands, promoted=False, **options):
        """Run the op on Tensors (or plain numbers/arrays, taken as constants) and record it.

        `promoted=True` says the operands share their result dtype already, so that type
        promotion has nothing to do (the operators know it for `a * b` of one float dtype).
        """
        given = operands  # (tg.compile replays a promotion of numpy arguments)
        if cls.promotion is not None and not promoted:  # PyTorch's (ops/dtypes.py)
            operands = cls.promotion(operands)
        node = cls()
        node.saved = ()
        # One pass over the operands: their arrays and which of them need a gradient.
        arrays = []
        needs_input_grad = []
        recording = False
        for operand in operands:
            if isinstance(operand, Tensor):
                arrays.append(operand._data)
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
        if type(out_data) is not np.ndarray:  # a numpy scalar (numpy's result for 0-d inputs)
            out_data = as_output_array(node, out_data)
        out = Tensor._make(out_data, recording, node if recording else None)
        if cls.is_view and out_data.base is not None and isinstance(operands[0], Tensor):
            out._version = operands[0]._version
        if recording:
            record(node, operands)
            # (read only if something changes in place: see bump_version)
            node.saved_output = (out_data, out._version) if node.saved else None
        STATE.tracer.op(node, operands, options, out, given)
        return out


def as_output_array(node, value):
    """The 0-d array of an op's numpy-scalar result, also in what the op saved: a saved
    output is recognised by identity (a create_graph backward reads the output Tensor for
    it; a saved scalar would be a constant there, and the second derivative would lose it)."""
    array = np.asarray(value)
    if node.saved:
        node.saved = tuple(array if saved is value else saved for saved in node.saved)
    return array


# Inputs smaller than this stay referenced by a released node: replacing them would free
# little and cost more than a small op (a training step of tiny tensors would pay ~5%).
RELEASE_BYTES = 4096


def released_inputs(inputs, husks):
    """What a node keeps of its inputs after backward released it.

    A parameter (a leaf that requires grad) stays: it is alive anyway, and a gradient sent
    through a node that saved nothing must still reach it. Every other tensor of at least
    `RELEASE_BYTES` becomes its husk (`Tensor._released`: shape, dtype, name and history,
    no values), so a kept loss does not keep the activations alive. `husks` maps the id
    of a tensor to (tensor, husk) over one release, so that two consumers of one tensor
    share its husk (a graph drawn afterwards stays connected).
    """
    kept = []
    for operand in inputs:
        if isinstance(operand, Tensor):
            if operand._data.nbytes >= RELEASE_BYTES and not (
                operand._ctx is None and operand._requires_grad
            ):
                pair = husks.get(id(operand))
                if pair is None:
                    pair = husks[id(operand)] = (operand, operand._released())
                operand = pair[1]
        elif isinstance(operand, np.ndarray) and operand.nbytes >= RELEASE_BYTES:
            operand = placeholder(operand.shape, operand.dtype)
        kept.append(operand)
    return tuple(kept)


@functools.lru_cache(maxsize=256)
def placeholder(shape, dtype):
    """A read-only array of `shape` and `dtype` that holds one element (stride 0).

    Cached: every release of a training step asks for the same few shapes, and
    `np.broadcast_to` costs about 5 us (10% of a small step's overhead when made anew).
    """
    return np.broadcast_to(np.zeros((), dtype=dtype), shape)


def record(node, inputs):
    """Make `node` a node of the tape, consuming `inputs` (for Op and tg.Function alike)."""
    node.inputs = inputs
    node.sequence = next(_SEQUENCE)
    node.graph_mode = False
    if STATE.anomaly:
        node.forward_trace = "".join(traceback.format_stack()[:-2])


# Creation order of the nodes: a node is always created after the nodes of its inputs, so
# sorting by it gives a topological order (PyTorch's engine orders by a sequence number too).
# In-place changes draw their stamps from the same count (see `bump_version`).
_SEQUENCE = itertools.count()

# The stamp of the newest in-place change: a node recorded after it (a larger sequence
# number) has saved values that nothing has changed since, which backward sees at once.
LAST_CHANGE = [-1]


def bump_version(tensor):
    """Note an in-place change of `tensor`'s values (every in-place write calls this).

    A version box is `[version, stamp]`, shared by a tensor and its views: the version
    counts the changes (as PyTorch's `_version`), the stamp says when the last one happened,
    on the clock of the nodes' sequence numbers. A node recorded before the change (its
    sequence number below the stamp) that saved these values refuses to backward.
    Checking costs nothing until something changes in place: `saved_tensors` compares its
    sequence number with `LAST_CHANGE` and looks at the boxes only when that is later.
    """
    box = tensor._version
    box[0] += 1
    box[1] = LAST_CHANGE[0] = next(_SEQUENCE)


def node_name(node) -> str:
    """The op's name for messages: the user's class for a custom Function's node."""
    function = getattr(node, "function", None)
    return function.__name__ if function is not None else type(node).__name__
