"""Chains declared where they are built: `tg.scan` records its anchors, the scheduler reads them.

A `tg.scan` over n steps knows its chain x_0 -> x_1 -> ... -> x_n (the carries) as it
runs: nothing has to be searched. It records a `Declaration` keyed by the top anchor x_n;
a scan scheduler's walk, on reaching x_n, turns the declaration into a `Segment`
(`segment_of`: the top step's template, every step checked against it one column at a
time) and scans it. When a declared chain cannot be scanned, `CannotScan` says why, in
words that `backward_plan` shows, and the walk goes on through the steps one by one.
"""

import weakref

from .columns import check_columns
from .steps import CannotScan, Segment, build_template, shared_or_per_step

# id(top anchor) -> (a weak reference to it, its Declaration); an entry goes with its tensor.
# (Keyed by id: a Tensor's == is elementwise, so it cannot key a WeakKeyDictionary.)
_DECLARED = {}


class Declaration:
    """The anchors of a `tg.scan` below its top (x_0 .. x_{n-1}, lowest first: the top
    anchor x_n keys the declaration and is held only weakly), or the reason it cannot be
    scanned at all (`refusal`)."""

    def __init__(self, below, refusal=None):
        self.below = below
        self.refusal = refusal


def declare(top, declaration):
    """Record `declaration` for the chain whose top anchor is `top`."""
    key = id(top)
    _DECLARED[key] = (weakref.ref(top, lambda ref: _forget(key, ref)), declaration)


def _forget(key, ref):
    if _DECLARED.get(key, (None,))[0] is ref:  # (not a newer tensor's entry under a reused id)
        del _DECLARED[key]


def declared_at(tensor):
    """The declaration whose top anchor is `tensor`, or None."""
    entry = _DECLARED.get(id(tensor))
    return entry[1] if entry is not None and entry[0]() is tensor else None


def any_declared():
    """Whether a declared chain can still be backwarded (else the scan schedulers search
    the graph for chains, `finder.py`). A chain whose top node a backward has released
    (`Op.release`: no `retain_graph`) is forgotten here, though a compiled program or a
    kept output may hold its tensors."""
    for key, (ref, _) in list(_DECLARED.items()):
        top = ref()
        if top is None or top._ctx is None or top._ctx.saved is None:
            del _DECLARED[key]
    return bool(_DECLARED)


def declared_in(roots):
    """Whether the graph of `roots` holds an anchor of a declared chain (then the scan
    schedulers take its declared chains; else they search it for chains, `finder.py`).
    The search stops at the first anchor it meets: usually a few ops below the loss."""
    if not any_declared():
        return False
    anchors = set(_DECLARED)
    for _, declaration in _DECLARED.values():
        anchors.update(map(id, declaration.below))
    seen = set(map(id, roots))
    stack = list(roots)
    while stack:
        node = stack.pop()._ctx
        if node is None:
            continue
        for operand, needs in zip(node.inputs, node.needs_input_grad):
            if needs and id(operand) not in seen:
                if id(operand) in anchors:
                    return True
                seen.add(id(operand))
                stack.append(operand)
    return False


def segment_of(declaration, top, capture=None, min_steps=2):
    """The `Segment` of a declared chain (its top steps that share the top step's template:
    a constant x_0 leaves the lowest step to the walk), or `CannotScan`."""
    if declaration.refusal:
        raise CannotScan(declaration.refusal)
    anchors = declaration.below + [top]
    if len(anchors) - 1 < min_steps:
        raise CannotScan(f"{len(anchors) - 1} step(s), fewer than {min_steps}")
    lower, upper = anchors[-2], anchors[-1]
    built = build_template(lower, upper, capture)
    if built is None:
        raise CannotScan(
            "the step is not a chain step (an op without a Jacobian rule or with a hook, "
            "a carry of another shape, or one that does not depend on the carry)"
        )
    template = built[0]
    count, tensors, nodes, outside = check_columns(template, anchors[::-1])
    if count < min_steps:
        raise CannotScan(f"only the last {count} step(s) share the last step's ops and shapes")
    # The walk visits what is pending among the steps' tensors before the scan
    # (`scan_scheduler.walk`); that is right when no step reads a tensor made inside the
    # segment but its own and the carry: every other input made before the lowest step.
    bound = min(column[count - 1].sequence for column in nodes)
    for _, _, column in outside:
        if any(_made_after(operand, bound) for operand in column[:count]):
            raise CannotScan("a step reads a tensor made by an earlier step besides the carry")
    per_step = shared_or_per_step(
        template, [(slot, k, column[count - 1 :: -1]) for slot, k, column in outside], count
    )
    if per_step is None:
        raise CannotScan("the steps' inputs differ in shape")
    columns = [column[count - 1 :: -1] for column in tensors]
    step_nodes = [column[count - 1 :: -1] for column in nodes]
    return Segment(template, anchors[-count - 1 :], columns, per_step, step_nodes)


def _made_after(operand, bound):
    node = getattr(operand, "_ctx", None)
    return node is not None and node.sequence > bound


def first_sequence(segment):
    """The creation number of the segment's first node: its lowest step's tensors, and
    everything made after them up to its top anchor, are the segment's range."""
    return min(column[0].sequence for column in segment.nodes)
