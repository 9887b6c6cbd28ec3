"""Seeing autograd: the tape as text and as Graphviz pictures (installed as `tinygrad_ops.viz`).

The engine never imports this package; it reads the engine's tape (`tensor._ctx`,
`op.inputs`) and wraps the scheduler seam to record a backward pass.

>>> import tinygrad_ops as tg
>>> from tinygrad_ops import viz
>>> w = tg.Tensor([[0.5, -1.0]], requires_grad=True)
>>> loss = (w * w).sum()
>>> len(viz.trace(loss).ops)
2

Printing (`print_tape`, `trace`, `step_backward`), recording (`backward`) and the HTML page
work without the `graphviz` Python package; the pictures (`draw`, `render`, the notebook
display) import it when first used.
"""

import importlib

from . import examples
from .groups import ModuleCall, ModuleCalls, module_calls
from .html import HtmlPage, html
from .record import BackwardRecord, GradientInfo, RecordingScheduler, backward
from .step import step_backward
from .trace import Trace, print_tape, trace

# name -> the module that defines it; imported on first use, since it needs graphviz.
_DRAWING = {
    "INSTALL_HINT": "files",
    "GraphvizNotFoundError": "files",
    "dot_program": "files",
    "render": "files",
    "draw": "dot",
    "draw_program": "program",
    "enable_notebook_display": "notebook",
    "disable_notebook_display": "notebook",
}


def __getattr__(name):
    if name not in _DRAWING:
        raise AttributeError(f"module 'tinygrad_ops.viz' has no attribute {name!r}")
    try:
        module = importlib.import_module(f".{_DRAWING[name]}", __name__)
    except ImportError as error:
        raise ImportError(
            f"viz.{name} draws with the graphviz Python package, which is missing ({error}): "
            "pip install graphviz (or pip install 'tinygrad_ops[viz]'). Printing the tape "
            "(viz.print_tape, viz.step_backward) and viz.html work without it."
        ) from None
    value = getattr(module, name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


__all__ = [
    "INSTALL_HINT",
    "BackwardRecord",
    "GradientInfo",
    "GraphvizNotFoundError",
    "HtmlPage",
    "ModuleCall",
    "ModuleCalls",
    "RecordingScheduler",
    "Trace",
    "backward",
    "disable_notebook_display",
    "dot_program",
    "draw",
    "draw_program",
    "enable_notebook_display",
    "examples",
    "html",
    "module_calls",
    "print_tape",
    "render",
    "step_backward",
    "trace",
]
