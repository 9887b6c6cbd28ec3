"""`draw` and `render`: a traced graph as a Graphviz picture.

The picture has a node per tensor (its name where known, its shape and dtype; optionally
value and gradient statistics) and a node per op, with edges labelled by the shape of
what flows along them. Colours say what a tensor is:

    output        red, thick border     what backward starts from
    parameter     orange                a named leaf that requires grad (a weight)
    leaf          green                 an unnamed leaf that requires grad
    input         blue                  a tensor that needs no gradient (data, targets)
    constant      grey, small           a Python number or array operand
    intermediate  white                 made by an op
    op            purple, rounded       one recorded primitive

With `backward=` every op is numbered in the order backward visits it; with a recorded
backward (`viz.backward(loss)` or a `RecordingScheduler`) the edges also show the gradient
that arrived along them (shape and norm), and scanned chain segments are drawn as one
highlighted cluster named after the scan. With `groups=` (from `viz.module_calls`) the
ops of each module call sit in one box; `depth=` collapses calls nested deeper than
that into a single node each. `max_nodes` keeps the nodes nearest the output.
"""

from __future__ import annotations

import html
import os
import shutil
from collections import deque
from pathlib import Path

import graphviz
import numpy as np

from .groups import ModuleCalls
from .record import BackwardRecord, GradientInfo, RecordingScheduler
from .trace import (
    CONSTANT,
    INPUT,
    INTERMEDIATE,
    LEAF,
    OUTPUT,
    PARAMETER,
    _shape_text,
    trace,
)

INSTALL_HINT = (
    "Install Graphviz to get pictures: `sudo apt-get install graphviz` (Debian/Ubuntu), "
    "`brew install graphviz` (macOS), `conda install graphviz`, or see "
    "https://graphviz.org/download/ ; then run this again."
)

FONT = "Helvetica"

# fill colour, border colour, extra attributes
TENSOR_STYLES = {
    OUTPUT: ("#f8cecc", "#b85450", {"penwidth": "2.2"}),
    PARAMETER: ("#ffe6cc", "#d79b00", {}),
    LEAF: ("#d5e8d4", "#82b366", {}),
    INPUT: ("#dae8fc", "#6c8ebf", {}),
    CONSTANT: ("#f5f5f5", "#999999", {"fontsize": "9", "fontcolor": "#555555"}),
    INTERMEDIATE: ("#ffffff", "#666666", {}),
}
OP_STYLE = {
    "shape": "box",
    "style": "rounded,filled",
    "fillcolor": "#e1d5e7",
    "color": "#9673a6",
}
STEP_COLOUR = "#b03a2e"  # backward numbers and gradients
GRAD_EDGE_COLOUR = "#a05a55"  # an edge that carried a gradient back
GROUP_COLOURS = ("#f4f6fb", "#eaeef7", "#dfe5f2")  # module boxes, by nesting depth
SCAN_STYLE = {"style": "filled,bold", "fillcolor": "#fff2cc", "color": "#d6b656"}

SHOW_FLAGS = ("shape", "value", "grad")
SHARE_LIMIT = 3  # a leaf with more uses than this is drawn once per use


def _parse_show(show) -> set:
    if show is None or show == "":
        return set()
    flags = set(show.split("|")) if isinstance(show, str) else set(show)
    unknown = flags - set(SHOW_FLAGS)
    if unknown:
        raise ValueError(
            f"show={show!r}: unknown item(s) {sorted(unknown)}; use any of "
            f"{'|'.join(SHOW_FLAGS)} joined by '|', e.g. show='shape|grad'"
        )
    return flags


def _number(value: float) -> str:
    return f"{value:.3g}"


def _statistics(values) -> str:
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return "empty"
    if values.size == 1:
        return _number(values.item())
    return f"{_number(values.min())} / {_number(values.mean())} / {_number(values.max())}"


def _grad_text(info: GradientInfo) -> str:
    return f"∇ {_shape_text(info.shape)}  ‖{_number(info.norm)}‖"


def _html(lines) -> str:
    """An HTML-like Graphviz label from (text, font attributes) lines."""
    parts = []
    for text, attributes in lines:
        escaped = html.escape(text, quote=False)
        for tag, value in attributes:
            if tag == "b":
                escaped = f"<b>{escaped}</b>"
            elif tag == "color":
                escaped = f'<font color="{value}">{escaped}</font>'
            elif tag == "size":
                escaped = f'<font point-size="{value}">{escaped}</font>'
        parts.append(escaped)
    return "<" + "<br/>".join(parts) + ">"


def _constant_text(node) -> str:
    value = node.value
    if np.ndim(value) == 0 and isinstance(value, (bool, int, float, np.number)):
        return _number(float(value))
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return f"const {_shape_text(node.shape)}"
    return type(value).__name__


class _Picture:
    """The display graph: what is drawn, before it becomes DOT."""

    def __init__(self):
        self.nodes = {}  # display id -> dict of graphviz attributes, in insertion order
        self.cluster_of = {}  # display id -> cluster key (innermost), or absent
        self.edges = []  # (source, target, attributes)
        self.edge_keys = set()


def _resolve_record(backward):
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


def draw(
    root,
    show="shape",
    rankdir="LR",
    max_nodes=400,
    backward=None,
    groups=None,
    depth=None,
    fold=3,
    compact=False,
    title=None,
) -> graphviz.Digraph:
    """The graph that produced `root` as a `graphviz.Digraph` (displays inline in Jupyter).

    `show`: any of "shape", "value", "grad" joined by "|" (shape and dtype; min/mean/max of
    the values; min/mean/max and norm of the gradients, from `.grad` or a recorded backward).
    `rankdir`: "LR" (left to right) or "TB". `max_nodes`: draw at most this many nodes,
    those nearest the output (None for all); the rest become one "… more" node.
    `backward`: True numbers the ops in sequential backward order; a `BackwardRecord`
    (from `viz.backward(root)`) or a `RecordingScheduler` numbers them as that backward
    ran, labels edges with the gradients that flowed and draws scanned segments.
    `groups`: a `ModuleCalls` (from `viz.module_calls(model)`): one box per module call;
    `depth`: collapse calls nested deeper than `depth` into one node each; `fold`: of a
    module called many times in a row (an RNN cell), draw the first and last `fold` calls
    and one node for the rest (None draws every call). `compact`: leave out the nodes of
    intermediate tensors (ops connect directly, edges still show shapes and gradients).

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> picture = viz.draw((x * x).sum(), backward=True)
    >>> print(picture.source.splitlines()[0])
    digraph tinygrad_ops {
    """
    flags = _parse_show(show)
    if rankdir not in ("LR", "TB", "RL", "BT"):
        raise ValueError(f"rankdir={rankdir!r}: use 'LR', 'TB', 'RL' or 'BT'")
    if max_nodes is not None and max_nodes < 1:
        raise ValueError(f"max_nodes={max_nodes}: it must be at least 1 (or None for all)")
    if groups is not None and not isinstance(groups, ModuleCalls):
        raise TypeError(
            f"groups= takes the ModuleCalls from viz.module_calls(model), got "
            f"{type(groups).__name__}"
        )
    record = _resolve_record(backward)
    graph = trace(root)
    steps = {}
    if record is True:
        steps = {op_id: step for step, op_id in enumerate(graph.backward_order(), start=1)}
        record = None
    elif record is not None:
        for op_id, op_node in graph.ops.items():
            step = record.step(op_node.op)
            if step is not None:
                steps[op_id] = step

    # 1. Which cluster (module call or scan) every node belongs to, and which are hidden
    #    inside a collapsed call.
    scan_of = {}  # node id -> scan cluster key
    scan_titles = {}
    producer = {op_node.output: op_id for op_id, op_node in graph.ops.items()}
    if record is not None:
        position = {node_id: index for index, node_id in enumerate(graph.node_order)}
        for number, (scan_name, tensors) in enumerate(record.scanned_segments):
            key = f"cluster_scan_{number}"
            anchors = [graph.node_id(tensor) for tensor in tensors]
            anchors = sorted((a for a in anchors if a is not None), key=position.__getitem__)
            for node_id in _segment_members(anchors, producer, graph):
                scan_of[node_id] = key
            scan_titles[key] = f"scan: {scan_name} ({max(len(anchors) - 1, 0)} steps)"

    call_of = {}  # node id -> innermost ModuleCall
    if groups is not None:
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
            common = _common_call(calls)
            # What a call was given is drawn outside it (and outside every call it was
            # passed down through).
            tensor = graph.tensors[node_id].tensor
            while common is not None and tensor is not None and id(tensor) in common.input_keys:
                common = common.parent
            if common is not None:
                call_of[node_id] = common

    def visible_call(call):
        """The call a node is drawn in, and whether that call is collapsed into one node."""
        if call is None or depth is None:
            return call, False
        while call.depth > depth:
            call = call.parent
        return call, call.depth == depth

    def is_intermediate(node_id):
        node = graph.tensors.get(node_id)
        return node is not None and node.kind == INTERMEDIATE

    fold_of = _folded_calls(groups, depth, fold) if groups is not None else {}
    folds = {}  # fold display id -> the calls it stands for
    display_of = {}  # node id -> display id
    collapsed_calls = {}
    for node_id in graph.node_order:
        call, collapsed = visible_call(call_of.get(node_id))
        folded = _folded_ancestor(call, fold_of)
        if folded is not None and node_id not in scan_of:
            display_of[node_id] = folded[0]
            folds[folded[0]] = folded[1]
        elif collapsed and node_id not in scan_of:
            display_of[node_id] = f"call_{call.id}"
            collapsed_calls[call.id] = call
        elif compact and is_intermediate(node_id):
            continue  # not drawn: its shape labels the edges from its op to its consumers
        else:
            display_of[node_id] = node_id

    # Inputs used only inside a folded run (the x_t of the folded RNN steps) fold too.
    if folds:
        consumer_displays = {}
        for edge in graph.edges:
            is_leaf = edge.source in graph.tensors and edge.source not in producer
            if is_leaf and edge.target in display_of:
                consumer_displays.setdefault(edge.source, set()).add(display_of[edge.target])
        for node_id, targets in consumer_displays.items():
            (target,) = targets if len(targets) == 1 else (None,)
            if target in folds and graph.tensors[node_id].kind != OUTPUT:
                display_of[node_id] = target

    # 2. The display edges (deduplicated where collapsing merged nodes), and the walk back
    #    from the outputs that decides what max_nodes keeps.
    display_edges = []
    seen_edges = {}  # key -> position in display_edges
    for edge in graph.edges:
        if compact and is_intermediate(edge.target):
            continue  # op -> its intermediate output: drawn as op -> consumer instead
        edge_source = edge.source
        if compact and is_intermediate(edge.source):
            edge_source = producer[edge.source]
        source, target = display_of[edge_source], display_of[edge.target]
        if source == target:
            continue
        remapped = source != edge_source or target != edge.target
        # Edges into a collapsed call are merged; x * x keeps its two edges (two operands).
        key = (source, target) if remapped else (source, target, edge.index)
        if key in seen_edges:
            # A drawn edge that stands for several: one of their gradients would mislead.
            position = seen_edges[key]
            display_edges[position] = (*display_edges[position][:3], True)
            continue
        seen_edges[key] = len(display_edges)
        display_edges.append((source, target, edge, False))
    sources_of = {}
    for source, target, _edge, _merged in display_edges:
        sources_of.setdefault(target, []).append(source)
    all_display = list(dict.fromkeys(display_of[node_id] for node_id in display_of))
    kept = _nearest(
        [display_of[root_id] for root_id in graph.root_ids], sources_of, all_display, max_nodes
    )
    dropped = len(all_display) - len(kept)

    # 3. Node attributes, for kept nodes only (statistics cost time on big graphs).
    picture = _Picture()
    for node_id, display_id in display_of.items():
        if display_id not in kept or display_id in picture.nodes:
            continue
        if display_id in folds:
            run = folds[display_id]
            picture.nodes[display_id] = _fold_attributes(run, graph, call_of, steps)
            outer = run[0].parent
        elif display_id.startswith("call_"):
            call = collapsed_calls[display_id[len("call_") :]]
            picture.nodes[display_id] = _collapsed_attributes(call, graph, call_of, steps)
            outer = call.parent
        elif node_id in graph.ops:
            picture.nodes[display_id] = _op_attributes(graph.ops[node_id], steps.get(node_id))
            outer = call_of.get(node_id)
        else:
            picture.nodes[display_id] = _tensor_attributes(graph.tensors[node_id], flags, record)
            outer = call_of.get(node_id)
        if node_id in scan_of:
            picture.cluster_of[display_id] = scan_of[node_id]
        elif outer is not None:
            outer, _ = visible_call(outer)
            if display_id.startswith("call_") or display_id in folds:
                # A collapsed call sits in its parent's box (if that is drawn as a box).
                outer = (
                    folds[display_id][0].parent
                    if display_id in folds
                    else collapsed_calls[display_id[len("call_") :]].parent
                )
            if outer is not None:
                picture.cluster_of[display_id] = outer
    kept_edges = [item for item in display_edges if item[0] in kept and item[1] in kept]
    copies = _shared_copies(kept_edges, graph, picture, max_nodes)
    for source, target, edge, merged in kept_edges:
        if (source, target) in copies:
            source = copies[(source, target)]
        attributes = _edge_attributes(edge, graph, flags, None if merged else record)
        picture.edges.append((source, target, attributes))
    if dropped:
        elided = "elided"
        picture.nodes[elided] = {
            "label": f"… {dropped} more nodes",
            "shape": "note",
            "style": "filled",
            "fillcolor": "#eeeeee",
            "color": "#999999",
            "fontcolor": "#555555",
        }
        boundary = set()
        for source, target, _edge, _merged in display_edges:
            if target in kept and source not in kept and target not in boundary:
                boundary.add(target)
                picture.edges.append((elided, target, {"style": "dashed", "color": "#999999"}))

    return _to_digraph(picture, rankdir, title, scan_titles)


def _shared_copies(edges, graph, picture, max_nodes):
    """Draw a leaf used by many ops (a weight shared by every RNN step) once per use.

    One node with dozens of long edges makes the layout slow and the picture unreadable;
    a small dashed copy beside each consumer reads better. Returns {(leaf, consumer):
    copy id} and adds the copies to `picture` (in the consumer's box), unless that would
    break `max_nodes`.
    """
    consumers = {}
    for source, target, _edge, _merged in edges:
        node = graph.tensors.get(source)
        if node is not None and node.kind not in (INTERMEDIATE, OUTPUT):
            consumers.setdefault(source, []).append(target)
    shared = {
        source: targets for source, targets in consumers.items() if len(targets) > SHARE_LIMIT
    }
    added = sum(len(targets) - 1 for targets in shared.values())
    if not shared or (max_nodes is not None and len(picture.nodes) + added > max_nodes):
        return {}
    copies = {}
    for source, targets in shared.items():
        attributes = picture.nodes.pop(source)
        cluster = picture.cluster_of.pop(source, None)
        for number, target in enumerate(targets):
            copy_id = f"{source}_use{number}"
            node = graph.tensors[source]
            copy = dict(attributes)
            copy["label"] = graphviz.nohtml(node.name or _shape_text(node.shape))
            copy["style"] = copy.get("style", "filled") + ",dashed"
            copy["fontsize"] = "8"
            copy["height"] = "0.2"
            picture.nodes[copy_id] = copy
            target_cluster = picture.cluster_of.get(target, cluster)
            if target_cluster is not None:
                picture.cluster_of[copy_id] = target_cluster
            copies[(source, target)] = copy_id
    return copies


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


def _folded_ancestor(call, fold_of):
    while call is not None:
        if call in fold_of:
            return fold_of[call]
        call = call.parent
    return None


def _fold_attributes(run, graph, call_of, steps):
    members = set(run)
    inside = [node_id for node_id in graph.ops if _folded_member(call_of.get(node_id), members)]
    first, last = run[0], run[-1]
    lines = [
        (f"{first.path or '(model)'}  × {len(run)}", [("b", None)]),
        (f"{first.type_name} calls #{first.call_index} … #{last.call_index}", []),
        (f"{len(inside)} ops, not drawn", [("size", 9), ("color", "#555555")]),
        *_step_range(inside, steps),
    ]
    return {
        "label": _html(lines),
        "shape": "box3d",
        "style": "filled,dashed",
        "fillcolor": "#f0f0f0",
        "color": "#4a6fa5",
    }


def _common_call(calls):
    """The innermost ModuleCall that encloses every call in `calls` (None if any is None)."""
    if not calls or any(call is None for call in calls):
        return None
    chains = []
    for call in calls:
        chain = []
        while call is not None:
            chain.append(call)
            call = call.parent
        chains.append(chain[::-1])
    common = None
    for level in zip(*chains):
        if all(call is level[0] for call in level):
            common = level[0]
        else:
            break
    return common


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


def _tensor_attributes(node, flags, record):
    fill, border, extra = TENSOR_STYLES[node.kind]
    if node.kind == CONSTANT:
        attributes = {
            "label": _constant_text(node),
            "shape": "box",
            "style": "filled,dashed",
            "fillcolor": fill,
            "color": border,
            "height": "0.25",
        }
        attributes.update(extra)
        return attributes
    lines = []
    if node.name:
        lines.append((node.name, [("b", None)]))
    elif node.kind == OUTPUT:
        lines.append(("output", [("b", None)]))
    if "shape" in flags:
        lines.append((f"{_shape_text(node.shape)}  {node.dtype}", []))
    tensor = node.tensor
    if "value" in flags:
        lines.append((f"value {_statistics(tensor.data)}", [("size", 9)]))
    if "grad" in flags:
        info = record.tensor_grad(tensor) if record is not None else None
        if tensor.grad is not None and tensor.is_leaf:
            grad_values = tensor.grad.data
            norm = float(np.sqrt(np.sum(np.asarray(grad_values, dtype=np.float64) ** 2)))
            text = f"grad {_statistics(grad_values)}  ‖{_number(norm)}‖"
            lines.append((text, [("size", 9), ("color", STEP_COLOUR)]))
        elif info is not None:
            if int(np.prod(info.shape)) == 1:
                text = f"grad {_number(info.mean)}  ‖{_number(info.norm)}‖"
            else:
                text = f"grad {_number(info.minimum)} / {_number(info.mean)} / "
                text += f"{_number(info.maximum)}  ‖{_number(info.norm)}‖"
            lines.append((text, [("size", 9), ("color", STEP_COLOUR)]))
    attributes = {
        # An empty HTML label ("<>") is a syntax error in DOT; an empty plain one is not.
        "label": _html(lines) if lines else "",
        "shape": "box",
        "style": "filled",
        "fillcolor": fill,
        "color": border,
    }
    attributes.update(extra)
    return attributes


def _op_attributes(op_node, step):
    name = op_node.op_name + (f" ({op_node.detail})" if op_node.detail else "")
    lines = [(name, [("b", None)])]
    if step is not None:
        lines = [(f"#{step}", [("b", None), ("color", STEP_COLOUR)]), *lines]
    attributes = dict(OP_STYLE)
    attributes["label"] = _html(lines)
    return attributes


def _step_range(op_ids, steps):
    """'backward #4-#8' for the steps of the ops hidden in a collapsed node ('' if none)."""
    numbers = [steps[op_id] for op_id in op_ids if op_id in steps]
    if not numbers:
        return []
    low, high = min(numbers), max(numbers)
    text = f"backward #{low}" + (f"–#{high}" if high != low else "")
    return [(text, [("size", 9), ("color", STEP_COLOUR)])]


def _collapsed_attributes(call, graph, call_of, steps):
    inside = [node_id for node_id in graph.ops if _inside(call_of.get(node_id), call)]
    lines = [
        (call.path or "(model)", [("b", None)]),
        (f"{call.type_name}" + (f" call #{call.call_index}" if call.call_index else ""), []),
        (f"{len(inside)} ops", [("size", 9), ("color", "#555555")]),
        *_step_range(inside, steps),
    ]
    return {
        "label": _html(lines),
        "shape": "box3d",
        "style": "filled",
        "fillcolor": "#e8eefc",
        "color": "#4a6fa5",
    }


def _folded_member(call, members):
    while call is not None:
        if call in members:
            return True
        call = call.parent
    return False


def _inside(call, ancestor):
    while call is not None:
        if call is ancestor:
            return True
        call = call.parent
    return False


def _edge_attributes(edge, graph, flags, record):
    attributes = {}
    lines = []
    if "shape" in flags:
        lines.append((_shape_text(edge.shape), []))
    if record is not None:
        info = None
        if edge.source in graph.ops:
            # op -> its output: the total gradient that arrived at the output tensor.
            info = record.tensor_grad(graph.tensors[edge.target].tensor)
        elif edge.target in graph.ops:
            info = record.edge_grad(graph.ops[edge.target].op, edge.index)
        if info is not None:
            lines.append((_grad_text(info), [("color", STEP_COLOUR)]))
            attributes["color"] = GRAD_EDGE_COLOUR
    if lines:
        attributes["label"] = _html(lines)
    return attributes


def _to_digraph(picture, rankdir, title, scan_titles):
    digraph = graphviz.Digraph("tinygrad_ops")
    digraph.attr(
        rankdir=rankdir,
        fontname=FONT,
        bgcolor="white",
        nodesep="0.25",
        ranksep="0.35",
        labelloc="t",
    )
    if title:
        digraph.attr(label=graphviz.nohtml(title), fontsize="14")
    digraph.attr("node", fontname=FONT, fontsize="10", margin="0.08,0.04", height="0.3")
    digraph.attr("edge", fontname=FONT, fontsize="8", color="#444444", arrowsize="0.6")

    # Clusters nest as the module calls do; scans are top-level clusters of their own.
    members = {}
    for display_id in picture.nodes:
        members.setdefault(picture.cluster_of.get(display_id), []).append(display_id)
    children = {}
    call_keys = [key for key in members if key is not None and not isinstance(key, str)]
    for call in list(call_keys):
        # Every ancestor of a call with members must be drawn too, to hold it.
        parent = call.parent
        child = call
        while parent is not None:
            siblings = children.setdefault(parent, [])
            if child not in siblings:
                siblings.append(child)
            child, parent = parent, parent.parent
        top = children.setdefault(None, [])
        if child not in top:
            top.append(child)

    def add_nodes(target, key):
        for display_id in members.get(key, ()):
            target.node(display_id, **picture.nodes[display_id])

    def add_call(target, call):
        # Recursion here follows the nesting of module calls (a few levels), not the graph.
        with target.subgraph(name=f"cluster_{call.id}") as box:
            box.attr(
                label=graphviz.nohtml(call.title),
                style="rounded,filled",
                fillcolor=GROUP_COLOURS[min(call.depth, len(GROUP_COLOURS) - 1)],
                color="#8a9bbd",
                fontsize="10",
                fontcolor="#2c3e66",
            )
            add_nodes(box, call)
            for child in sorted(children.get(call, ()), key=lambda item: item.number):
                add_call(box, child)

    add_nodes(digraph, None)
    for call in sorted(children.get(None, ()), key=lambda item: item.number):
        add_call(digraph, call)
    for key, scan_title in scan_titles.items():
        if key not in members:
            continue
        with digraph.subgraph(name=key) as box:
            box.attr(label=scan_title, fontsize="11", fontcolor="#7f6000", **SCAN_STYLE)
            add_nodes(box, key)
    for source, target, attributes in picture.edges:
        digraph.edge(source, target, **attributes)
    return digraph


# ----------------------------------------------------------------------------------------------
# Files


class GraphvizNotFoundError(RuntimeError):
    """The `dot` program is missing: the DOT text was written instead of the picture."""


def dot_program():
    """The path of Graphviz's `dot` program, or None when it is not installed.

    >>> from tinygrad_ops import viz
    >>> path = viz.dot_program()
    >>> path is None or path.endswith(("dot", "dot.exe"))
    True
    """
    return shutil.which("dot")


FORMATS = ("svg", "png", "pdf", "dot")


def render(root, path, format=None, **draw_options) -> Path:
    """Draw `root`'s graph (see `draw` for the options) and write it to `path`.

    `format` is "svg", "png", "pdf" or "dot" (default: from the file's suffix). Returns the
    path written. Without the `dot` program the DOT text is written next to `path` (with a
    .dot suffix) and `GraphvizNotFoundError` says where, and how to install Graphviz.

    >>> import tempfile, pathlib
    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> viz.render((x * x).sum(), folder / "square.dot").read_text().startswith("digraph")
    True
    """
    path = Path(path)
    if format is None:
        format = path.suffix.lstrip(".").lower() or "svg"
    if format == "gv":
        format = "dot"
    if format not in FORMATS:
        raise ValueError(f"format={format!r}: use one of {', '.join(FORMATS)}")
    if isinstance(root, graphviz.Digraph):
        if draw_options:
            raise TypeError(
                f"render() got a finished Digraph and draw options {sorted(draw_options)}: "
                "pass the tensor instead, or the options to draw()"
            )
        digraph = root
    else:
        digraph = draw(root, **draw_options)
    path.parent.mkdir(parents=True, exist_ok=True)
    if format == "dot":
        path.write_text(digraph.source, encoding="utf-8")
        return path
    if dot_program() is None:
        return _write_dot_instead(digraph, path, "the Graphviz `dot` program was not found")
    try:
        data = digraph.pipe(format=format)
    except graphviz.ExecutableNotFound:
        return _write_dot_instead(digraph, path, "the Graphviz `dot` program could not be run")
    temporary = path.with_name(path.name + ".partial")
    temporary.write_bytes(data)
    os.replace(temporary, path)  # a reader never sees half a picture
    return path


def _write_dot_instead(digraph, path, reason):
    dot_path = path.with_suffix(".dot")
    dot_path.write_text(digraph.source, encoding="utf-8")
    raise GraphvizNotFoundError(
        f"could not write {path}: {reason}. The graph was written as DOT text to {dot_path} "
        f"(render it later with `dot -T{path.suffix.lstrip('.') or 'svg'} {dot_path} -o "
        f"{path}`). {INSTALL_HINT}"
    )


# ----------------------------------------------------------------------------------------------
# Jupyter


def _tensor_mimebundle(tensor, include=None, exclude=None):
    """Jupyter's rich display of a Tensor: its text, and its graph when it has one."""
    bundle = {"text/plain": repr(tensor)}
    if tensor._ctx is not None and dot_program() is not None:
        bundle["image/svg+xml"] = draw(tensor).pipe(format="svg", encoding="utf-8")
    return bundle


def enable_notebook_display() -> None:
    """Make Jupyter show a Tensor that has a graph as its picture (with its text).

    The engine never imports viz, so this is opt-in: call it once in a notebook.
    `disable_notebook_display()` undoes it. A `draw(...)` result displays inline anyway.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> viz.enable_notebook_display()
    >>> hasattr(tg.Tensor, "_repr_mimebundle_")
    True
    >>> viz.disable_notebook_display()
    """
    from tinygrad_ops import Tensor

    Tensor._repr_mimebundle_ = _tensor_mimebundle


def disable_notebook_display() -> None:
    """Undo `enable_notebook_display`: Tensors display as text again.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> viz.enable_notebook_display()
    >>> viz.disable_notebook_display()
    >>> hasattr(tg.Tensor, "_repr_mimebundle_")
    False
    """
    from tinygrad_ops import Tensor

    if "_repr_mimebundle_" in Tensor.__dict__:
        del Tensor._repr_mimebundle_
