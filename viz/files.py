"""Writing pictures: `render` to svg/png/pdf/dot files, and finding Graphviz's `dot`.

Without the `dot` program a picture cannot be made, but its DOT text can: `render`
writes that instead and says how to install Graphviz.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import graphviz

from .dot import draw

INSTALL_HINT = (
    "Install Graphviz to get pictures: `sudo apt-get install graphviz` (Debian/Ubuntu), "
    "`brew install graphviz` (macOS), `conda install graphviz`, or see "
    "https://graphviz.org/download/ ; then run this again."
)


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
