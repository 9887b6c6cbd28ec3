"""Looking again once a chain is scanned: the chain below it (docs/scan.md, "How a chain
is scanned").

The lower layer of a stacked RNN is a chain whose states are read by its own next step
and by the upper layer's steps: the first look cannot prove it from the output, but once
the upper chain is scanned every gradient from above has arrived at those states. The
walk then stands where the newest tensor still holding a gradient is the lower chain's
top, and the first look, run from there with every other pending gradient as a start of
its searches, proves the lower chain as it proves a chain from the output.
"""

from operator import attrgetter

from .first_look import RootView, first_look, top_step
from .spine import descend
from .steps import MAX_PERIOD

_sequence = attrgetter("_ctx.sequence")


def pending_tensors(graph):
    """The tensors made by an op that hold a gradient still to be walked."""
    tensors = graph.tensors
    return [tensors[key] for key in graph.grads if tensors[key]._ctx is not None]


TRIES = 2 * MAX_PERIOD
"""How many of the newest pending tensors are looked from, each walked when no repeating
step starts there (the ops of the first step of the chain just scanned, below x_0: up to
MAX_PERIOD on its walk down, more beside it, 19 for a GRU's)."""


def next_chain_below(graph, pending_of, walk_one, min_steps, worth_checking=None, known=None):
    """The next chain below the scanned ones, as a ChainPlan, or None.

    `pending_of()` gives the tensors made by an op that hold a gradient still to be
    walked; the first look runs from the newest of them, the others searched from too.
    Every gradient still to come reaches a tensor older than the newest pending one, so
    its gradient is complete, and the searches from the other pending tensors see every
    reader of the chain still to be walked. When no repeating step starts there,
    `walk_one(top)` walks it (as the engine's walk would next), at most `TRIES` times.
    `known`: the chains checked beside the looks before (`ChainPlan.beside`).
    """
    if graph.wanted is not None:
        return None
    for _ in range(TRIES):
        pending = pending_of()
        if not pending:
            return None
        top = max(pending, key=_sequence)
        view = RootView(top, graph.capture)
        if top_step(list(descend(top, 8 * MAX_PERIOD)), view) is None:
            walk_one(top)  # no repeating step starts here (cheap to tell): one node on
            continue
        # A repeating step: the chain is proved or refused here, once (the tops below
        # would be the same chain's, each look as costly as this one).
        plan = first_look(
            view, min_steps, worth_checking, nested=False, pending=pending, known=known
        )
        return plan if plan is not None and plan.segments else None
    return None


def pending_after(plan, pending=()):
    """The tensors made by an op that would hold a gradient once `plan`'s independent
    tensors are walked and its segments scanned, given those `pending` before (for
    `tg.backward_plan`, which runs nothing)."""
    readers = list(plan.independent)
    for segment in plan.segments:
        for column in segment.columns:  # column 0: the upper anchors x_1 .. x_n
            readers.extend(column)
    done = set(map(id, readers))
    after = {id(tensor): tensor for tensor in pending if id(tensor) not in done}
    for tensor in readers:
        node = tensor._ctx
        for operand, needs in zip(node.inputs, node.needs_input_grad):
            if needs and operand._ctx is not None and id(operand) not in done:
                after[id(operand)] = operand
    return list(after.values())
