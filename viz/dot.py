"""`draw`: a traced graph as a `graphviz.Digraph` (layout, then style, then DOT).

The picture has a node per tensor (its name where known, its shape and dtype; optionally
value and gradient statistics) and a node per op, with edges labelled by the shape of
what flows along them; `style` says how each looks, `layout` what is drawn where.

With `backward=` every op is numbered in the order backward visits it; with a recorded
backward (`viz.backward(loss)` or a `RecordingScheduler`) the edges also show the gradient
that arrived along them (shape and norm), and scanned chain segments are drawn as one
highlighted cluster named after the scan. With `groups=` (from `viz.module_calls`) the
ops of each module call sit in one box; `depth=` collapses calls nested deeper than
that into a single node each. `max_nodes` keeps the nodes nearest the output.

This is the only module of viz that imports the `graphviz` package.
"""

from __future__ import annotations

import graphviz

from . import style
from .layout import RANK_PIXELS, ancestors, depth_and_width
from .layout import layout as make_layout
from .style import FONT, GROUP_COLOURS, SCAN_STYLE
from .trace import shape_text

RANKDIRS = ("auto", "LR", "TB", "RL", "BT")
# Pixels a rank takes and a node takes within its rank, top to bottom and left to right
# (measured on the README's examples at Graphviz's 96 dpi): rankdir="auto" picks the
# direction whose picture has the shorter longest side.
TB_RANK, TB_NODE = RANK_PIXELS, 126
LR_RANK, LR_NODE = 136, 59


class _Picture:
    """The display graph: what is drawn, before it becomes DOT."""

    def __init__(self):
        self.nodes = {}  # display id -> dict of graphviz attributes, in insertion order
        self.cluster_of = {}  # display id -> cluster key (innermost), or absent
        self.edges = []  # (source, target, attributes)


def draw(
    root,
    show="shape",
    rankdir="auto",
    max_nodes=400,
    backward=None,
    groups=None,
    depth=None,
    fold=3,
    compact="auto",
    title=None,
) -> graphviz.Digraph:
    """The graph that produced `root` as a `graphviz.Digraph` (displays inline in Jupyter).

    `show`: any of "shape", "value", "grad" joined by "|" (shape and dtype; min/mean/max of
    the values; min/mean/max and norm of the gradients, from `.grad` or a recorded backward).
    `rankdir`: "LR" (left to right), "TB" (top to bottom), or "auto": TB for a graph much
    deeper than it is wide (a chain of layers), LR otherwise, so it reads without zooming.
    `max_nodes`: draw at most this many nodes,
    those nearest the output (None for all); the rest become one "… more" node.
    `backward`: True numbers the ops in sequential backward order; a `BackwardRecord`
    (from `viz.backward(root)`) or a `RecordingScheduler` numbers them as that backward
    ran, labels edges with the gradients that flowed and draws scanned segments.
    `groups`: a `ModuleCalls` (from `viz.module_calls(model)`): one box per module call;
    `depth`: collapse calls nested deeper than `depth` into one node each; `fold`: of a
    module called many times in a row (an RNN cell), draw the first and last `fold` calls
    and one node for the rest (None draws every call). `compact`: leave out the nodes of
    intermediate tensors (ops connect directly, edges still show shapes and gradients);
    "auto" (the default) does so for a picture that would be taller than 2,000 px.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> picture = viz.draw((x * x).sum(), backward=True)
    >>> print(picture.source.splitlines()[0])
    digraph tinygrad_ops {
    """
    flags = style.parse_show(show)
    if rankdir not in RANKDIRS:
        raise ValueError(f"rankdir={rankdir!r}: use 'auto', 'LR', 'TB', 'RL' or 'BT'")
    shown = make_layout(root, backward, groups, depth, fold, compact, max_nodes)
    if rankdir == "auto":
        rankdir = _direction(*depth_and_width(shown))
    picture = _Picture()
    _add_nodes(picture, shown, flags)
    kept_edges = [
        item for item in shown.edges if item.source in shown.kept and item.target in shown.kept
    ]
    _add_copies(picture, shown)
    for item in kept_edges:
        record = None if item.merged else shown.record
        attributes = style.edge_attributes(item.edge, shown.graph, flags, record)
        picture.edges.append((item.source, item.target, attributes))
    if shown.dropped:
        _add_elided(picture, shown)
    return _to_digraph(picture, rankdir, title, shown.scan_titles)


def _direction(ranks, width):
    """'TB' or 'LR' for a graph of `ranks` ranks and at most `width` nodes on one.

    >>> _direction(20, 2), _direction(3, 12)
    ('TB', 'LR')
    """
    top_to_bottom = max(ranks * TB_RANK, width * TB_NODE)
    left_to_right = max(ranks * LR_RANK, width * LR_NODE)
    return "TB" if top_to_bottom <= left_to_right else "LR"


def _add_nodes(picture, shown, flags):
    """Node attributes, for kept nodes only (statistics cost time on big graphs)."""
    graph = shown.graph
    for node_id, display_id in shown.display_of.items():
        if display_id not in shown.kept or display_id in picture.nodes:
            continue
        if display_id in shown.folds:
            calls = shown.folds[display_id]
            attributes = style.calls_attributes(calls, True, graph, shown.call_of, shown.steps)
        elif display_id.startswith("call_"):
            calls = [shown.collapsed[display_id[len("call_") :]]]
            attributes = style.calls_attributes(calls, False, graph, shown.call_of, shown.steps)
        elif node_id in graph.ops:
            attributes = style.op_attributes(graph.ops[node_id], shown.steps.get(node_id))
        else:
            attributes = style.tensor_attributes(graph.tensors[node_id], flags, shown.record)
        picture.nodes[display_id] = attributes
        cluster = shown.cluster_of(node_id, display_id)
        if cluster is not None:
            picture.cluster_of[display_id] = cluster


def _add_elided(picture, shown):
    """One "… N more nodes" note standing for what max_nodes left out."""
    elided = "elided"
    picture.nodes[elided] = {
        "label": f"… {shown.dropped} more nodes",
        "shape": "note",
        "style": "filled",
        "fillcolor": "#eeeeee",
        "color": "#999999",
        "fontcolor": "#555555",
    }
    kept = shown.kept
    boundary = [item.target for item in shown.edges if item.source not in kept]
    for target in dict.fromkeys(boundary):  # each drawn node an edge crosses into, once
        if target in kept:
            picture.edges.append((elided, target, {"style": "dashed", "color": "#999999"}))


def _add_copies(picture, shown):
    """The small dashed copies of a shared leaf that the layout draws beside each use."""
    for copy_id, (source, _) in shown.copies.items():
        node = shown.graph.tensors[source]
        copy = style.tensor_attributes(node, set(), None)
        copy["label"] = graphviz.nohtml(node.name or shape_text(node.shape))
        copy["style"] = copy.get("style", "filled") + ",dashed"
        copy["fontsize"] = "8"
        copy["height"] = "0.2"
        picture.nodes[copy_id] = copy
        cluster = shown.cluster_of(source, copy_id)
        if cluster is not None:
            picture.cluster_of[copy_id] = cluster


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
    children = {}  # a call (None: the top) -> the calls drawn inside it
    for key in members:
        if key is not None and not isinstance(key, str):
            for call in ancestors(key):  # a call with members is drawn in all its ancestors
                children.setdefault(call.parent, set()).add(call)

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
