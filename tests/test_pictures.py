"""Every picture the docs show exists and is made by docs/images/make_pictures.py."""

import importlib.util
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"
DOCUMENTS = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").glob("*.md")]
PICTURE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def _make_pictures():
    spec = importlib.util.spec_from_file_location("make_pictures", IMAGES / "make_pictures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _make_pictures()
DECLARED = {name for files in MAKE.PICTURES.values() for name in files} | set(MAKE.MEASURED)


def _shown():
    """(document, picture path) for every picture a document shows."""
    for document in DOCUMENTS:
        for link in PICTURE.findall(document.read_text(encoding="utf-8")):
            yield document, (document.parent / link).resolve()


def test_the_docs_show_pictures():
    assert len({path for _, path in _shown()}) >= 10


@pytest.mark.parametrize(("document", "picture"), list(_shown()), ids=lambda item: item.name)
def test_each_shown_picture_exists_and_is_made_by_the_script(document, picture):
    assert picture.is_file(), f"{document.name} shows {picture}, which does not exist"
    assert picture.parent == IMAGES, f"{document.name} shows {picture}, outside docs/images"
    assert picture.name in DECLARED, f"{picture.name} is not made by make_pictures.py"


# The graph pictures, made afresh: each maker writes exactly the files it declares.
GRAPH_MAKERS = [
    maker for maker in MAKE.PICTURES if maker.__name__ not in ("demo_training", "html_walk")
]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
@pytest.mark.parametrize("maker", GRAPH_MAKERS, ids=lambda maker: maker.__name__)
def test_each_graph_maker_writes_its_pictures(maker, tmp_path, capsys):
    maker(tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(MAKE.PICTURES[maker])


def test_no_picture_in_docs_images_is_left_unmade():
    pictures = {path.name for path in IMAGES.iterdir() if path.suffix in (".png", ".svg")}
    assert pictures <= DECLARED, sorted(pictures - DECLARED)
