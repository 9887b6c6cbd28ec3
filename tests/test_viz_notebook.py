"""The notebook display of viz's pictures (viz/notebook.py): opt in, and off again."""

from helpers import small_graph

import tinygrad_ops as tg
from tinygrad_ops import viz


def test_notebook_display_is_opt_in():
    x, _w, loss = small_graph()
    assert not hasattr(tg.Tensor, "_repr_mimebundle_")
    viz.enable_notebook_display()
    try:
        bundle = loss._repr_mimebundle_()
        assert bundle["text/plain"] == repr(loss)
        if viz.dot_program() is not None:
            assert bundle["image/svg+xml"].lstrip().startswith("<?xml")
        assert "image/svg+xml" not in x._repr_mimebundle_()  # a leaf: text only
    finally:
        viz.disable_notebook_display()
    assert not hasattr(tg.Tensor, "_repr_mimebundle_")
    assert hasattr(viz.draw(loss), "_repr_mimebundle_")  # graphviz's own inline display
