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
from pathlib import Path

import numpy as np

from tinygrad_ops import Tensor

from .groups import ModuleCalls
from .html_layout import layered_layout
from .html_page import PAGE_TEMPLATE
from .html_scan import scan_levels
from .record import SMALL_SIZE, RecordingScheduler
from .rules import labelled_rule
from .rules import rule as _rule
from .trace import CONSTANT, OUTPUT, Trace, _shape_text, trace

SHARE_LIMIT = 3  # a leaf with more uses than this is drawn once per use
_DRAWN_ONCE = ("op", "output", "call", "scan")  # what made a value is never copied


class HtmlPage:
    """A written page: `text` is the HTML, `record` the `BackwardRecord` it shows, `path`
    where it was written (or None); Jupyter shows it inline (in an iframe)."""

    def __init__(self, text, record, path=None):
        self.text = text
        self.record = record
        self.path = path

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


def _value_summary(array):
    """Shape, dtype and statistics of a forward value (the numbers when it is small)."""
    values = np.asarray(array)
    summary = {"shape": _shape_text(values.shape), "dtype": str(values.dtype)}
    if values.size and values.dtype.kind in "biuf":
        as_float = values.astype(np.float64)
        summary["min"] = _number(as_float.min())
        with np.errstate(invalid="ignore", over="ignore"):  # -inf and inf average to nan
            summary["mean"] = _number(as_float.mean())
        summary["max"] = _number(as_float.max())
        if values.size <= SMALL_SIZE:
            summary["values"] = [_number(value) for value in as_float.ravel()]
    return summary


def _grad_summary(info):
    """A recorded `GradientInfo` as JSON (None where no gradient was recorded)."""
    if info is None:
        return None
    summary = {
        "shape": _shape_text(info.shape),
        "min": _number(info.minimum),
        "mean": _number(info.mean),
        "max": _number(info.maximum),
        "norm": _number(info.norm),
    }
    if info.values is not None:
        summary["values"] = [_number(value) for value in info.values]
    return summary


def _label(node):
    return f"{node.id} {node.name}" if node.name else node.id


def _operand_text(node):
    """A trace node as an operand: its label, or a constant's value or shape."""
    if node.kind != CONSTANT:
        return _label(node)
    if np.ndim(node.value) == 0:
        return f"{float(node.value):.6g}"
    return f"const {_shape_text(np.shape(node.value))}"


class _Builder:
    """Turns a trace and a backward record into the page's JSON (see `html`)."""

    def __init__(self, graph, record, groups, depth, fold=None):
        self.graph = graph
        self.record = record
        self.groups = groups
        self.depth = depth
        self.folded = self.folded_calls(fold)  # call id -> (fold node id, its title)
        self.operand_edges = {}  # op id -> its operands' edges, in operand order
        for edge in graph.edges:
            if edge.target in graph.ops:
                self.operand_edges.setdefault(edge.target, []).append(edge)
        self.producer = {op.output: op_id for op_id, op in graph.ops.items()}
        self.display_of = {}  # op or leaf id -> the id of the node that shows it
        self.nodes = {}  # display id -> node JSON

    def visible_call(self, op_id):
        """The collapsed module call that hides `op_id` (None when it is drawn itself)."""
        if self.groups is None or self.depth is None:
            return None
        call = self.groups.call_of(self.graph.ops[op_id].op)
        if call is None or call.depth < self.depth:
            return None
        while call.depth > self.depth:
            call = call.parent
        return call

    def folded_calls(self, fold):
        """Runs of calls of one module at the collapsed depth (an RNN cell called 100
        times): all but the first and last `fold` calls of a run longer than 2 fold + 1
        are drawn as one node, as the static pictures fold them."""
        if self.groups is None or self.depth is None or fold is None:
            return {}
        runs = {}
        for call in self.groups.calls:
            if call.depth == self.depth:
                key = (call.path, call.type_name, id(call.parent))
                runs.setdefault(key, []).append(call)
        folded = {}
        for run in runs.values():
            if len(run) <= 2 * fold + 1:
                continue
            middle = run[fold : len(run) - fold]
            title = f"{middle[0].title} … #{middle[-1].call_index} ({len(middle)} calls folded)"
            for call in middle:
                folded[call.id] = (f"fold_{middle[0].id}", title)
        return folded

    def scanned_members(self, anchors):
        """The ops of a scanned segment: walking back from its top anchor to its lowest,
        every op met that the walk did not visit (the scan computed its gradients)."""
        lowest, top = anchors[0], anchors[-1]
        members, seen, stack = [], {lowest}, [top]
        while stack:
            tensor_id = stack.pop()
            op_id = self.producer.get(tensor_id)
            if tensor_id in seen or op_id is None:
                continue
            seen.add(tensor_id)
            if self.record.step(self.graph.ops[op_id].op) is None:
                members.append(op_id)
            stack.extend(self.graph.ops[op_id].inputs)
        return members

    def add_scans(self):
        for number, segment in enumerate(self.record.scanned_segments):
            anchors = [self.graph.node_id(tensor) for tensor in segment.tensors]
            anchors = [anchor for anchor in anchors if anchor is not None]
            members = self.scanned_members(anchors)
            if not members:
                continue
            scan_id = f"scan{number}"
            for op_id in members:
                self.display_of[op_id] = scan_id
            steps = len(anchors) - 1
            self.nodes[scan_id] = {
                "id": scan_id,
                "kind": "scan",
                "label": f"{segment.scheduler} scan",
                "sub": f"{steps} steps, {len(members)} ops",
                "anchors": [_label(self.graph.tensors[anchor]) for anchor in anchors],
                "members": members,
                "levels": scan_levels(segment.method, steps, segment.block_size),
            }

    def add_ops(self):
        for op_id, op_node in self.graph.ops.items():
            if op_id in self.display_of:
                continue
            call = self.visible_call(op_id)
            if call is not None:
                call_id, title = self.folded.get(call.id, (f"call_{call.id}", call.title))
                self.display_of[op_id] = call_id
                node = self.nodes.setdefault(
                    call_id, {"id": call_id, "kind": "call", "label": title, "members": []}
                )
                node["members"].append(op_id)
                step = self.record.step(op_node.op)
                node.setdefault("ops", []).append(
                    f"{op_id} {op_node.op_name}" + (f" (step {step})" if step else "")
                )
                node["sub"] = f"{len(node['members'])} ops"
                continue
            self.display_of[op_id] = op_id
            self.nodes[op_id] = self.op_json(op_id, op_node)

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
                    "grad": _grad_summary(record.edge_grad(op, edge.index)),
                }
            )
        name = op_node.op_name + (f"[{op_node.detail}]" if op_node.detail else "")
        return {
            "id": op_id,
            "kind": "output" if op_node.output in graph.root_ids else "op",
            "label": name,
            "sub": f"{_label(output)} · {_shape_text(output.shape)}",
            "rule": _rule(op),
            "labelled_rule": labelled_rule(
                op, [operand["label"] for operand in operands], output=_label(output)
            ),
            "output": _label(output),
            "value": _value_summary(output.tensor.data),
            "grad": _grad_summary(record.tensor_grad(output.tensor)),
            "operands": operands,
            "step": record.step(op),
        }

    def add_leaves(self):
        """Tensors no recorded op made (parameters, inputs); constants are not drawn. A
        leaf used only inside one folded run of calls (its x_t) folds into it."""
        uses = {}
        for edge in self.graph.edges:
            if edge.target in self.display_of:
                uses.setdefault(edge.source, set()).add(self.display_of[edge.target])
        for node_id, node in self.graph.tensors.items():
            if node_id in self.producer or node.kind == CONSTANT:
                continue
            consumers = uses.get(node_id, set())
            only = next(iter(consumers)) if len(consumers) == 1 else ""
            if only.startswith("fold_") and node.kind != OUTPUT:
                self.display_of[node_id] = only
                continue
            self.display_of[node_id] = node_id
            self.nodes[node_id] = {
                "id": node_id,
                "kind": node.kind,
                "label": node.name or node_id,
                "sub": f"{node_id} · {_shape_text(node.shape)}",
                "value": _value_summary(node.tensor.data),
                "grad": _grad_summary(self.record.tensor_grad(node.tensor)),
            }

    def edges(self):
        """One edge per operand slot between drawn nodes; edges inside a collapsed node go.
        A leaf used more than `SHARE_LIMIT` times (a weight shared by every RNN step) is
        drawn once beside each use, so that no edge crosses the whole picture."""
        edges, seen = [], set()
        for edge in self.graph.edges:
            if edge.target not in self.graph.ops:
                continue  # op -> its output: the op node shows its output
            source_id = self.producer.get(edge.source, edge.source)
            if source_id not in self.display_of:
                continue  # a constant
            source, target = self.display_of[source_id], self.display_of[edge.target]
            if source == target:
                continue
            op = self.graph.ops[edge.target].op
            merged = target != edge.target or source != source_id
            key = (source, target) if merged else (source, target, edge.index)
            if key in seen:
                continue
            seen.add(key)
            grad = None if merged else _grad_summary(self.record.edge_grad(op, edge.index))
            edges.append(
                {
                    "from": source,
                    "to": target,
                    "shape": _shape_text(edge.shape),
                    "grad": grad,
                    "step": self.record.step(op),
                }
            )
        return self.copy_shared_leaves(edges)

    def copy_shared_leaves(self, edges):
        uses = {}
        for edge in edges:
            uses[edge["from"]] = uses.get(edge["from"], 0) + 1
        for edge in edges:
            source = edge["from"]
            if uses[source] <= SHARE_LIMIT or self.nodes[source]["kind"] in _DRAWN_ONCE:
                continue
            copy_id = f"{source}~{edge['to']}"
            self.nodes[copy_id] = dict(self.nodes[source], id=copy_id, copy_of=source)
            edge["from"] = copy_id
        for source, count in uses.items():
            if count > SHARE_LIMIT and self.nodes[source]["kind"] not in _DRAWN_ONCE:
                del self.nodes[source]  # only its copies are drawn
        return edges

    def steps(self):
        """The backward walk: one entry per op visit, in the order the engine ran them."""
        steps = []
        for op in self.record.visit_order:
            op_id = self.graph.op_ids.get(id(op))
            if op_id is not None:
                steps.append({"op": op_id, "node": self.display_of[op_id]})
        return steps


def _node_width(node):
    """Pixels for a node's two lines of text (the page draws them at about 7 px a character)."""
    return 7 * max(len(node["label"]), len(node.get("sub", ""))) + 24


def page_data(root, record, groups=None, depth=None, fold=3) -> dict:
    """The page's JSON: nodes with positions, edges, the backward steps, the scans.

    `root` is the loss, or its `viz.trace` taken before backward (which releases the
    values a graph held, unless retain_graph=True: the trace keeps them for the page)."""
    graph = root if isinstance(root, Trace) else trace(root)
    builder = _Builder(graph, record, groups, depth, fold)
    builder.add_scans()
    builder.add_ops()
    builder.add_leaves()
    edges = builder.edges()
    nodes = list(builder.nodes.values())
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
        "steps": builder.steps(),
        "display": builder.display_of,
    }


def html(
    loss,
    path=None,
    scheduler=None,
    groups=None,
    depth=None,
    fold=3,
    gradient=None,
    retain_graph=False,
) -> HtmlPage:
    """Run `loss.backward()` for real and write the walk as a page you step through.

    `scheduler`: any name or object `backward(scheduler=...)` takes. `groups`: the
    `ModuleCalls` of `viz.module_calls(model)`; with `depth`, module calls nested `depth`
    deep are drawn as one node each (large models stay readable), and of a module called
    many times in a row (an RNN cell) all but the first and last `fold` calls are one node
    (None draws every call). Leaves' `.grad` are
    written as by a plain `backward()`. Returns an `HtmlPage` (Jupyter shows it inline);
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
    data = page_data(graph, recorder.record, groups, depth, fold)
    # "</" could close the script element early; JSON allows "<\/" for it.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    text = PAGE_TEMPLATE.replace("__TITLE__", html_escape.escape(data["title"]))
    text = text.replace("__DATA__", payload)
    if path is not None:
        path = Path(path)
        path.write_text(text, encoding="utf-8")
    return HtmlPage(text, recorder.record, path)
