"""Jupyter: a Tensor that has a graph displays as its picture (opt-in)."""

from __future__ import annotations

from tinygrad_ops import Tensor

from .dot import draw
from .files import dot_program


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
    if "_repr_mimebundle_" in Tensor.__dict__:
        del Tensor._repr_mimebundle_
