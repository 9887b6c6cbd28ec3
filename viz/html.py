"""`html(loss, path)`: the backward walk as one self-contained web page you step through.

The page holds the graph (laid out here, in Python: no `dot` is needed to view it), the
order in which the engine's backward visited the ops, and the gradients that flowed, all
as JSON inside the file, with a small script that draws it as SVG. No server, no network:
open the file, or show it inline in Jupyter (`HtmlPage._repr_html_` puts it in an iframe).

Nothing is re-derived: `backward` really runs, through viz's `RecordingScheduler`; the
steps are its `visit_order` and the numbers are its `GradientInfo`s (the statistics of every
gradient, and the numbers themselves for small ones). A chain segment that a scan scheduler
computed at once is drawn as one node; its levels come from running the engine's own scan
function (`scheduler.scans.scan_from_prefix`) on intervals of positions instead of
Jacobians, so each level shows which partial products one vectorised call combines.
"""

from __future__ import annotations

import html as html_escape
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from tinygrad_ops import Tensor

from .groups import ModuleCalls
from .html_layout import layered_layout
from .html_scan import scan_levels
from .layout import layout
from .record import GradientInfo, RecordingScheduler
from .rules import labelled_rule, missing_rule, rule
from .trace import CONSTANT, Trace, shape_text, trace

# A page draws at most this many nodes (those nearest the loss, and one "… N more" node);
# a browser opens it in a second or two. Group calls (groups=, depth=) to see all of it.
PAGE_NODES = 1000
ELIDED = "elided"
BADGE_PAD = 16  # pixels around a step badge's caption


@dataclass(repr=False)
class HtmlPage:
    """A written page: `text` is the HTML, `record` the `BackwardRecord` it shows, `path`
    where it was written (or None); Jupyter shows it inline (in an iframe)."""

    text: str
    record: object
    path: Path | None = None

    def _repr_html_(self):
        source = html_escape.escape(self.text, quote=True)
        return (
            f'<iframe srcdoc="{source}" style="width: 100%; height: 640px; border: 1px solid '
            '#ccc" sandbox="allow-scripts"></iframe>'
        )

    def __repr__(self):
        where = f" at {self.path}" if self.path else ""
        return f"<HtmlPage{where}: {len(self.text)} characters>"


def _number(value):
    """A float for JSON (which has no NaN or infinity: those travel as text)."""
    value = float(value)
    return value if np.isfinite(value) else str(value)


def _summary(info, dtype=None):
    """A `GradientInfo` (of a gradient, or of a forward value) as JSON: shape, statistics,
    the numbers of a small one (None where none was recorded)."""
    if info is None:
        return None
    summary = {
        "shape": shape_text(info.shape),
        "dtype": dtype,
        "min": _number(info.minimum),
        "mean": _number(info.mean),
        "max": _number(info.maximum),
        "norm": _number(info.norm),
    }
    if info.values is not None:
        summary["values"] = [_number(value) for value in info.values]
    return summary


def _value_summary(array):
    """A forward value's summary (its shape and dtype only, where it is not numbers)."""
    values = np.asarray(array)
    if not values.size or values.dtype.kind not in "biuf":
        return {"shape": shape_text(values.shape), "dtype": str(values.dtype)}
    with np.errstate(invalid="ignore", over="ignore"):  # -inf and inf average to nan
        return _summary(GradientInfo(values), str(values.dtype))


def _label(node):
    return f"{node.id} {node.name}" if node.name else node.id


def _operand_text(node):
    """A trace node as an operand: its label, or a constant's value or shape."""
    if node.kind != CONSTANT:
        return _label(node)
    if np.ndim(node.value) == 0:
        return f"{float(node.value):.6g}"
    return f"const {shape_text(np.shape(node.value))}"


class _Page:
    """The page's nodes, edges and steps, drawn from the display model (`layout.Layout`):
    the page folds, collapses and copies what the pictures do. It draws an op's output in
    the op's node and a scanned segment as one node, and leaves constants to the panel."""

    def __init__(self, shown):
        self.shown = shown
        self.graph = graph = shown.graph
        self.record = shown.record
        self.producer = {op.output: op_id for op_id, op in graph.ops.items()}
        self.operand_edges = {}  # op id -> its operands' edges, in operand order
        for edge in graph.edges:
            if edge.target in graph.ops:
                self.operand_edges.setdefault(edge.target, []).append(edge)
        self.scans = {}  # the layout's key of a scanned segment -> its ScannedSegment
        for number, segment in enumerate(self.record.scanned_segments):
            self.scans[f"cluster_scan_{number}"] = segment
        self.nodes = {}  # page id -> node JSON
        self.copied = {source for source, _ in shown.copies.values()}
        self.alias = {}  # copy id -> the copy that stands for it

    def page_id(self, display_id):
        """The page node that shows the layout's `display_id` (None: a constant)."""
        shown, graph = self.shown, self.graph
        if display_id in self.copied:
            return None  # drawn as its copies, beside each use
        if display_id in self.alias:
            return self.alias[display_id]
        if display_id not in shown.kept:
            return ELIDED
        if display_id in graph.ops:
            return shown.scan_of.get(display_id, display_id)  # a scan's ops: one node
        node = graph.tensors.get(display_id)
        if node is None:
            return display_id  # a call, a fold or a copy
        if node.kind == CONSTANT:
            return None
        if display_id in self.producer:  # an op's output: drawn in the op's node
            return self.page_id(shown.display_of[self.producer[display_id]])
        return display_id

    def add_nodes(self):
        shown, graph = self.shown, self.graph
        for node_id in graph.node_order:
            display_id = shown.display_of.get(node_id)
            page_id = None if display_id is None else self.page_id(display_id)
            if page_id is None:
                continue
            if page_id not in self.nodes:
                self.nodes[page_id] = self.node_json(page_id, node_id)
            if node_id in graph.ops and page_id != node_id:
                self.add_member(self.nodes[page_id], node_id)
        # A leaf's copies beside uses that the page draws as one node (the ops of a scan)
        # are one copy.
        first_copy = {}
        for copy_id, (source, target) in shown.copies.items():
            key = (source, self.page_id(target))
            if key in first_copy:
                self.alias[copy_id] = first_copy[key]
                continue
            first_copy[key] = copy_id
            self.nodes[copy_id] = dict(self.leaf_json(source), id=copy_id, copy_of=source)

    def node_json(self, page_id, node_id):
        shown = self.shown
        if page_id == ELIDED:
            label = f"… {shown.dropped} more nodes"
            return {"id": ELIDED, "kind": "elided", "label": label, "members": []}
        if page_id in self.scans:
            return self.scan_json(page_id)
        if page_id in shown.folds or page_id.startswith("call_"):
            calls = shown.folds.get(page_id) or [shown.collapsed[page_id[len("call_") :]]]
            label = shown.fold_title(page_id) if page_id in shown.folds else calls[0].title
            ids = [call.id for call in calls]
            return {"id": page_id, "kind": "call", "label": label, "calls": ids, "members": []}
        if page_id in self.graph.ops:
            return self.op_json(page_id, self.graph.ops[page_id])
        return self.leaf_json(page_id)

    def add_member(self, node, op_id):
        """An op shown inside a collapsed call, a fold or a scan."""
        node["members"].append(op_id)
        if node["kind"] == "call":
            op_node = self.graph.ops[op_id]
            step = self.record.step(op_node.op)
            line = f"{op_id} {op_node.op_name}" + (f" (step {step})" if step else "")
            node.setdefault("ops", []).append(line)
            node["sub"] = f"{len(node['members'])} ops"
        elif node["kind"] == "scan":
            node["sub"] = f"{node['steps']} steps, {len(node['members'])} ops"

    def scan_json(self, key):
        segment = self.scans[key]
        anchors = [self.graph.node_id(tensor) for tensor in segment.tensors]
        anchors = [anchor for anchor in anchors if anchor is not None]
        steps = len(anchors) - 1
        return {
            "id": key,
            "kind": "scan",
            "label": f"{segment.scheduler} scan",
            "steps": steps,
            "anchors": [_label(self.graph.tensors[anchor]) for anchor in anchors],
            "members": [],
            "levels": scan_levels(segment.method, steps, segment.block_size),
        }

    def op_json(self, op_id, op_node):
        graph, record, op = self.graph, self.record, op_node.op
        output = graph.tensors[op_node.output]
        operands = []
        # The trace's edges, not op.inputs: after backward the inputs are released husks.
        for edge in self.operand_edges.get(op_id, ()):
            source = graph.tensors[edge.source]
            operands.append(
                {
                    "label": _operand_text(source),
                    "value": _value_summary(
                        source.value if source.kind == CONSTANT else source.tensor.data
                    ),
                    "grad": _summary(record.edge_grad(op, edge.index)),
                }
            )
        name = op_node.op_name + (f"[{op_node.detail}]" if op_node.detail else "")
        return {
            "id": op_id,
            "kind": "output" if op_node.output in graph.root_ids else "op",
            "label": name,
            "sub": f"{_label(output)} · {shape_text(output.shape)}",
            "rule": rule(op) or missing_rule(op),
            "labelled_rule": labelled_rule(
                op, [operand["label"] for operand in operands], output=_label(output)
            ),
            "output": _label(output),
            "value": _value_summary(output.tensor.data),
            "grad": _summary(record.tensor_grad(output.tensor)),
            "operands": operands,
            "step": record.step(op),
        }

    def leaf_json(self, node_id):
        """A tensor no recorded op made (a parameter, an input)."""
        node = self.graph.tensors[node_id]
        return {
            "id": node_id,
            "kind": node.kind,
            "label": node.name or node_id,
            "sub": f"{node_id} · {shape_text(node.shape)}",
            "value": _value_summary(node.tensor.data),
            "grad": _summary(self.record.tensor_grad(node.tensor)),
        }

    def edges(self):
        """One edge per operand slot between drawn nodes; one for all the edges a merged
        node (a call, a fold, a scan) stands for, with no gradient on it (one of theirs
        would mislead). `carries`: whether a gradient came back along it."""
        edges, seen = [], set()
        for item in self.shown.edges:
            source, target = self.page_id(item.source), self.page_id(item.target)
            if source is None or source == target or item.edge.target not in self.graph.ops:
                continue
            merged = item.merged or self.is_merged(source) or self.is_merged(target)
            key = (source, target) if merged else (source, target, item.edge.index)
            if key in seen:
                continue
            seen.add(key)
            op = self.graph.ops[item.edge.target].op
            info = self.record.edge_grad(op, item.edge.index)
            edges.append(
                {
                    "from": source,
                    "to": target,
                    "shape": shape_text(item.edge.shape),
                    "grad": None if merged else _summary(info),
                    "carries": info is not None,
                    "step": self.record.step(op),
                }
            )
        return edges

    def is_merged(self, page_id):
        return self.nodes[page_id]["kind"] in ("call", "scan", "elided")

    def steps(self):
        """The backward walk: one entry per op visit, in the order the engine ran them."""
        op_ids = [self.graph.op_ids.get(id(op)) for op in self.record.visit_order]
        display_of = self.shown.display_of
        return [{"op": op_id, "node": self.page_id(display_of[op_id])} for op_id in op_ids if op_id]


def _node_width(node):
    """Pixels for a node's two lines of text (about 7 px a character at 12 px, 6 at 10 px)
    and, on its right, the badge of its backward steps."""
    text = max(7 * len(node["label"]), 6 * len(node.get("sub", "")))
    return text + 24 + node["badge_width"]


def _badge(steps):
    """The caption of a node's backward steps: '3', or '31–40' for a merged node."""
    if not steps:
        return ""
    return str(steps[0]) if len(steps) == 1 else f"{steps[0]}–{steps[-1]}"


def page_data(root, record, groups=None, depth=None, fold=3, max_nodes=PAGE_NODES) -> dict:
    """The page's JSON: nodes with positions, edges, the backward steps, the scans.

    `root` is the loss, or its `viz.trace` taken before backward (which releases the
    values a graph held, unless retain_graph=True: the trace keeps them for the page)."""
    graph = root if isinstance(root, Trace) else trace(root)
    shown = layout(graph, record, groups, depth, fold, compact=True, max_nodes=max_nodes)
    page = _Page(shown)
    page.add_nodes()
    edges, steps = page.edges(), page.steps()
    numbers = {}
    for number, step in enumerate(steps, start=1):
        numbers.setdefault(step["node"], []).append(number)
    nodes = list(page.nodes.values())
    for node in nodes:
        node["badge"] = _badge(numbers.get(node["id"]))
        node["badge_width"] = BADGE_PAD + 7 * len(node["badge"]) if node["badge"] else 0
    widths = {node["id"]: _node_width(node) for node in nodes}
    positions = layered_layout(widths, [(edge["from"], edge["to"]) for edge in edges])
    for node in nodes:
        node["x"], node["y"] = positions[node["id"]]
        node["w"] = widths[node["id"]]
    return {
        "title": f"backward of {_label(graph.tensors[graph.root_ids[0]])}",
        "scheduler": record.scheduler_name,
        "nodes": nodes,
        "edges": edges,
        "steps": steps,
        "display": {node: page.page_id(drawn) for node, drawn in shown.display_of.items()},
    }


def page_text(data) -> str:
    """The self-contained page of `page_data`'s JSON: viz/page.html with the style
    (page.css), the script (page.js) and the data written into it."""
    files = resources.files(__package__)
    template = (files / "page.html").read_text(encoding="utf-8")
    text = template.replace("__STYLE__", (files / "page.css").read_text(encoding="utf-8"))
    text = text.replace("__SCRIPT__", (files / "page.js").read_text(encoding="utf-8"))
    text = text.replace("__TITLE__", html_escape.escape(data["title"]))
    # "</" could close the script element early; JSON allows "<\/" for it.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return text.replace("__DATA__", payload)


def html(
    loss,
    path=None,
    scheduler=None,
    groups=None,
    depth=None,
    fold=3,
    gradient=None,
    retain_graph=False,
    max_nodes=PAGE_NODES,
) -> HtmlPage:
    """Run `loss.backward()` for real and write the walk as a page you step through.

    `scheduler`: any name or object `backward(scheduler=...)` takes. `groups`: the
    `ModuleCalls` of `viz.module_calls(model)`; with `depth`, module calls nested `depth`
    deep are drawn as one node each (large models stay readable), and of a module called
    many times in a row (an RNN cell) all but the first and last `fold` calls are one node
    (None draws every call), as the pictures fold them (one display model, `viz/layout.py`).
    `max_nodes`: the nodes nearest the loss that are drawn (None for all); the rest are
    one "… N more nodes" node. Leaves' `.grad` are written as by a plain `backward()`.
    Returns an `HtmlPage` (Jupyter shows it inline);
    with `path`, the page is also written there.

    >>> import tinygrad_ops as tg
    >>> from tinygrad_ops import viz
    >>> x = tg.Tensor([1.0, -2.0], requires_grad=True)
    >>> page = viz.html((x * x).sum())
    >>> "<svg" in page.text, x.grad.numpy()
    (True, array([ 2., -4.], dtype=float32))
    """
    if not isinstance(loss, Tensor):
        raise TypeError(f"html() takes a Tensor, got {type(loss).__name__}")
    if groups is not None and not isinstance(groups, ModuleCalls):
        raise TypeError(
            f"groups= takes the ModuleCalls from viz.module_calls(model), got "
            f"{type(groups).__name__}"
        )
    if depth is not None and depth < 0:
        raise ValueError(f"depth={depth}: give 0 or more (or None to draw every op)")
    graph = trace(loss)  # before backward, which may free the values the graph held
    recorder = RecordingScheduler(scheduler)
    loss.backward(gradient, retain_graph=retain_graph, scheduler=recorder)
    data = page_data(graph, recorder.record, groups, depth, fold, max_nodes)
    text = page_text(data)
    if path is not None:
        path = Path(path)
        path.write_text(text, encoding="utf-8")
    return HtmlPage(text, recorder.record, path)
