"""The data model of a chain (docs/scan.md, "How a chain is scanned"): a step's `Template`,
made by `build_template` for the top step of a `tg.scan` (declared.py) or of a loop
(loops.py); `steps_as_template`, which checks the steps below the top one against it; and
the `Segment` of the steps made alike, kept by columns (a slot over all the steps), which
the executor scans.
"""

from typing import NamedTuple

import numpy as np

from ..ops.base import Op
from ..tensor import Tensor
from . import jacobians


class CannotScan(ValueError):  # noqa: N818 (a reason, shown by backward_plan)
    """Why a chain is walked instead of scanned, in words for `backward_plan`."""


class Template:
    """The shape of one step: its slots (tensors) and how each op's inputs are wired.

    Slot 0 is the step's upper anchor x_i. Each other slot is reached as input `k` of an
    earlier slot (`paths`). `wiring[j][k]` says what input k of slot j is: "prev" (x_{i-1}),
    ("slot", m), ("shared", tensor) (the same tensor in every step), "step" (a different
    tensor in every step, outside the step), "outside" (not yet told apart) or "const"
    (no gradient needed).
    """

    def __init__(self, slots, paths, wiring, reads, outside, chain, order, kinds):
        made = [tensor._ctx for tensor in slots]
        self.classes = [type(node) for node in made]
        self.paths = paths
        self.wiring = wiring
        self.outside_reads = outside  # (slot, input index) of each input from outside the step
        self.shapes = [(tensor.data.shape, tensor.data.dtype.str) for tensor in slots]
        self.needs = [node.needs_input_grad for node in made]
        self.options = [node_options(node) for node in made]  # (attribute, value) pairs
        # The slots that depend on x_{i-1}, consumers first, and their inputs on the chain:
        # chain_inputs[slot] lists (input index, "prev" or the input's slot).
        self.chain_slots = [slot for slot in order if slot in chain]
        self.chain_inputs = chain
        self.order = order  # slots, consumers before inputs
        # "diagonal" when every op on the paths from x_{i-1} to x_i is elementwise (`kinds`:
        # the Jacobian kinds met on them)
        self.jacobian_kind = "dense" if "dense" in kinds else "diagonal"
        # The reads the paths do not prove, checked by identity: (slot, input index, "prev"
        # or the slot read by a second op).
        self.identity_reads = reads
        # The input indices that lead from x_i down to x_{i-1}, through its first read.
        slot, k = next((slot, k) for slot, k, read in self.identity_reads if read == "prev")
        self.route = [k]
        while slot:
            slot, k = paths[slot]
            self.route.insert(0, k)


def node_options(node):
    """(attribute, value) for each option the node has set: the attributes its op class
    sets besides those of `Op` (an exponent)."""
    options = []
    for klass in type(node).__mro__:
        if klass is Op:
            break
        names = klass.__dict__.get("__slots__", ())
        options.extend((name, getattr(node, name)) for name in names if hasattr(node, name))
    return tuple(options)


_SIMPLE_OPTIONS = (int, float, complex, str, bool, bytes, type(None), np.dtype)
MISSING = object()  # an option a node does not have


def is_simple(value):
    """Whether an option is compared by value (`same_option`): numbers, names, dtypes,
    slices and `...` (an index), and tuples and lists of them."""
    if type(value) is tuple or type(value) is list:  # (Concatenate's bounds: a list)
        return all(map(is_simple, value))
    if type(value) is slice:
        return all(map(is_simple, (value.start, value.stop, value.step)))
    return type(value) in _SIMPLE_OPTIONS or value is Ellipsis


def same_option(value, expected):
    """Options equal by value for numbers, names and tuples of them, else the same object."""
    if value is expected:
        return True
    return type(value) is type(expected) and is_simple(value) and value == expected


class OutsideColumn(NamedTuple):
    """A per-step input of a segment: input `index` of `slot`, one tensor per step."""

    slot: int
    index: int
    operands: list


class Segment:
    """The steps from the top down (`anchors`: x_n, x_{n-1}, ...) made as `template` says
    (`steps_as_template`) and kept by `kept(anchors, count, nodes)` (the finder's rule), by
    columns: `anchors` x_0 .. x_n, `columns[slot]` the slot's tensor in every step (step 0
    is x_0 -> x_1), `nodes[slot]` its node, whose saved values the executor stacks. An input
    from outside the steps is shared (the same tensor in every step, `shared_operands`) or
    per step (an `OutsideColumn` in `outside`), as the template's wiring then says.
    `CannotScan` when fewer than `min_steps` steps are made so, or the inputs do not stack.
    """

    def __init__(self, template, anchors, min_steps, kept=None):
        count, tensors, nodes = steps_as_template(template, anchors)
        if kept is not None:
            count = kept(anchors, count, nodes)
        if count < min_steps:
            raise CannotScan(f"only the last {count} step(s) share the last step's ops and shapes")
        self.outside, self.shared_operands = [], []
        wiring = [list(codes) for codes in template.wiring]
        for slot, k in template.outside_reads:
            operands = [node.inputs[k] for node in nodes[slot][count - 1 :: -1]]
            first = operands[0]
            if all(operand is first for operand in operands):
                wiring[slot][k] = ("shared", first)
                self.shared_operands.append(first)
                continue
            if any(operand.shape != first.shape for operand in operands):
                raise CannotScan("the steps' inputs differ in shape")
            if not template.classes[slot].takes_per_step(k):
                raise CannotScan(
                    f"input {k} of {template.classes[slot].__name__} differs from step to "
                    "step, and its rule sums over the steps (a weight made in each step)"
                )
            wiring[slot][k] = "step"
            self.outside.append(OutsideColumn(slot, k, operands))
        template.wiring = wiring
        self.template = template
        self.anchors = anchors[count::-1]
        self.columns = [column[count - 1 :: -1] for column in tensors]
        self.nodes = [column[count - 1 :: -1] for column in nodes]  # (chain order)
        self.length = count
        self.state_shape = anchors[0].shape
        self.jacobian_kind = template.jacobian_kind  # "diagonal" when every op on it is
        self.ops_per_step = len(template.classes)
        self.first_sequence = min(column[0].sequence for column in self.nodes)  # (its first)
        # The inputs of the steps from outside them: every per-step one, each shared one once.
        per_step = [operand for column in self.outside for operand in column.operands]
        self.outside_operands = per_step + self.shared_operands
        # The ids of tensors made since the first step that the walk leaves pending until
        # the scan: those its per-step inputs are made from (set by loops.py; None for a
        # declared chain, whose steps read no such tensor: declared.segment_of checks).
        self.held = None

    def describe(self):
        classes = self.template.classes
        names = "->".join(classes[slot].__name__ for slot in reversed(self.template.order))
        return f"{self.length} steps of [{names}]"


def build_template(lower, upper, capture, excluded=(), max_slots=None):
    """The (Template, slots) of the step from `lower` (x_{i-1}) to `upper` (x_i), or None if
    the step breaks a rule (`slots`: the step's tensors, x_i first).

    The step's tensors (its slots) are found breadth first from x_i: an input made after
    x_{i-1} and in none of the `excluded` sets of ids (another chain's tensors, loops.py)
    is a slot; x_{i-1} is "prev", another tensor that needs a gradient "outside", anything
    else "const". Every slot's op must have a Jacobian rule and no hooks (nor be a tg.grad
    input, in `capture`), and a row-wise one on the chain (`_chain_inputs`); with
    `max_slots`, a step of more tensors is none.
    """
    if upper.shape != lower.shape or upper._ctx is None:
        return None
    bound = -1 if lower._ctx is None else lower._ctx.sequence
    slots = [upper]
    slot_of = {id(upper): 0}
    paths, wiring, reads, outside = [None], [], [], []
    cursor = 0
    while cursor < len(slots):
        if max_slots is not None and len(slots) > max_slots:
            return None
        tensor = slots[cursor]
        node = tensor._ctx
        if not jacobians.has_rule(node) or tensor._hooks:
            return None
        if capture is not None and id(tensor) in capture:
            return None
        codes = []
        for k, (operand, needs) in enumerate(zip(node.inputs, node.needs_input_grad)):
            if not needs or not isinstance(operand, Tensor):
                codes.append("const")
            elif operand is lower:
                codes.append("prev")
                reads.append((cursor, k, "prev"))
            elif id(operand) in slot_of:  # (read a second time)
                codes.append(("slot", slot_of[id(operand)]))
                reads.append((cursor, k, slot_of[id(operand)]))
            elif (
                operand._ctx is not None
                and operand._ctx.sequence > bound
                and not any(id(operand) in ids for ids in excluded)
            ):
                codes.append(("slot", len(slots)))
                slot_of[id(operand)] = len(slots)
                slots.append(operand)
                paths.append((cursor, k))
            else:
                codes.append("outside")
                outside.append((cursor, k))
        wiring.append(codes)
        for k, code in enumerate(codes):  # (a slot or the carry differs from step to step)
            if code not in ("const", "outside") and not node.takes_per_step(k):
                return None
        cursor += 1
    order = sorted(range(len(slots)), key=lambda slot: slots[slot]._ctx.sequence, reverse=True)
    kinds = set()
    chain = _chain_inputs(slots, wiring, order, kinds)
    if chain is None or 0 not in chain:
        return None
    template = Template(slots, paths, wiring, reads, outside, chain, order, kinds)
    return template, slots


def _chain_inputs(slots, wiring, order, kinds):
    """{slot: [(input index, "prev" or the input's slot)]} for the slots that depend on
    x_{i-1}: their inputs on the chain (adding the Jacobian kinds met to `kinds`); None if
    an op on such a path has no row-wise Jacobian through that input (a broadcast
    elementwise input, W @ x, a reduction)."""
    chain = {}
    for slot in reversed(order):  # inputs before consumers
        node = slots[slot]._ctx
        for k, code in enumerate(wiring[slot]):
            if code == "prev":
                target = "prev"
            elif isinstance(code, tuple) and code[0] == "slot" and code[1] in chain:
                target = code[1]
            else:
                continue
            kind = jacobians.chain_kind(node, k, slots[slot].data.shape)
            if kind is None:
                return None
            kinds.add(kind)
            chain.setdefault(slot, []).append((k, target))
    return chain


def steps_as_template(template, anchors):
    """(count, tensors, nodes): how many steps from the top (`anchors`: x_n, x_{n-1}, ...,
    x_0) are made as `template` says, and each slot's tensors and nodes in them, top-down.

    Step i matches when each slot is made by the template's op class, with its options
    and needs_input_grad, no hook, its shape and dtype, and reads what the template wires
    it to: the step's own carry x_{i-1} and slots, by identity (the carries' shapes
    `tg.scan` checked). Each check is one pass over a slot's column of steps."""
    count = len(anchors) - 1
    tensors, nodes = [], []
    for slot, op_class in enumerate(template.classes):
        if slot == 0:
            column = anchors[:-1]
        else:
            parent, k = template.paths[slot]
            column = [node.inputs[k] for node in nodes[parent][:count]]
        made = [getattr(tensor, "_ctx", None) for tensor in column]
        needs = template.needs[slot]
        flags = [
            type(node) is op_class and node.needs_input_grad == needs and tensor._hooks is None
            for tensor, node in zip(column, made)
        ]
        count = agreeing(flags, count)
        if "const" in template.wiring[slot]:
            # (A slot's shape and dtype follow from its inputs' and its options; only an
            # input without a gradient, x_t or a number, can change them.)
            shape, dtype = template.shapes[slot][0], np.dtype(template.shapes[slot][1])
            flags = [
                tensor._data.shape == shape and tensor._data.dtype == dtype
                for tensor in column[:count]
            ]
            count = agreeing(flags, count)
        for name, value in template.options[slot]:
            options = [getattr(node, name, MISSING) for node in made[:count]]
            count = agreeing([same_option(option, value) for option in options], count)
        tensors.append(column)
        nodes.append(made)
    for slot, k, source in template.identity_reads:
        expected = anchors[1:] if source == "prev" else tensors[source]
        reads = [node.inputs[k] for node in nodes[slot][:count]]
        count = agreeing([read is tensor for read, tensor in zip(reads, expected)], count)
    return count, [column[:count] for column in tensors], [column[:count] for column in nodes]


def agreeing(flags, count):
    """How many of the first `count` steps come before the first False among `flags`."""
    return flags.index(False) if False in flags[:count] else count
