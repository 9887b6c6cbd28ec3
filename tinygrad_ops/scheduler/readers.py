"""The first look's last check: who reads the chain's tensors from outside it
(first_look.py, step 4; docs/scan.md section 5).

Two searches over the tensors *outside* a chain see every reader of a chain tensor
without an index of the graph: from the chain's outside inputs (their ancestry must
meet no chain tensor), then from the output (it may meet the anchors, whose readers'
gradients are the injections e_i, but no tensor inside a step).
"""

import itertools
from bisect import bisect_right
from operator import and_, attrgetter, ge, is_, lt, not_, or_

from . import steps
from .columns import check_columns
from .steps import among


def outside_readers(
    graph, anchors, tensors, outside, count, pending=(), within=None, beside=None, aside=None
):
    """The tensors outside the top `count` steps, as two searches that see every reader
    of a chain tensor; None when a reader breaks the rules of a chain.

    Every tensor of the graph that is not in the chain is reached from the chain's
    outside inputs (weights, x_t, and their ancestry) or from the output without entering
    the chain. The first search must meet no chain tensor at all (a step's input that
    depends on the chain would need the scan's results before the scan). The second may
    meet the anchors x_{n-1} .. x_0 (a readout and a loss at every step: their gradients
    are the injections e_i) but no tensor inside a step. What the second search finds
    (made after x_0) is *independent*: returned, newest first, to be walked before the
    scan. Chain tensors were made after x_0 and no later than x_n, so only a tensor made
    in that span is looked up among them (the sets of their ids are built the first time
    one is met, which an RNN with its loss on the last state never does). The `pending`
    tensors (gradients waiting to be walked) are starts of the second search like the
    output, but an anchor among them holds an injection and a tensor inside a step would
    hold a gradient that the scan does not see (None). With `within` (ids: the
    independent tensors of an outer chain, for a chain found among them) the searches do
    not leave those tensors: the rest of the graph is the outer chain and its inputs'
    ancestry, which reads none of them (the outer chain's own searches proved it). `beside`
    (`columns.chains_beside`) gives the per-step input columns that are the anchors of a
    chain checked column by column: the first search starts below that chain instead.
    `aside` (`Aside`): chains read beside this one from the output (a second RNN, the
    running sum of a loss at every step), proved by their own looks: the searches do not
    enter them, may meet their top anchors only in the second, and go on from their
    bottoms and outside inputs in the second (they may read this chain's anchors); their
    tops are returned among the independent tensors (scanned on reaching them).
    """
    top = anchors[0]
    bottom = anchors[count]
    low = -1 if bottom._ctx is None else bottom._ctx.sequence
    roles = _Roles(anchors, tensors, count, low, top._ctx.sequence)
    seen = {id(top)}
    columns = [(slot, k, column[:count]) for slot, k, column in outside]
    aside_members = {}
    if aside is not None:
        aside_members = aside.members
        # (One pass per column: a dict of this chain's tensors is not built for it.)
        if id(top) in aside_members or not roles.disjoint_from(aside_members.keys()):
            return None  # the chains overlap
    starts = _first_starts(columns, beside, roles, seen, aside_members)
    if starts is None:
        return None
    if within is not None:
        starts = list(itertools.compress(starts, among(within, map(id, starts))))
    if _search(starts, seen, roles, (), within, aside_members) is None:
        return None
    # (A root may be the top of a chain aside: the running sum of a loss at every step.)
    roots = [root for root in graph.roots if id(root) not in seen and id(root) not in aside_members]
    if aside is not None:
        below = _below_aside(aside, roles)
        if below is None:
            return None
        for tensor in below:
            if id(tensor) not in seen:
                seen.add(id(tensor))
                roots.append(tensor)
    if pending and not _add_pending(pending, anchors[1 : count + 1], roles, seen, roots):
        return None
    seen.update(map(id, roots))
    found = _search(list(roots), seen, roles, ("anchor",), within, aside_members)
    if found is None:
        return None
    met = roots + found
    # Made after x_0 (a leaf has no sequence: -1), newest first; C passes, as `met` may be
    # every tensor of another chain.
    made = map(getattr, map(_GET_CONTEXT, met), itertools.repeat("sequence"), itertools.repeat(-1))
    independent = list(itertools.compress(met, map(lt, itertools.repeat(low), made)))
    if aside is not None:
        independent.extend(aside.tops)
    independent.sort(key=_GET_SEQUENCE, reverse=True)
    return independent


PROBE_LIMIT = 4 * steps.MAX_PERIOD  # the most tensors `reads_the_chain` looks at


def reads_the_chain(template, anchors):
    """Whether a per-step input of the top step is made from a tensor of the top two steps
    (an LSTM's c_t, made from the gates of h_{t-1}: two states, each read by the other's
    next step, and no chain of one of them), looked for among the tensors made after
    x_{n-2} only. The first search of `outside_readers` would refuse such a chain, but
    only once every step's columns were checked: here the top two steps' are, and the
    look at the next phase comes at once."""
    count, tensors, _, outside = check_columns(template, anchors[:3])
    if count < 2:
        return False
    chain = set(map(id, anchors[:3]))
    for column in tensors:
        chain.update(map(id, column[:2]))
    low = -1 if anchors[2]._ctx is None else anchors[2]._ctx.sequence
    for _, _, column in outside:
        if column[0] is column[1]:
            continue  # a weight shared by the steps
        pending = [column[0]]
        seen = set()
        while pending and len(seen) < PROBE_LIMIT:
            tensor = pending.pop()
            node = getattr(tensor, "_ctx", None)
            if node is None or node.sequence <= low or id(tensor) in seen:
                continue
            if id(tensor) in chain:
                return True
            seen.add(id(tensor))
            pending.extend(node.inputs)
    return False


def _add_pending(pending, anchors, roles, seen, roots):
    """Add to `roots` the `pending` tensors outside the chain and not `seen` (those seen:
    the root, or an input of the chain, walked after the scan); False when one is inside
    a step. A look below a scan has a gradient pending at every anchor (`anchors`: an
    injection each): those are told apart in one pass, the others looked up one by one."""
    anchor_ids = set(map(id, anchors))
    is_anchor = map(anchor_ids.__contains__, map(id, pending))
    for tensor in itertools.compress(pending, map(not_, is_anchor)):
        role = roles.of(tensor)
        if role == "inside":
            return False
        if role is None and id(tensor) not in seen:
            roots.append(tensor)
    return True


def _below_aside(aside, roles):
    """Where the second search goes on below the chains aside: their bottoms and outside
    inputs but this chain's anchors (a chain aside may read them: the readouts of a loss
    at every step, scanned before this chain, send them their injections); None when
    one is a tensor inside this chain's steps."""
    chain_roles = roles.of_all(aside.starts)
    if "inside" in chain_roles:
        return None
    return list(itertools.compress(aside.starts, map(is_, chain_roles, itertools.repeat(None))))


SHORT = 16  # a column this short is looked up tensor by tensor (no dict of the chain built)


def _first_starts(columns, beside, roles, seen, aside_members):
    """The starts of the first search: the tensors of the outside input columns (slot, k,
    [input of every step]; a weight shared by every step once), those below a chain
    beside for its column, each marked seen; None if one is a tensor of the chain or of
    a chain aside."""
    starts = []
    for slot, k, column in columns:
        if all(map(is_, column, itertools.repeat(column[0]))):
            column = column[:1]  # a weight shared by every step: one look is enough
        chain = beside.get((slot, k)) if beside else None
        if chain is not None:
            below = _below_beside(chain, roles, seen)
            if below is None:
                return None
            column = below + column[chain.covered :]
        if len(column) > SHORT:
            # A per-step input (x_t, another chain's states): one pass per check.
            if roles.of_all(column).count(None) != len(column):
                return None
            if any(map(aside_members.__contains__, map(id, column))):
                return None
        elif any(
            roles.of(operand) is not None or id(operand) in aside_members for operand in column
        ):
            return None
        for operand in column:
            if id(operand) not in seen:
                seen.add(id(operand))
                starts.append(operand)
    return starts


def _below_beside(chain, roles, seen):
    """Where the first search goes on from a column that is the anchors of a chain beside
    this one (`columns.Beside`): that chain's bottom anchor and its outside inputs. Its
    column check proved every input of its steps to be a tensor of the same step, the
    anchor below, or one of those outside inputs, so its tensors are the column's whole
    ancestry down to there: they are marked seen, after checking that none is a tensor
    of this chain (None if one is)."""
    count, tensors, _, outside = chain.checked
    ids = set()
    for column in tensors:  # column 0: its upper anchors
        ids.update(map(id, column[:count]))
    if not roles.disjoint_from(ids):
        return None
    seen.update(ids)
    below = [chain.anchors[count]]
    for _, _, column in outside:
        column = column[:count]
        shared = all(map(is_, column, itertools.repeat(column[0])))
        below.extend(column[:1] if shared else column)
    return below


class Aside:
    """Chains read beside a chain from the output side (a second RNN of the same loss), for
    its searches: `members` (the id of each of their tensors: "top" for a top anchor x_n,
    else "inside"), `starts` (their bottoms x_0 and their outside inputs: the weights, the
    per-step inputs) and `tops`; `segments`, those chains."""

    def __init__(self, segments):
        self.segments = segments
        self.members = {}
        self.starts = []
        self.tops = []
        for segment in segments:
            for column in segment.columns:  # column 0: the upper anchors x_1 .. x_n
                self.members.update(dict.fromkeys(map(id, column), "inside"))
            top = segment.anchors[-1]
            self.members[id(top)] = "top"
            self.tops.append(top)
            self.starts.append(segment.anchors[0])
            for column in segment.outside:
                self.starts.extend(column.operands)
            for codes in segment.template.wiring:
                self.starts.extend(
                    code[1] for code in codes if isinstance(code, tuple) and code[0] == "shared"
                )


_GET_CONTEXT = attrgetter("_ctx")
_GET_SEQUENCE = attrgetter("_ctx.sequence")


_NO_CHAINS = {}  # `_search` without chains aside


class _Roles:
    """The role of a tensor in the chain: "anchor", "inside" (a tensor of a step that is
    no anchor) or None. Chain tensors were made after x_0 and no later than x_n: only a
    tensor made in that span is looked up, in a dict built the first time one is met."""

    def __init__(self, anchors, tensors, count, low, high):
        self.anchors, self.tensors, self.count = anchors, tensors, count
        self.top, self.bottom = anchors[0], anchors[count]
        self.low, self.high = low, high
        self.members = None

    def build(self):
        members = {}
        count = self.count
        for column in self.tensors[1:]:
            members.update(dict.fromkeys(map(id, column[:count]), "inside"))
        members.update(dict.fromkeys(map(id, self.anchors[1:count]), "anchor"))
        members[id(self.bottom)] = "anchor"
        self.members = members
        return members

    def disjoint_from(self, ids):
        """Whether no tensor of the chain (its anchors, its steps' tensors) has its id in
        `ids` (a set or a dict's keys): one pass per column, without building the dict of
        its tensors."""
        if self.members is not None:
            return id(self.top) not in ids and self.members.keys().isdisjoint(ids)
        if id(self.bottom) in ids:
            return False
        return all(ids.isdisjoint(map(id, column[: self.count])) for column in self.tensors)

    def of(self, tensor):
        if tensor is self.bottom:
            return "anchor"
        node = tensor._ctx
        if node is None or not self.low < node.sequence <= self.high:
            return None
        if self.members is not None:
            return self.members.get(id(tensor))
        # Without the dict (built for the searches, which may meet every tensor): the one
        # step whose span of creation numbers holds the tensor's (a step's tensors are made
        # after its lower anchor, no later than its upper one, as the column checks
        # proved), found by bisection over the anchors, is the only place to look.
        step = bisect_right(self.anchors, -node.sequence, 0, self.count, key=_minus_sequence)
        step -= 1
        if any(column[step] is tensor for column in self.tensors[1:]):
            return "inside"
        return "anchor" if step and self.anchors[step] is tensor else None

    def of_all(self, tensors):
        """`of` for each of `tensors`, in C passes where few were made in the chain's span
        (a column of per-step inputs: x_t, another chain's tensors); the dict of the
        chain's tensors where many were (as soon as the first ones are: a per-step input
        made inside the chain's span, the states of an RNN that a loss's readouts read)."""
        if self.members is not None or any(map(self._in_span, tensors[:2])):
            members = self.members or self.build()
            return list(map(members.get, map(id, tensors)))  # (a C pass)
        contexts = map(getattr, tensors, itertools.repeat("_ctx"), itertools.repeat(None))
        sequences = list(map(getattr, contexts, itertools.repeat("sequence"), itertools.repeat(-1)))
        after_low = map(lt, itertools.repeat(self.low), sequences)
        flags = list(map(and_, after_low, map(ge, itertools.repeat(self.high), sequences)))
        flags = list(map(or_, flags, map(is_, tensors, itertools.repeat(self.bottom))))
        looked_up = flags.count(True)
        if not looked_up:
            return [None] * len(tensors)
        if looked_up > SHORT:
            return list(map(self.build().get, map(id, tensors)))  # (a C pass)
        return [self.of(tensor) if flag else None for tensor, flag in zip(tensors, flags)]

    def _in_span(self, tensor):
        """Whether `tensor` may be a chain tensor: x_0, or made in the chain's span."""
        node = getattr(tensor, "_ctx", None)
        return tensor is self.bottom or (node is not None and self.low < node.sequence <= self.high)


def _minus_sequence(tensor):
    return -tensor._ctx.sequence


def _search(stack, seen, roles, allowed, within=None, aside=_NO_CHAINS):
    """Every tensor below `stack` that needs a gradient, not entering the chain (nor
    leaving `within`): the list of those met, or None if a chain tensor whose role is not
    `allowed` is met. With `aside` (`Aside.members`), nor entering those chains: None if a
    tensor of theirs is met, but for their tops where anchors are allowed. (`_Roles.of`,
    inlined: this loop may meet every tensor of a graph.)"""
    found = []
    low, high, bottom = roles.low, roles.high, roles.bottom
    members = roles.members
    looked_up = 0
    add = seen.add
    while stack:
        node = stack.pop()._ctx
        if node is None:
            continue
        for operand, needs in zip(node.inputs, node.needs_input_grad):
            key = id(operand)
            if not needs:
                continue
            if key in aside:  # before `seen`: who reads them is what counts
                if aside[key] != "top" or "anchor" not in allowed:
                    return None
                continue  # a chain's top anchor, read from the output side
            if key in seen:
                continue
            add(key)
            made = operand._ctx
            if operand is bottom or (made is not None and low < made.sequence <= high):
                if members is None and looked_up < SHORT:
                    looked_up += 1  # the first few by bisection (`_Roles.of`), then a dict
                    role = roles.of(operand)
                else:
                    members = members or roles.members or roles.build()
                    role = members.get(key)
                if role is not None:
                    if role not in allowed:
                        return None
                    continue
            if within is not None and key not in within:
                continue  # the outer chain or its inputs' ancestry (see outside_readers)
            found.append(operand)
            stack.append(operand)
    return found
