"""viz without the graphviz package: the tape prints, backward records, pictures say why not."""

import subprocess
import sys

SCRIPT = """
import sys
sys.modules["graphviz"] = None  # as if it were not installed: importing it fails
import tinygrad_ops as tg
from tinygrad_ops import viz

w = tg.Tensor([[0.5, -1.0]], requires_grad=True)
viz.print_tape((w * w).sum())
record = viz.backward((w * w).sum(), retain_graph=True)
viz.step_backward((w * w).sum())
print("recorded", len(record))
try:
    viz.draw((w * w).sum())
except ImportError as error:
    print("draw:", error)
"""


def test_printing_the_tape_needs_no_graphviz():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "forward, in execution order" in result.stdout
    assert "recorded 2" in result.stdout
    assert "draw: viz.draw draws with the graphviz Python package" in result.stdout
    assert "pip install graphviz" in result.stdout
