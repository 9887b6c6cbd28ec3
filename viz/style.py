"""The look of a graph picture: colours, labels and node/edge attributes (no graphviz here).

Colours say what a tensor is:

    output        red, thick border     what backward starts from
    parameter     orange                a named leaf that requires grad (a weight)
    leaf          green                 an unnamed leaf that requires grad
    input         blue                  a tensor that needs no gradient (data, targets)
    constant      grey, small           a Python number or array operand
    intermediate  white                 made by an op
    op            purple, rounded       one recorded primitive

Labels are Graphviz's HTML-like labels (`<...>`), built from (text, attributes) lines.
"""

from __future__ import annotations

import html

import numpy as np

from .layout import ancestors
from .record import GradientInfo
from .trace import CONSTANT, INPUT, INTERMEDIATE, LEAF, OUTPUT, PARAMETER, shape_text

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


def parse_show(show) -> set:
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


TINY = 4  # a tensor of at most this many elements shows its numbers, signs included


def _number(value: float) -> str:
    return f"{value + 0.0:.3g}"  # + 0.0: no "-0"


def _statistics(values) -> str:
    """A tiny tensor's numbers ('-4', '[0.5, -1]'), else 'min … mean … max …'.

    >>> _statistics([-4.0]), _statistics([0.5, -1.0]), _statistics(range(10))
    ('-4', '[0.5, -1]', 'min 0 mean 4.5 max 9')
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return "empty"
    if values.size == 1:
        return _number(values.item())
    if values.size <= TINY:
        return "[" + ", ".join(_number(value) for value in values.ravel()) + "]"
    return f"min {_number(values.min())} mean {_number(values.mean())} max {_number(values.max())}"


def _norm_text(values) -> str:
    """'  ‖2.5‖' (the gradient's L2 norm) where the numbers are not all shown."""
    values = np.asarray(values, dtype=np.float64)
    if values.size <= TINY:
        return ""
    return f"  ‖{_number(float(np.sqrt(np.sum(values * values))))}‖"


def _info_text(info: GradientInfo) -> str:
    """What a recorded gradient shows: its numbers when tiny, else its statistics."""
    if info.values is not None and len(info.values) <= TINY:
        return _statistics(info.values)
    return (
        f"min {_number(info.minimum)} mean {_number(info.mean)} max {_number(info.maximum)}"
        f"  ‖{_number(info.norm)}‖"
    )


def _grad_text(info: GradientInfo) -> str:
    """An edge's gradient: '∇ -4', '∇ [0.5, -1]', or '∇ 2×3  ‖1.2‖' for a bigger one."""
    if info.values is not None and len(info.values) <= TINY:
        return f"∇ {_statistics(info.values)}"
    return f"∇ {shape_text(info.shape)}  ‖{_number(info.norm)}‖"


def html_label(lines) -> str:
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
        return f"const {shape_text(node.shape)}"
    return type(value).__name__


def tensor_attributes(node, flags, record):
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
        lines.append((f"{shape_text(node.shape)}  {node.dtype}", []))
    tensor = node.tensor
    if "value" in flags:
        lines.append((f"value {_statistics(tensor.data)}", [("size", 9)]))
    if "grad" in flags:
        info = record.tensor_grad(tensor) if record is not None else None
        if tensor.grad is not None and tensor.is_leaf:
            grad_values = tensor.grad.data
            text = f"grad {_statistics(grad_values)}{_norm_text(grad_values)}"
            lines.append((text, [("size", 9), ("color", STEP_COLOUR)]))
        elif info is not None:
            lines.append((f"grad {_info_text(info)}", [("size", 9), ("color", STEP_COLOUR)]))
    attributes = {
        # An empty HTML label ("<>") is a syntax error in DOT; an empty plain one is not.
        "label": html_label(lines) if lines else "",
        "shape": "box",
        "style": "filled",
        "fillcolor": fill,
        "color": border,
    }
    attributes.update(extra)
    return attributes


def op_attributes(op_node, step):
    name = op_node.op_name + (f" ({op_node.detail})" if op_node.detail else "")
    lines = [(name, [("b", None)])]
    if step is not None:
        lines = [(f"#{step}", [("b", None), ("color", STEP_COLOUR)]), *lines]
    attributes = dict(OP_STYLE)
    attributes["label"] = html_label(lines)
    return attributes


def _step_range(op_ids, steps):
    """'backward #4-#8' for the steps of the ops hidden in a collapsed node ('' if none)."""
    numbers = [steps[op_id] for op_id in op_ids if op_id in steps]
    if not numbers:
        return []
    low, high = min(numbers), max(numbers)
    text = f"backward #{low}" + (f"–#{high}" if high != low else "")
    return [(text, [("size", 9), ("color", STEP_COLOUR)])]


def edge_attributes(edge, graph, flags, record):
    attributes = {}
    lines = []
    if "shape" in flags:
        lines.append((shape_text(edge.shape), []))
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
        attributes["label"] = html_label(lines)
    return attributes


def calls_attributes(calls, folded, graph, call_of, steps):
    """One node for module calls: a collapsed call (`calls` is that one call), or the
    middle of a long run of calls folded (dashed, its ops not drawn)."""
    members = set(calls)
    inside = [op_id for op_id in graph.ops if members & set(ancestors(call_of.get(op_id)))]
    first, last = calls[0], calls[-1]
    name, ops = first.path or "(model)", f"{len(inside)} ops"
    if folded:
        kind = f"{first.type_name} calls #{first.call_index} … #{last.call_index}"
        name, ops = f"{name}  × {len(calls)}", f"{ops}, not drawn"
    else:
        kind = first.type_name + (f" call #{first.call_index}" if first.call_index else "")
    lines = [(name, [("b", None)]), (kind, []), (ops, [("size", 9), ("color", "#555555")])]
    return {
        "label": html_label(lines + _step_range(inside, steps)),
        "shape": "box3d",
        "style": "filled,dashed" if folded else "filled",
        "fillcolor": "#f0f0f0" if folded else "#e8eefc",
        "color": "#4a6fa5",
    }
