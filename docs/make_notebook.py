"""Write docs/tutorial.ipynb from docs/tutorial.md, the one source of the tutorial.

    python docs/make_notebook.py          # from the repository root; commit the result

Each ```python block becomes a code cell, and the ```text block right after it (what the
code prints) becomes that cell's output, so the notebook opens showing what a run gives.
Everything else becomes markdown cells, with every picture the text shows embedded in its
cell as an attachment (the notebook needs no files beside it). The tests run the notebook
in a Jupyter kernel and compare every cell's output with the one written here
(tests/test_notebook.py), and fail when this file's output differs from the committed
notebook.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
SOURCE = DOCS / "tutorial.md"
NOTEBOOK = DOCS / "tutorial.ipynb"
COMMAND = "python docs/make_notebook.py"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n?", re.S | re.M)
PICTURE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
MIME = {".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".gif": "image/gif"}


def _lines(text):
    """A cell's source as nbformat stores it: lines that keep their newlines."""
    return text.splitlines(keepends=True)


def _markdown_cell(text):
    """A markdown cell; each local picture becomes an attachment (`attachment:NAME`)."""
    attachments = {}

    def embed(match):
        alt, target = match.groups()
        path = DOCS / target
        if target.startswith(("http://", "https://")) or path.suffix not in MIME:
            return match.group(0)
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        attachments[path.name] = {MIME[path.suffix]: data}
        return f"![{alt}](attachment:{path.name})"

    cell = {"cell_type": "markdown", "metadata": {}, "source": _lines(PICTURE.sub(embed, text))}
    if attachments:
        cell["attachments"] = attachments
    return cell


def _code_cell(code, printed):
    outputs = []
    if printed:
        outputs.append({"name": "stdout", "output_type": "stream", "text": _lines(printed)})
    source = code[:-1] if code.endswith("\n") else code
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": outputs,
        "source": _lines(source),
    }


def cells(text):
    """The notebook's cells, in the order of `text` (the tutorial's markdown)."""
    result = []
    fences = list(FENCE.finditer(text))
    position = 0
    skip = set()
    for index, fence in enumerate(fences):
        if index in skip or fence.group(1) != "python":
            continue
        if text[position : fence.start()].strip():
            result.append(_markdown_cell(text[position : fence.start()].strip("\n") + "\n"))
        printed = None
        end = fence.end()
        following = fences[index + 1] if index + 1 < len(fences) else None
        if following and following.group(1) == "text" and not text[end : following.start()].strip():
            printed = following.group(2)
            skip.add(index + 1)
            end = following.end()
        result.append(_code_cell(fence.group(2), printed))
        position = end
    if text[position:].strip():
        result.append(_markdown_cell(text[position:].strip("\n") + "\n"))
    return result


def render() -> str:
    """The notebook's JSON text (nbformat 4), as this script writes it."""
    notebook = {
        "cells": cells(SOURCE.read_text(encoding="utf-8")),
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    for number, cell in enumerate(notebook["cells"]):
        cell["id"] = f"cell-{number}"  # stable ids: regenerating changes nothing unchanged
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def main():
    NOTEBOOK.write_text(render(), encoding="utf-8")
    print(f"wrote {NOTEBOOK}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
