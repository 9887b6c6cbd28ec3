"""The display model of a graph picture: which nodes are drawn, in which box, joined how.

`layout(root, ...)` traces the graph and decides, before any styling: the backward step of
every op, the cluster of every node (a module call, or a scanned chain segment), which
nodes are merged into one (a collapsed call below `depth`, a folded run of calls), which
intermediate tensors `compact` leaves out, the display edges between what remains, and
which nodes `max_nodes` keeps (those nearest the output).
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from .groups import ModuleCalls
from .record import BackwardRecord, RecordingScheduler
from .trace import INTERMEDIATE, OUTPUT, Trace, trace

SHARE_LIMIT = 3  # a leaf with more drawn uses than this is drawn once beside each use


def ancestors(call):
    """`call`, its parent, its parent's parent ... up to the outermost module call.

    >>> class Call:
    ...     def __init__(self, name, parent=None):
    ...         self.name, self.parent = name, parent
    >>> [call.name for call in ancestors(Call("cell", Call("rnn", Call("model"))))]
    ['cell', 'rnn', 'model']
    """
    while call is not None:
        yield call
        call = call.parent


def common_call(calls):
    """The innermost ModuleCall that encloses every call in `calls` (None if any is None)."""
    if not calls or any(call is None for call in calls):
        return None
    chains = [list(ancestors(call))[::-1] for call in calls]
    common = None
    for level in zip(*chains):
        if not all(call is level[0] for call in level):
            break
        common = level[0]
    return common


@dataclass
class DisplayEdge:
    """An edge of the picture, standing for the traced `edge` (or, `merged`, for several)."""

    source: str
    target: str
    edge: object
    merged: bool = False


@dataclass
class Layout:
    """What a picture shows, before styling."""

    graph: object  # the Trace
    record: object  # a BackwardRecord, or None
    steps: dict  # op id -> 1-based backward step
    depth: int | None
    call_of: dict = field(default_factory=dict)  # node id -> innermost ModuleCall
    scan_of: dict = field(default_factory=dict)  # node id -> scan cluster key
    scan_titles: dict = field(default_factory=dict)  # scan cluster key -> its title
    display_of: dict = field(default_factory=dict)  # node id -> display id
    folds: dict = field(default_factory=dict)  # fold display id -> the calls it stands for
    collapsed: dict = field(default_factory=dict)  # call id -> a call drawn as one node
    edges: list = field(default_factory=list)  # DisplayEdge
    kept: set = field(default_factory=set)  # display ids drawn
    dropped: int = 0  # display ids max_nodes left out
    copies: dict = field(default_factory=dict)  # copy id -> (the leaf's id, the use's id)

    def visible_call(self, call):
        """The call a node is drawn in, and whether that call is collapsed into one node."""
        if call is None or self.depth is None:
            return call, False
        while call.depth > self.depth:
            call = call.parent
        return call, call.depth == self.depth

    def cluster_of(self, node_id, display_id):
        """The box a drawn node sits in: a scan key, a ModuleCall, or None."""
        if display_id in self.copies:
            target = self.copies[display_id][1]  # a copy sits beside its use
            return self.cluster_of(target, target)  # a drawn node, a fold or a call
        if node_id in self.scan_of:
            return self.scan_of[node_id]
        if display_id in self.folds:
            return self.visible_call(self.folds[display_id][0].parent)[0]
        if display_id.startswith("call_"):
            # A collapsed call sits in its parent's box (if that is drawn as a box).
            return self.visible_call(self.collapsed[display_id[len("call_") :]].parent)[0]
        return self.visible_call(self.call_of.get(node_id))[0]

    def fold_title(self, display_id):
        """'cell × 94: RNNCell calls #3 … #96' for a node standing for folded calls."""
        run = self.folds[display_id]
        first, last = run[0], run[-1]
        return (
            f"{first.path or '(model)'} × {len(run)}: {first.type_name} calls "
            f"#{first.call_index} … #{last.call_index}"
        )


def depth_and_width(result):
    """(ranks, most nodes on one rank) of the drawn nodes, a node's rank being the longest
    path to it from a node with no inputs, then as low as its consumers allow (Kahn's
    order; nodes on a cycle are left out)."""
    sources_of = {node: [] for node in result.kept}
    targets_of = {node: [] for node in result.kept}
    for item in result.edges:
        if item.source in result.kept and item.target in result.kept:
            sources_of[item.target].append(item.source)
            targets_of[item.source].append(item.target)
    waiting = {node: len(sources) for node, sources in sources_of.items()}
    ready = deque(node for node, count in waiting.items() if count == 0)
    rank, order = dict.fromkeys(ready, 0), []
    while ready:
        node = ready.popleft()
        order.append(node)
        for target in targets_of[node]:
            rank[target] = max(rank.get(target, 0), rank[node] + 1)
            waiting[target] -= 1
            if waiting[target] == 0:
                ready.append(target)
    # Graphviz keeps edges short: a node with slack sits just above its first consumer.
    for node in reversed(order):
        below = [rank[target] for target in targets_of[node] if target in rank]
        if below:
            rank[node] = min(below) - 1
    if not rank:
        return 0, 0
    per_rank = Counter(rank.values())  # rank -> how many nodes sit on it
    return max(per_rank) + 1, max(per_rank.values())


def resolve_record(backward):
    """True, a BackwardRecord, or None, from what `draw(backward=...)` was given."""
    if backward is None or backward is False:
        return None
    if isinstance(backward, RecordingScheduler):
        return backward.record
    if backward is True or isinstance(backward, BackwardRecord):
        return backward
    raise TypeError(
        "backward= takes True (number ops in the sequential backward order), a "
        "BackwardRecord from viz.backward(...), or a RecordingScheduler; got "
        f"{type(backward).__name__}"
    )


# compact="auto": a picture taller than this, top to bottom, leaves out its unnamed
# intermediate tensors. Graphviz gives a rank about 77 px, a module call's box about 45.
PICTURE_PIXELS, RANK_PIXELS, BOX_PIXELS = 2000, 77, 45


def layout(root, backward=None, groups=None, depth=None, fold=3, compact="auto", max_nodes=400):
    """The `Layout` of `root`'s graph (the options are `draw`'s).

    `compact="auto"` leaves out the intermediate tensors of a picture that would be
    taller than `PICTURE_PIXELS`, a long strip.
    """
    if compact == "auto":
        full = layout(root, backward, groups, depth, fold, False, max_nodes)
        boxes = {full.cluster_of(node, drawn) for node, drawn in full.display_of.items()}
        height = depth_and_width(full)[0] * RANK_PIXELS + len(boxes - {None}) * BOX_PIXELS
        if height <= PICTURE_PIXELS:
            return full
        compact = True
    if compact not in (True, False):
        raise ValueError(f"compact={compact!r}: use True, False or 'auto'")
    if max_nodes is not None and max_nodes < 1:
        raise ValueError(f"max_nodes={max_nodes}: it must be at least 1 (or None for all)")
    if groups is not None and not isinstance(groups, ModuleCalls):
        raise TypeError(
            f"groups= takes the ModuleCalls from viz.module_calls(model), got "
            f"{type(groups).__name__}"
        )
    graph = root if isinstance(root, Trace) else trace(root)
    record, steps = _steps(graph, resolve_record(backward))
    result = Layout(graph=graph, record=record, steps=steps, depth=depth)
    producer = {op_node.output: op_id for op_id, op_node in graph.ops.items()}
    if record is not None:
        _scan_clusters(result, producer)
    if groups is not None:
        _module_clusters(result, groups)
    _display_nodes(result, groups, fold, compact, producer)
    _display_edges(result, compact, producer)
    sources_of = {}
    for display_edge in result.edges:
        sources_of.setdefault(display_edge.target, []).append(display_edge.source)
    every = list(dict.fromkeys(result.display_of.values()))
    roots = [result.display_of[root_id] for root_id in graph.root_ids]
    result.kept = _nearest(roots, sources_of, every, max_nodes)
    result.dropped = len(every) - len(result.kept)
    _copy_shared_leaves(result)
    return result


def _copy_shared_leaves(result):
    """A leaf with more than `SHARE_LIMIT` drawn uses (a weight shared by every RNN step)
    is drawn once beside each use: one node with a hundred long edges makes a picture
    unreadable, and stalls Graphviz's layout. Copies are drawn past `max_nodes` too."""
    graph, uses = result.graph, {}
    for item in result.edges:
        node = graph.tensors.get(item.source)
        if node is None or node.kind in (INTERMEDIATE, OUTPUT):
            continue
        if item.source in result.kept and item.target in result.kept:
            uses.setdefault(item.source, []).append(item)
    for source, items in uses.items():
        if len(items) <= SHARE_LIMIT:
            continue
        result.kept.discard(source)
        for number, item in enumerate(items):
            copy_id = f"{source}_use{number}"
            result.copies[copy_id] = (source, item.target)
            result.kept.add(copy_id)
            item.source = copy_id


def _steps(graph, record):
    """(record or None, {op id: backward step}); True numbers the sequential order."""
    if record is True:
        order = graph.backward_order()
        return None, {op_id: step for step, op_id in enumerate(order, start=1)}
    steps = {}
    if record is not None:
        for op_id, op_node in graph.ops.items():
            step = record.step(op_node.op)
            if step is not None:
                steps[op_id] = step
    return record, steps


def _scan_clusters(result, producer):
    graph = result.graph
    position = {node_id: index for index, node_id in enumerate(graph.node_order)}
    for number, segment in enumerate(result.record.scanned_segments):
        scan_name, tensors = segment.scheduler, segment.tensors
        key = f"cluster_scan_{number}"
        anchors = [graph.node_id(tensor) for tensor in tensors]
        anchors = sorted((a for a in anchors if a is not None), key=position.__getitem__)
        for node_id in _segment_members(anchors, producer, graph):
            result.scan_of[node_id] = key
        result.scan_titles[key] = f"scan: {scan_name} ({max(len(anchors) - 1, 0)} steps)"


def _module_clusters(result, groups):
    graph, call_of = result.graph, result.call_of
    for op_id, op_node in graph.ops.items():
        call = groups.call_of(op_node.op)
        if call is not None:
            call_of[op_id] = call
            call_of[op_node.output] = call
    # A leaf or constant goes into the innermost call that holds all its consumers.
    consumers = {}
    for edge in graph.edges:
        if edge.target in graph.ops and edge.source not in graph.ops:
            consumers.setdefault(edge.source, []).append(call_of.get(edge.target))
    for node_id, calls in consumers.items():
        if node_id in call_of or graph.tensors[node_id].kind == OUTPUT:
            continue
        common = common_call(calls)
        # What a call was given is drawn outside it (and outside every call it was
        # passed down through).
        tensor = graph.tensors[node_id].tensor
        while common is not None and tensor is not None and id(tensor) in common.input_keys:
            common = common.parent
        if common is not None:
            call_of[node_id] = common


def _is_intermediate(graph, node_id):
    """Whether `compact` leaves the node out: an unnamed intermediate tensor (a named one,
    such as the derivations' μ and σ², is what the picture is for)."""
    node = graph.tensors.get(node_id)
    return node is not None and node.kind == INTERMEDIATE and not node.name


def _display_nodes(result, groups, fold, compact, producer):
    graph = result.graph
    fold_of = _folded_calls(groups, result.depth, fold) if groups is not None else {}
    for node_id in graph.node_order:
        call, collapsed = result.visible_call(result.call_of.get(node_id))
        folded = next((fold_of[each] for each in ancestors(call) if each in fold_of), None)
        if folded is not None and node_id not in result.scan_of:
            result.display_of[node_id] = folded[0]
            result.folds[folded[0]] = folded[1]
        elif collapsed and node_id not in result.scan_of:
            result.display_of[node_id] = f"call_{call.id}"
            result.collapsed[call.id] = call
        elif compact and _is_intermediate(graph, node_id):
            continue  # not drawn: its shape labels the edges from its op to its consumers
        else:
            result.display_of[node_id] = node_id
    if not result.folds:
        return
    # Inputs used only inside a folded run (the x_t of the folded RNN steps) fold too.
    consumer_displays = {}
    for edge in graph.edges:
        is_leaf = edge.source in graph.tensors and edge.source not in producer
        if is_leaf and edge.target in result.display_of:
            consumer_displays.setdefault(edge.source, set()).add(result.display_of[edge.target])
    for node_id, targets in consumer_displays.items():
        (target,) = targets if len(targets) == 1 else (None,)
        if target in result.folds and graph.tensors[node_id].kind != OUTPUT:
            result.display_of[node_id] = target


def _display_edges(result, compact, producer):
    """The display edges, deduplicated where collapsing merged nodes."""
    graph, display_of = result.graph, result.display_of
    seen = {}  # key -> position in result.edges
    for edge in graph.edges:
        if compact and _is_intermediate(graph, edge.target):
            continue  # op -> its intermediate output: drawn as op -> consumer instead
        edge_source = edge.source
        if compact and _is_intermediate(graph, edge.source):
            edge_source = producer[edge.source]
        source, target = display_of[edge_source], display_of[edge.target]
        if source == target:
            continue
        remapped = source != edge_source or target != edge.target
        # Edges into a collapsed call are merged; x * x keeps its two edges (two operands).
        key = (source, target) if remapped else (source, target, edge.index)
        if key in seen:
            # A drawn edge that stands for several: one of their gradients would mislead.
            result.edges[seen[key]].merged = True
            continue
        seen[key] = len(result.edges)
        result.edges.append(DisplayEdge(source, target, edge))


def _segment_members(anchors, producer, graph):
    """The nodes of a scanned chain segment: walking back from its top anchor to its
    lowest, every op and intermediate tensor met (the steps' side branches included;
    leaves such as shared weights stay outside)."""
    if not anchors:
        return []
    lowest, top = anchors[0], anchors[-1]
    members = [lowest]
    seen = {lowest}
    stack = [top]
    while stack:
        tensor_id = stack.pop()
        if tensor_id in seen:
            continue
        seen.add(tensor_id)
        op_id = producer.get(tensor_id)
        if op_id is None:
            continue  # a leaf
        members.extend((tensor_id, op_id))
        for input_id in graph.ops[op_id].inputs:
            if input_id in producer or input_id == lowest:
                stack.append(input_id)
    return members


def _folded_calls(groups, depth, fold):
    """Long runs of calls of one module (an RNN cell called 100 times): all but the first
    and last `fold` calls are drawn as one node. Returns {call: (fold id, middle calls)}."""
    if fold is None:
        return {}
    runs = {}
    for call in groups.calls:
        if depth is None or call.depth <= depth:
            parent_key = call.parent.number if call.parent is not None else None
            runs.setdefault((parent_key, call.path), []).append(call)
    fold_of = {}
    for run in runs.values():
        if len(run) > 2 * fold + 1:
            middle = run[fold : len(run) - fold]
            entry = (f"fold_{middle[0].id}", middle)
            for call in middle:
                fold_of[call] = entry
    return fold_of


def _nearest(roots, sources_of, all_nodes, max_nodes):
    """The first `max_nodes` nodes met walking back from the roots (breadth first)."""
    if max_nodes is None or max_nodes >= len(all_nodes):
        return set(all_nodes)
    kept = {}
    queue = deque(roots)
    while queue and len(kept) < max_nodes:
        node = queue.popleft()
        if node in kept:
            continue
        kept[node] = True
        for source in sources_of.get(node, ()):
            if source not in kept:
                queue.append(source)
    return set(kept)
