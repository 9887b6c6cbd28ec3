"""docs/tutorial.ipynb is what docs/make_notebook.py makes of docs/tutorial.md, and it runs
top to bottom in a real Jupyter kernel, printing in every cell what the tutorial says."""

import importlib.util
import json
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
spec = importlib.util.spec_from_file_location("make_notebook", DOCS / "make_notebook.py")
make_notebook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_notebook)


def stdout_of(cell):
    return "".join(
        "".join(output["text"])
        for output in cell["outputs"]
        if output["output_type"] == "stream" and output["name"] == "stdout"
    )


def test_the_notebook_is_current():
    assert make_notebook.NOTEBOOK.read_text(encoding="utf-8") == make_notebook.render(), (
        f"docs/tutorial.ipynb is stale: run `{make_notebook.COMMAND}` from the repository "
        "root and commit it"
    )


def test_every_code_block_is_a_cell_and_every_picture_is_inline():
    text = make_notebook.SOURCE.read_text(encoding="utf-8")
    notebook = json.loads(make_notebook.render())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert len(code) == text.count("```python\n")
    attached = {name for cell in notebook["cells"] for name in cell.get("attachments", {})}
    pictures = {Path(target).name for _, target in make_notebook.PICTURE.findall(text)}
    assert pictures
    assert attached == pictures
    markdown = "".join("".join(cell["source"]) for cell in notebook["cells"])
    assert "](images/" not in markdown  # no picture left pointing at a file


def test_the_notebook_runs_in_a_jupyter_kernel(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's path migration
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # the kernel's debugger note
    notebook = nbformat.reads(make_notebook.render(), as_version=4)
    written = [stdout_of(cell) for cell in notebook.cells if cell.cell_type == "code"]
    assert sum(bool(text) for text in written) >= 20  # most cells show what they print
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    )
    client.execute()  # raises CellExecutionError, naming the cell, if any cell raises
    for index, cell in enumerate(c for c in notebook.cells if c.cell_type == "code"):
        assert stdout_of(cell) == written[index], (
            f"code cell {index} printed\n{stdout_of(cell)}\nbut the tutorial says\n"
            f"{written[index]}\n(its source:\n{cell.source})"
        )
