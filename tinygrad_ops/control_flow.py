"""`tg.scan`: a loop over the first axis of its inputs that declares its chain (lax.scan's shape).

The carries of a scan are a chain x_0 -> x_1 -> ... -> x_n: its backward is the
recurrence g_{t-1} = g_t J_t + e_{t-1} (docs/scan.md). `scan` runs the steps eagerly, as a
Python loop would, and records the chain as it builds it, so that a scan scheduler (or
`auto`) takes it as one parallel prefix scan without searching the graph for it.
"""

from .ops.base import LAST_CHANGE
from .ops.shape import Stack
from .ops.unbind import rows
from .scheduler.declared import declare
from .tensor import Tensor, stack


def scan(step, init, xs=None, length=None, reverse=False):
    """carry, ys = scan(step, init, xs): `carry, y = step(carry, x)` for each x along the
    first axis of `xs`, as `jax.lax.scan`.

    `init` is the first carry (a Tensor, or a tuple of Tensors); `xs` a Tensor or a tuple
    of Tensors of one length along their first axis (or None, with `length` steps of
    `step(carry, None)`). `step` must return a carry of the structure, shapes and dtypes
    of `init`, and a `y` (a Tensor, a tuple of them, or None). Returns the last carry and
    the `y`s stacked along a new first axis (`ys[t]` made from `xs[t]`). `reverse=True`
    runs from the last x to the first.

    The carries are recorded as one chain: with `scheduler="blelloch"` (or another scan,
    or `"auto"` where its cost model says it pays) the backward through them is one
    prefix scan. A carry that is one Tensor is scanned; a tuple carry is walked (carry
    one joint state, such as an LSTM's [h | c], to have it scanned). What a step computes
    without reading the carry (an RNN's x_t W_ihᵀ + b) is cheaper computed for every step
    before the scan and passed as `xs`: step t gets its row, and the rows' backward is
    one stack of their gradients (docs/scan.md).

    >>> import tinygrad_ops as tg
    >>> w = tg.Tensor([[0.5, -0.2], [0.1, 0.3]], requires_grad=True)
    >>> def step(h, x):
    ...     h = (h @ w + x).tanh()
    ...     return h, h.sum()
    >>> h, ys = tg.scan(step, tg.zeros(2), tg.ones((16, 2)))
    >>> h.shape, ys.shape
    ((2,), (16,))
    >>> (h.sum() + ys.sum()).backward(scheduler="blelloch")
    >>> w.grad.shape
    (2, 2)
    """
    sequences = _as_sequences(xs)
    count = _length(sequences, length)
    # Every step's inputs are taken before the first step: a step then reads only its
    # carry and tensors made before the scan (what makes the chain's check cheap).
    per_step = list(zip(*(_steps_of(sequence) for sequence in sequences))) or [None] * count
    if isinstance(xs, Tensor):  # one sequence: each step gets its tensor, not a 1-tuple
        per_step = [inputs[0] for inputs in per_step]
    carry = init
    anchors = [init]
    ys = [None] * count
    for t in reversed(range(count)) if reverse else range(count):
        result = step(carry, per_step[t])
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(
                "scan: step must return a pair (carry, y), got "
                f"{type(result).__name__}{'' if not isinstance(result, tuple) else len(result)}"
            )
        carry, ys[t] = result
        _check_carry(init, carry)
        anchors.append(carry)
    _declare(init, anchors)
    return carry, _stacked(ys)


def _as_sequences(xs):
    if xs is None:
        return []
    sequences = [xs] if isinstance(xs, Tensor) else list(xs)
    for sequence in sequences:
        if not isinstance(sequence, Tensor):
            raise TypeError(
                f"scan: xs must be a Tensor or a tuple of Tensors, got {type(sequence).__name__}"
            )
        if sequence.ndim == 0:
            raise ValueError("scan: xs must have a first axis to scan over, got a 0-d tensor")
    return sequences


def _steps_of(sequence):
    """sequence[0], sequence[1], ...: the tensors a `stack` was made of, where `sequence`
    is one (the `ys` of an earlier scan: the next layer of a stacked RNN) and none has
    changed in place since, else its rows (`ops/unbind.py`: their backward is one stack
    of the steps' gradients, where T slices `sequence[t]` would cost T arrays of the
    whole sequence's size)."""
    node = sequence._ctx
    if (
        type(node) is Stack
        and node.axis == 0
        and node.saved is not None  # (not released by a backward)
        and LAST_CHANGE[0] < node.sequence
        and all(
            isinstance(operand, Tensor) and operand.dtype == sequence.dtype
            for operand in node.inputs
        )
    ):
        return list(node.inputs)
    return rows(sequence)


def _length(sequences, length):
    lengths = {sequence.shape[0] for sequence in sequences}
    if length is not None:
        lengths.add(length)
    if len(lengths) != 1:
        raise ValueError(
            "scan: xs (and length) must agree on the number of steps, got "
            f"{sorted(lengths) if lengths else 'neither xs nor length'}"
        )
    (count,) = lengths
    if count < 1:
        raise ValueError("scan: at least one step is needed (xs of length 0)")
    return count


def _leaves(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _check_carry(init, carry):
    """The carry `step` returned has `init`'s structure, shapes and dtypes (as jax asks)."""
    if (  # the common case, once per step
        type(carry) is Tensor
        and type(init) is Tensor
        and carry.shape == init.shape
        and carry.dtype == init.dtype
    ):
        return
    before, after = _leaves(init), _leaves(carry)
    same = len(before) == len(after) and isinstance(init, tuple) == isinstance(carry, tuple)
    for old, new in zip(before, after):
        same = same and isinstance(new, Tensor) and new.shape == old.shape
        same = same and new.dtype == old.dtype
    if not same:
        raise TypeError(
            f"scan: step must return a carry like init ({_describe(init)}), got {_describe(carry)}"
        )


def _describe(value):
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_describe(item) for item in value) + ")"
    if isinstance(value, Tensor):
        return f"Tensor{tuple(value.shape)} {value.dtype}"
    return type(value).__name__


def _declare(init, anchors):
    top = anchors[-1]
    if isinstance(init, tuple):
        refusal = (
            f"the carry is a tuple of {len(init)} tensors: walked (one joint tensor is scanned)"
        )
        top = top[0]
        anchors = [leaves[0] for leaves in anchors]
    else:
        refusal = None
    if top.requires_grad and top._ctx is not None:
        declare(anchors, refusal)


def _stacked(ys):
    if all(y is None for y in ys):
        return None
    first = ys[0]
    if isinstance(first, (tuple, list)):
        return tuple(stack([y[k] for y in ys]) for k in range(len(first)))
    return stack(ys)
