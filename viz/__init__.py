"""Seeing autograd: the tape as text and as Graphviz pictures (installed as `tinygrad_ops.viz`).

The engine never imports this package; it reads the engine's tape (`tensor._ctx`,
`op.inputs`) and wraps the scheduler seam to record a backward pass.

>>> import tinygrad_ops as tg
>>> from tinygrad_ops import viz
>>> w = tg.Tensor([[0.5, -1.0]], requires_grad=True)
>>> loss = (w * w).sum()
>>> len(viz.trace(loss).ops)
2
"""

from . import examples
from .draw import (
    INSTALL_HINT,
    GraphvizNotFoundError,
    disable_notebook_display,
    dot_program,
    draw,
    enable_notebook_display,
    render,
)
from .groups import ModuleCall, ModuleCalls, module_calls
from .html import HtmlPage, html
from .record import BackwardRecord, GradientInfo, RecordingScheduler, backward
from .step import step_backward
from .trace import Trace, print_tape, trace

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
    "enable_notebook_display",
    "examples",
    "html",
    "module_calls",
    "print_tape",
    "render",
    "step_backward",
    "trace",
]
