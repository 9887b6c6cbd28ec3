"""Chains declared where they are built: a `tg.scan` records its chain as it runs
(`declare`: the anchors and its top step's template, keyed by the top anchor), and a scan
scheduler's walk, on reaching the top, makes its `Segment` (`segment_of`) or says why it
cannot be scanned (`CannotScan`, in words `backward_plan` shows) and walks its steps.
"""

import copy
import weakref
from typing import NamedTuple

from .steps import CannotScan, Segment, build_template

# id(top anchor) -> its Declaration; an entry goes with its tensor. (Keyed by id: a
# Tensor's == is elementwise, so it cannot key a WeakKeyDictionary.)
_DECLARED = {}


class Declaration(NamedTuple):
    """What a `tg.scan` states about its chain: its top anchor x_n (a weak reference), the
    anchors below it (x_0 .. x_{n-1}, lowest first) and the top step's template, or the
    reason the chain cannot be scanned at all (`refusal`)."""

    top: weakref.ref
    below: list
    template: object
    refusal: object  # (a str, or None)


def declare(anchors, refusal=None):
    """Record the chain x_0 .. x_n (`anchors`, lowest first) that a `tg.scan` made, with its
    top step's template; `refusal` says why it cannot be scanned, if it cannot."""
    top = anchors[-1]
    built = None if refusal else build_template(anchors[-2], top, None)
    if built is None and refusal is None:
        refusal = (
            "the step is not a chain step (an op without a Jacobian rule or with a hook, "
            "an input made in each step that its op's rule cannot take per step, such as "
            "a Linear's weight, a carry of another shape, or one that does not depend on "
            "the carry)"
        )
    template = None if built is None else built[0]
    _DECLARED[id(top)] = Declaration(weakref.ref(top), anchors[:-1], template, refusal)
    weakref.finalize(top, _DECLARED.pop, id(top), None)  # (it goes with its tensor)


def declared_at(tensor):
    """The declaration whose top anchor is `tensor`, or None."""
    declaration = _DECLARED.get(id(tensor))
    return declaration if declaration is not None and declaration.top() is tensor else None


def declared_in(roots):
    """The ids of the declared chains' top anchors when the graph of `roots` holds an
    anchor of one (the scan schedulers then scan the declared chains), else an empty set
    (they search the graph, `loops.py`). Chains whose top node a backward has released are
    forgotten first; the search stops at the first anchor (usually a few ops down)."""
    anchors = set()
    for key, declaration in list(_DECLARED.items()):
        top = declaration.top()
        if top is None or top._ctx is None or top._ctx.saved is None:
            del _DECLARED[key]
        else:
            anchors.add(key)
            anchors.update(map(id, declaration.below))
    seen = set(map(id, roots))
    stack = list(roots) if anchors else []
    while stack:
        node = stack.pop()._ctx
        if node is None:
            continue
        for operand, needs in zip(node.inputs, node.needs_input_grad):
            if needs and id(operand) not in seen:
                if id(operand) in anchors:
                    return set(_DECLARED)
                seen.add(id(operand))
                stack.append(operand)
    return set()


def segment_of(declaration, top, min_steps=2):
    """The `Segment` of a declared chain (its top steps made as the declared template says:
    a constant x_0 leaves the lowest step to the walk), or `CannotScan`."""
    if declaration.refusal:
        raise CannotScan(declaration.refusal)
    anchors = declaration.below + [top]
    if len(anchors) - 1 < min_steps:
        raise CannotScan(f"{len(anchors) - 1} step(s), fewer than {min_steps}")
    template = copy.copy(declaration.template)  # (its wiring is the segment's own)
    segment = Segment(template, anchors[::-1], min_steps)
    # The walk visits what is pending among the steps' tensors before the scan
    # (`scan_scheduler.scan_at`): right when the steps' other inputs are made before them.
    for operand in segment.outside_operands:
        if operand._ctx is not None and operand._ctx.sequence > segment.first_sequence:
            raise CannotScan("a step reads a tensor made by an earlier step besides the carry")
    return segment
